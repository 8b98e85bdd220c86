#include "status/diagnosis_row.h"

#include <cmath>
#include <optional>
#include <vector>

#include "status/html_text.h"
#include "status/lag_chart.h"
#include "status/severity.h"

namespace lagsight::status {
namespace {

using analysis::Cause;
using analysis::DiagnosisFinding;

// One line per partition, "<prefix>topic/partition", in a div of `css_class`; with the member
// that holds it where the finding names one: "held by client-7 on /10.0.0.5 (member id)".
void AppendPartitionLines(std::string& out, const char* css_class, const char* prefix,
                          const std::vector<kafka::TopicPartition>& partitions,
                          const std::vector<analysis::PartitionHolder>& holders = {}) {
  for (const kafka::TopicPartition& tp : partitions) {
    out += "<div class=\"";
    out += css_class;
    out += "\">";
    out += prefix;
    AppendEscaped(out, tp.topic);
    out += '/';
    AppendInteger(out, tp.partition);
    for (const analysis::PartitionHolder& holder : holders) {
      if (holder.partition != tp) continue;
      out += ", held by ";
      AppendEscaped(out, holder.client_id.empty() ? std::string_view("a client without id")
                                                  : std::string_view(holder.client_id));
      out += " on ";
      AppendEscaped(out, holder.host);
      out += " (";
      AppendEscaped(out, holder.member_id);
      out += ')';
    }
    out += "</div>";
  }
}

// `<tr class="severity" data-...>`: the pair's names as attributes, for tools reading the page.
void AppendRowStart(std::string& out, const DiagnosisFinding& finding, Severity severity) {
  out += "<tr class=\"";
  out += SeverityName(severity);
  out += '"';
  AppendAttribute(out, "data-kafka-cluster", finding.kafka_cluster);
  AppendAttribute(out, "data-group", finding.group);
  AppendAttribute(out, "data-job-id", finding.job_id);
  AppendAttribute(out, "data-job-name", finding.job_name);
  AppendAttribute(out, "data-cause", analysis::CauseName(finding.cause));
  out += '>';
}

// The cause's badge with its explanation as tooltip, then what the operator checks next.
// For a pair that is behind: the vertex that holds the job back, and what would catch it up
// (the parallelism for diagnosis.catch_up_target, or why none can be given).
void AppendBottleneckLines(std::string& out, const DiagnosisFinding& finding) {
  if (!finding.bottleneck || !finding.catch_up_plan) return;
  const analysis::Bottleneck& bottleneck = *finding.bottleneck;
  const analysis::CatchUpPlan& plan = *finding.catch_up_plan;
  out += "<div class=\"sub bottleneck\">held back by <b>";
  AppendEscaped(out, bottleneck.vertex_name);
  out += "</b>: busy ";
  AppendInteger(out, std::llround(bottleneck.busy_ms_max / 10));
  out += " %, parallelism ";
  AppendInteger(out, bottleneck.parallelism);
  if (bottleneck.skewed) out += ", <span class=\"stale\">skewed</span>";
  out += "</div><div class=\"sub catch-up-plan\">";
  if (plan.parallelism) {
    out += "parallelism ";
    AppendInteger(out, *plan.parallelism);
    out += " catches up within the target";
  } else {
    out += "no parallelism to recommend: ";
    AppendEscaped(out, plan.unknown);
  }
  if (bottleneck.capacity_per_second) {
    out += "; at today's: ";
    if (plan.catch_up_seconds_now) {
      AppendDuration(out, *plan.catch_up_seconds_now);
    } else {
      out += "never";
    }
  }
  out += "</div>";
}

void AppendCauseCell(std::string& out, const DiagnosisFinding& finding, Severity severity) {
  out += "<td><span class=\"cause\" title=\"";
  out += SeverityName(severity);
  out += ": ";
  out += Explanation(finding.cause);
  out += "\">";
  out += analysis::CauseName(finding.cause);
  out += "</span>";
  // The other causes whose rules hold too (the active one is the first in precedence), and
  // the partitions partition_stuck names: what the operator checks next.
  bool first_other = true;
  for (const Cause other : finding.evidence) {
    if (other == finding.cause) continue;
    out += first_other ? "<div class=\"sub\">also: " : ", ";
    out += analysis::CauseName(other);
    first_other = false;
  }
  if (!first_other) out += "</div>";
  AppendPartitionLines(out, "sub", "stuck: ", finding.stuck_partitions, finding.holders);
  AppendPartitionLines(out, "sub",
                       "position beyond the log end: ", finding.beyond_log_end_partitions,
                       finding.holders);
  if (finding.largest_lag_partition) {
    const std::string prefix = "largest lag (" + std::to_string(finding.largest_lag) +
                               (finding.largest_lag == 1 ? " record): " : " records): ");
    AppendPartitionLines(out, "sub", prefix.c_str(), {*finding.largest_lag_partition},
                         finding.holders);
  }
  AppendBottleneckLines(out, finding);
  out += "</td>";
}

// How long the cause holds, with the moment it began as tooltip.
void AppendSinceCell(std::string& out, const DiagnosisFinding& finding, double now) {
  out += "<td class=\"since\" title=\"since ";
  AppendUtc(out, finding.since);
  out += "\">";
  AppendDuration(out, now - finding.since);
  out += "</td>";
}

void AppendGroupCell(std::string& out, const DiagnosisFinding& finding) {
  out += "<td><div class=\"name group\">";
  if (finding.group.empty()) {
    out += "<i>no group found</i>";
  } else {
    AppendEscaped(out, finding.group);
  }
  out += "</div><div class=\"sub\">";
  AppendEscaped(out, finding.kafka_cluster);
  out += "</div></td>";
}

// The job's name and id, and how it reads the pair's partitions: those no subtask reads, and
// subtasks without any.
void AppendJobCell(std::string& out, const DiagnosisFinding& finding) {
  out += "<td>";
  if (finding.job_id.empty()) {
    out += "<span class=\"sub\">Kafka only</span>";
  } else {
    out += "<div class=\"name job\">";
    AppendEscaped(out, finding.job_name);
    out += "</div><div class=\"id\">";
    AppendEscaped(out, finding.job_id);
    out += "</div>";
    AppendPartitionLines(out, "sub unread", "not read: ", finding.unread_partitions);
    if (finding.idle_subtasks > 0) {
      // Readers without a split hold the watermark back unless the job declares idleness.
      out += "<div class=\"sub idle\">idle readers: ";
      AppendInteger(out, finding.idle_subtasks);
      out += " of ";
      AppendInteger(out, finding.source_subtasks);
      out += " subtasks hold no partition</div>";
    }
  }
  out += "</td>";
}

void AppendOptionalDuration(std::string& out, const std::optional<double>& seconds) {
  if (seconds) {
    AppendDuration(out, *seconds);
  } else {
    out += kNone;
  }
}

// Kafka and Flink lag in records and in time, and when the backlog is gone at its pace.
void AppendLagCells(std::string& out, const DiagnosisFinding& finding) {
  out += "<td class=\"num kafka-lag\">";
  AppendOptionalCount(out, finding.kafka_lag);
  out += "</td><td class=\"num flink-lag\">";
  AppendOptionalCount(out, finding.flink_lag);
  out += "</td><td class=\"num lag-seconds\">";
  AppendOptionalDuration(out, finding.max_lag_seconds);
  out += "</td><td class=\"num flink-lag-seconds\">";
  AppendOptionalDuration(out, finding.flink_max_lag_seconds);
  out += "</td><td class=\"num catch-up\">";
  if (!finding.catch_up_seconds) {
    out += kNone;
  } else if (std::isinf(*finding.catch_up_seconds)) {
    out += "<span class=\"stale\" title=\"the backlog is not shrinking\">never</span>";
  } else {
    AppendDuration(out, *finding.catch_up_seconds);
  }
  out += "</td>";
}

// "age / interval", the age marked stale where the diagnosis would call checkpoints failing.
void AppendCheckpointCell(std::string& out, const DiagnosisFinding& finding) {
  out += "<td class=\"checkpoint\">";
  if (finding.checkpoint_interval_seconds) {
    const double interval = *finding.checkpoint_interval_seconds;
    if (finding.checkpoint_age_seconds) {
      const double age = *finding.checkpoint_age_seconds;
      // The diagnosis calls checkpoints failing from twice the interval on.
      const bool stale = interval > 0 && age > 2 * interval;
      out += stale ? "<span class=\"stale\">" : "<span>";
      AppendDuration(out, age);
      out += "</span>";
    } else {
      out += "none yet";
    }
    out += " / ";
    AppendDuration(out, interval);
  } else {
    out += "<span class=\"sub\">no checkpointing</span>";
  }
  out += "</td>";
}

}  // namespace

void AppendDiagnosisRow(std::string& out, const DiagnosisFinding& finding, double now) {
  const Severity severity = SeverityOf(finding.cause);
  AppendRowStart(out, finding, severity);
  AppendCauseCell(out, finding, severity);
  AppendSinceCell(out, finding, now);
  AppendGroupCell(out, finding);
  AppendJobCell(out, finding);
  AppendLagCells(out, finding);
  AppendCheckpointCell(out, finding);
  out += "<td>";
  AppendChart(out, finding.history, !finding.group.empty());
  out += "</td></tr>\n";
}

}  // namespace lagsight::status
