#include "status/status_page.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <tuple>

namespace lagsight::status {
namespace {

using analysis::Cause;
using analysis::DiagnosisFinding;

// The chart's drawing area in SVG user units (= CSS pixels at this size).
constexpr int kChartWidth = 160;
constexpr int kChartHeight = 36;
constexpr double kChartPadding = 2;

// Small, because 1000 rows must stay quick to render; colours readable for the common
// red-green deficiency too (severity is also spelled out in the badge text).
constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:10px 20px;display:flex;gap:16px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:20px;margin:0}header a{color:#9ecbff}header .meta{color:#c9d1d9;font-size:13px}
main{padding:12px 20px}
h2{font-size:15px;margin:16px 0 6px}
ul.sources{list-style:none;padding:0;margin:0;display:flex;gap:8px;flex-wrap:wrap}
ul.sources li{background:#fff;border:1px solid #d0d7de;border-left:6px solid #8c959f;border-radius:4px;padding:4px 10px}
ul.sources li.up{border-left-color:#1a7f37}ul.sources li.down{border-left-color:#cf222e}
ul.sources li.waiting{border-left-color:#9a6700}
.summary{margin:4px 0 8px}
.empty{background:#fff;border:1px dashed #8c959f;border-radius:4px;padding:24px;text-align:center;color:#57606a;font-size:16px}
table{border-collapse:collapse;background:#fff;border:1px solid #d0d7de;width:100%}
th,td{padding:4px 8px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:middle}
th{background:#f6f8fa;font-weight:600;font-size:12px;color:#57606a;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.since,td.checkpoint{white-space:nowrap}
.name{font-weight:600;overflow-wrap:anywhere}.sub{color:#57606a;font-size:12px;overflow-wrap:anywhere}
.id{font:11px ui-monospace,SFMono-Regular,Menlo,monospace;color:#57606a}
.cause{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;font-weight:600;white-space:nowrap}
tr.critical .cause{background:#cf222e;color:#fff}tr.warning .cause{background:#bf8700;color:#fff}
tr.neutral .cause{background:#ddf4ff;color:#0a3069}tr.healthy .cause{background:#dafbe1;color:#116329}
tr.critical{background:#fff5f5}tr.warning{background:#fffbea}
.stale{color:#cf222e;font-weight:600}
svg.chart{display:block;background:#f6f8fa;border:1px solid #eaeef2}
svg.chart polyline{fill:none;stroke-width:1.5;stroke-linejoin:round}
svg.chart polyline.flink{stroke-width:3;stroke-opacity:.55}
.kafka{stroke:#0969da;color:#0969da}.flink{stroke:#d1242f;color:#d1242f}
.chartcap{font-size:11px;color:#57606a;white-space:nowrap}
.legend span{font-weight:600}
footer{padding:8px 20px 20px;color:#57606a;font-size:12px}
)";

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kCritical:
      return "critical";
    case Severity::kWarning:
      return "warning";
    case Severity::kNeutral:
      return "neutral";
    case Severity::kHealthy:
      return "healthy";
  }
  return "neutral";
}

// One line per cause for the badge's tooltip; the README's runbook has the rest.
const char* Explanation(Cause cause) {
  switch (cause) {
    case Cause::kHealthy:
      return "Nothing wrong: lag is small or shrinking.";
    case Cause::kReallyBehind:
      return "Lag is above the threshold and growing: the consumer cannot keep up.";
    case Cause::kCheckpointsFailing:
      return "Checkpoints fail or stall, so the job commits nothing and a restart would rewind.";
    case Cause::kCommitsFailing:
      return "Checkpoints complete but the offset commits to Kafka fail.";
    case Cause::kLongCheckpointInterval:
      return "Kafka-side lag sawtooths with the checkpoint interval while the job is not behind.";
    case Cause::kRestoredFromOldPosition:
      return "The job restored to an older position and has not caught up yet.";
    case Cause::kOffsetsMissing:
      return "The job commits no offsets lagsight can find for this group.";
    case Cause::kSharedGroupId:
      return "Another committer moves this group's offsets as well.";
    case Cause::kOffsetsExpiring:
      return "The group has no members and its offsets expire soon under the broker's retention.";
    case Cause::kClusterMismatch:
      return "Two Kafka clusters are mixed up: the bootstrap addresses answer with different "
             "cluster ids, or the job's position lies beyond the log end lagsight sees (the job "
             "reads another cluster).";
    case Cause::kPartitionsUncommitted:
      return "Some partitions of a consumed topic have records but no committed offset.";
    case Cause::kStalled:
      return "Commits stopped while records keep arriving.";
    case Cause::kRewinding:
      return "The group's committed offsets went backwards.";
    case Cause::kJobGone:
      return "The job vanished from Flink while its group falls behind.";
    case Cause::kRestartLoop:
      return "The job restarts again and again.";
    case Cause::kRestarting:
      return "The job is restarting (failover): its sources read nothing meanwhile.";
    case Cause::kPartitionStuck:
      return "One partition's position stands still with records waiting, while the others move.";
    case Cause::kSteadyBacklog:
      return "The backlog matters and keeps pace with the input but never shrinks.";
    case Cause::kReplaying:
      return "The job went back on purpose (fresh start, offset reset) and is catching up.";
  }
  return "";
}

void AppendEscaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

void AppendInteger(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

// 1234567 -> "1,234,567": lag counts are read by people, and digits in groups are read faster.
void AppendGrouped(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  const std::string_view digits(buffer, end - buffer);
  const std::size_t sign = digits.front() == '-' ? 1 : 0;
  out.append(digits.substr(0, sign));
  const std::size_t count = digits.size() - sign;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0 && (count - i) % 3 == 0) out += ',';
    out += digits[sign + i];
  }
}

void AppendFixed(std::string& out, double value, int precision) {
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, precision);
  if (result.ec == std::errc()) out.append(buffer, result.ptr);
}

// "0.4 s", "42 s", "5m 03s", "2h 05m", "3d 04h": precise when small, short when large.
void AppendDuration(std::string& out, double seconds) {
  if (!std::isfinite(seconds)) {
    out += "?";
    return;
  }
  if (seconds < 0) seconds = 0;
  if (seconds < 10) {
    AppendFixed(out, seconds, 1);
    out += " s";
    return;
  }
  const auto whole = static_cast<std::int64_t>(seconds);
  const auto two_digits = [&out](std::int64_t value) {
    if (value < 10) out += '0';
    AppendInteger(out, value);
  };
  if (whole < 60) {
    AppendInteger(out, whole);
    out += " s";
  } else if (whole < 3600) {
    AppendInteger(out, whole / 60);
    out += "m ";
    two_digits(whole % 60);
    out += 's';
  } else if (whole < 86400) {
    AppendInteger(out, whole / 3600);
    out += "h ";
    two_digits(whole / 60 % 60);
    out += 'm';
  } else {
    AppendInteger(out, whole / 86400);
    out += "d ";
    two_digits(whole / 3600 % 24);
    out += 'h';
  }
}

void AppendUtc(std::string& out, double unix_seconds) {
  const auto seconds = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) {
    out += "?";
    return;
  }
  char buffer[32];
  const std::size_t length = std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
  out.append(buffer, length);
}

constexpr std::string_view kNone = "&ndash;";

// `kafka_side`: false for a job without a group, whose history holds no Kafka-side lag.
void AppendChart(std::string& out, const std::vector<analysis::LagPoint>& history,
                 bool kafka_side) {
  std::int64_t max = 0;
  bool any_flink = false;
  for (const analysis::LagPoint& point : history) {
    if (kafka_side) max = std::max(max, point.kafka_lag);
    if (point.flink_lag) {
      any_flink = true;
      max = std::max(max, *point.flink_lag);
    }
  }
  if (history.empty() || (!kafka_side && !any_flink)) {
    out += kNone;
    return;
  }
  const double first = history.front().time;
  const double span = history.back().time - first;
  const double usable_height = kChartHeight - 2 * kChartPadding;
  const auto x_of = [&](double time) { return (time - first) / span * kChartWidth; };
  const auto y_of = [&](std::int64_t lag) {
    const double share = max > 0 ? static_cast<double>(lag) / static_cast<double>(max) : 0;
    return kChartHeight - kChartPadding - share * usable_height;
  };
  // A single sample is drawn as a flat line across the chart, so it is visible at all.
  const auto append_line = [&](const char* css_class, auto value_of) {
    out += "<polyline class=\"";
    out += css_class;
    out += "\" points=\"";
    bool first_point = true;
    for (const analysis::LagPoint& point : history) {
      const std::optional<std::int64_t> value = value_of(point);
      if (!value) continue;
      if (!first_point) out += ' ';
      first_point = false;
      AppendFixed(out, span > 0 ? x_of(point.time) : 0, 1);
      out += ',';
      AppendFixed(out, y_of(*value), 1);
      if (span <= 0) {
        out += ' ';
        AppendInteger(out, kChartWidth);
        out += ',';
        AppendFixed(out, y_of(*value), 1);
      }
    }
    out += "\"/>";
  };
  out += "<svg class=\"chart\" width=\"";
  AppendInteger(out, kChartWidth);
  out += "\" height=\"";
  AppendInteger(out, kChartHeight);
  out += "\" viewBox=\"0 0 ";
  AppendInteger(out, kChartWidth);
  out += ' ';
  AppendInteger(out, kChartHeight);
  out += "\" role=\"img\"><title>";
  out += kafka_side && any_flink ? "Kafka-side and Flink-side"
         : kafka_side            ? "Kafka-side"
                                 : "Flink-side";
  out += " lag (records) over the last ";
  AppendDuration(out, span);
  out += "</title>";
  // The Flink line under the Kafka one, wider and lighter: where they are equal both still show.
  if (any_flink) {
    append_line("flink", [](const analysis::LagPoint& p) { return p.flink_lag; });
  }
  if (kafka_side) {
    append_line("kafka", [](const analysis::LagPoint& p) -> std::optional<std::int64_t> {
      return p.kafka_lag;
    });
  }
  out += "</svg><div class=\"chartcap\">max <span class=\"chart-max\">";
  AppendGrouped(out, max);
  out += "</span> &middot; ";
  AppendDuration(out, span);
  out += "</div>";
}

void AppendOptionalCount(std::string& out, const std::optional<std::int64_t>& value) {
  if (value) {
    AppendGrouped(out, *value);
  } else {
    out += kNone;
  }
}

void AppendAttribute(std::string& out, std::string_view name, std::string_view value) {
  out += ' ';
  out += name;
  out += "=\"";
  AppendEscaped(out, value);
  out += '"';
}

// One line per partition, "<prefix>topic/partition", in a div of `css_class`.
void AppendPartitionLines(std::string& out, const char* css_class, const char* prefix,
                          const std::vector<kafka::TopicPartition>& partitions) {
  for (const kafka::TopicPartition& tp : partitions) {
    out += "<div class=\"";
    out += css_class;
    out += "\">";
    out += prefix;
    AppendEscaped(out, tp.topic);
    out += '/';
    AppendInteger(out, tp.partition);
    out += "</div>";
  }
}

void AppendRow(std::string& out, const DiagnosisFinding& finding, double now) {
  const Severity severity = SeverityOf(finding.cause);
  const char* cause = analysis::CauseName(finding.cause);
  out += "<tr class=\"";
  out += SeverityName(severity);
  out += '"';
  AppendAttribute(out, "data-kafka-cluster", finding.kafka_cluster);
  AppendAttribute(out, "data-group", finding.group);
  AppendAttribute(out, "data-job-id", finding.job_id);
  AppendAttribute(out, "data-job-name", finding.job_name);
  AppendAttribute(out, "data-cause", cause);
  out += "><td><span class=\"cause\" title=\"";
  out += SeverityName(severity);
  out += ": ";
  out += Explanation(finding.cause);
  out += "\">";
  out += cause;
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
  AppendPartitionLines(out, "sub", "stuck: ", finding.stuck_partitions);
  AppendPartitionLines(out, "sub",
                       "position beyond the log end: ", finding.beyond_log_end_partitions);
  out += "</td><td class=\"since\" title=\"since ";
  AppendUtc(out, finding.since);
  out += "\">";
  AppendDuration(out, now - finding.since);
  out += "</td><td><div class=\"name group\">";
  if (finding.group.empty()) {
    out += "<i>no group found</i>";
  } else {
    AppendEscaped(out, finding.group);
  }
  out += "</div><div class=\"sub\">";
  AppendEscaped(out, finding.kafka_cluster);
  out += "</div></td><td>";
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
  out += "</td><td class=\"num kafka-lag\">";
  AppendOptionalCount(out, finding.kafka_lag);
  out += "</td><td class=\"num flink-lag\">";
  AppendOptionalCount(out, finding.flink_lag);
  out += "</td><td class=\"num lag-seconds\">";
  if (finding.max_lag_seconds) {
    AppendDuration(out, *finding.max_lag_seconds);
  } else {
    out += kNone;
  }
  out += "</td><td class=\"num flink-lag-seconds\">";
  if (finding.flink_max_lag_seconds) {
    AppendDuration(out, *finding.flink_max_lag_seconds);
  } else {
    out += kNone;
  }
  out += "</td><td class=\"num catch-up\">";
  if (!finding.catch_up_seconds) {
    out += kNone;
  } else if (std::isinf(*finding.catch_up_seconds)) {
    out += "<span class=\"stale\" title=\"the backlog is not shrinking\">never</span>";
  } else {
    AppendDuration(out, *finding.catch_up_seconds);
  }
  out += "</td><td class=\"checkpoint\">";
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
  out += "</td><td>";
  AppendChart(out, finding.history, !finding.group.empty());
  out += "</td></tr>\n";
}

const char* KindName(SourceStatus::Kind kind) {
  switch (kind) {
    case SourceStatus::Kind::kKafka:
      return "kafka";
    case SourceStatus::Kind::kFlink:
      return "flink";
    case SourceStatus::Kind::kStore:
      return "store";
  }
  return "source";
}

void AppendSources(std::string& out, const std::vector<SourceStatus>& sources, double now) {
  out += "<h2>Sources</h2><ul class=\"sources\">";
  for (const SourceStatus& source : sources) {
    out += "<li class=\"";
    out += !source.polled ? "waiting" : source.up ? "up" : "down";
    out += "\">";
    out += KindName(source.kind);
    out += " <b>";
    AppendEscaped(out, source.name);
    out += "</b>: ";
    if (!source.polled) {
      out += "waiting for the first poll";
    } else if (source.up) {
      out += "up, polled ";
      AppendDuration(out, now - source.last_success.value_or(now));
      out += " ago";
    } else {
      out += "<b>down</b>";
      if (!source.last_error.empty()) {
        out += " &mdash; ";
        AppendEscaped(out, source.last_error);
      }
      out += source.last_success ? " (last good poll " : " (never polled successfully)";
      if (source.last_success) {
        AppendDuration(out, now - *source.last_success);
        out += " ago)";
      }
    }
    out += "</li>";
  }
  if (sources.empty()) out += "<li>none configured</li>";
  out += "</ul>";
}

void AppendEmpty(std::string& out, std::string_view message) {
  out += "<div class=\"empty\">";
  out += message;
  out += "</div>";
}

}  // namespace

Severity SeverityOf(Cause cause) {
  switch (cause) {
    case Cause::kHealthy:
      return Severity::kHealthy;
    case Cause::kLongCheckpointInterval:
    case Cause::kReplaying:
      // Kafka tooling looks alarming, the job is fine: the very case lagsight exists for.
      return Severity::kNeutral;
    case Cause::kReallyBehind:
    case Cause::kCheckpointsFailing:
    case Cause::kClusterMismatch:
    case Cause::kJobGone:
    case Cause::kRestartLoop:
    case Cause::kPartitionStuck:
      return Severity::kCritical;
    case Cause::kRestarting:
    case Cause::kSteadyBacklog:
    case Cause::kCommitsFailing:
    case Cause::kRestoredFromOldPosition:
    case Cause::kOffsetsMissing:
    case Cause::kSharedGroupId:
    case Cause::kOffsetsExpiring:
    case Cause::kPartitionsUncommitted:
    case Cause::kStalled:
    case Cause::kRewinding:
      return Severity::kWarning;
  }
  return Severity::kWarning;
}

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEscaped(out, text);
  return out;
}

GzippedText RenderStatusPageGzip(const analysis::Findings& findings,
                                 const std::vector<SourceStatus>& sources, std::string_view version,
                                 double now) {
  std::vector<const DiagnosisFinding*> rows;
  rows.reserve(findings.diagnosis.size());
  int counts[4] = {0, 0, 0, 0};
  for (const DiagnosisFinding& finding : findings.diagnosis) {
    rows.push_back(&finding);
    ++counts[static_cast<int>(SeverityOf(finding.cause))];
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    const Severity sa = SeverityOf(a->cause);
    const Severity sb = SeverityOf(b->cause);
    if (sa != sb) return sa < sb;
    return std::tie(a->kafka_cluster, a->group, a->job_name, a->job_id) <
           std::tie(b->kafka_cluster, b->group, b->job_name, b->job_id);
  });

  // Compressed a piece at a time between rows: reserved whole, the page took 2,600 bytes a pair
  // (52 MB at 20,000 groups) at the peak of every render.
  GzipWriter writer;
  std::string& out = writer.text();
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"15\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>";
  if (counts[0] + counts[1] > 0) {
    AppendInteger(out, counts[0] + counts[1]);
    out += counts[0] + counts[1] == 1 ? " problem" : " problems";
    out += " &middot; ";
  }
  out += "lagsight</title><style>";
  out += kStyle;
  out += "</style></head><body><header><h1>lagsight</h1><span class=\"meta\">";
  AppendEscaped(out, version);
  out += " &middot; as of ";
  AppendUtc(out, now);
  out +=
      " &middot; reloads every 15 s</span><span class=\"meta\"><a href=\"metrics\">/metrics</a> "
      "<a href=\"healthz\">/healthz</a> <a href=\"readyz\">/readyz</a></span></header><main>";
  AppendSources(out, sources, now);

  out += "<h2>Job &harr; group diagnosis</h2>";
  const bool any_polled = std::any_of(sources.begin(), sources.end(),
                                      [](const SourceStatus& source) { return source.polled; });
  const bool any_kafka_up = std::any_of(sources.begin(), sources.end(), [](const auto& source) {
    return source.kind == SourceStatus::Kind::kKafka && source.up;
  });
  if (sources.empty()) {
    AppendEmpty(out, "No sources configured.");
  } else if (!any_polled) {
    AppendEmpty(out, "Waiting for the first poll&hellip;");
  } else if (rows.empty() && !any_kafka_up) {
    AppendEmpty(out, "No Kafka cluster is up: nothing to diagnose.");
  } else if (rows.empty()) {
    AppendEmpty(out, "No groups: no consumer group or Flink job found yet.");
  } else {
    out += "<p class=\"summary\">";
    static constexpr const char* kCountNames[4] = {"critical", "warning", "neutral", "healthy"};
    for (int i = 0; i < 4; ++i) {
      if (i > 0) out += " &middot; ";
      out += "<span class=\"count-";
      out += kCountNames[i];
      out += "\">";
      AppendInteger(out, counts[i]);
      out += "</span> ";
      out += kCountNames[i];
    }
    out +=
        "<span class=\"legend\"> &nbsp; chart: <span class=\"kafka\">&#9473; Kafka-side "
        "lag</span> <span class=\"flink\">&#9473; Flink-side lag</span></span></p>"
        "<table><thead><tr><th>cause</th><th>for</th><th>group / Kafka cluster</th>"
        "<th>Flink job</th><th title=\"records between the group's committed offsets and the log "
        "end, as Kafka's tools show\">Kafka lag</th><th title=\"records between the job's own "
        "position and the log end\">Flink lag</th><th title=\"age of the oldest record the group "
        "has not consumed\">Kafka lag (time)</th><th title=\"age of the job's next record, as of "
        "when Flink took its position\">Flink lag (time)</th><th title=\"when the backlog (the "
        "job's own, else the group's) reaches 0 at its pace over the diagnosis window\">catch "
        "up in</th><th>checkpoint age / interval</th>"
        "<th>lag over time (records)</th></tr></thead><tbody>\n";
    for (const DiagnosisFinding* finding : rows) {
      AppendRow(out, *finding, now);
      writer.CompressIfFull();
    }
    out += "</tbody></table>";
  }
  out +=
      "</main><footer>Kafka lag is what Kafka's tools show; a Flink job commits only on "
      "checkpoints, so Flink lag is the job's real position. See the README's runbook per "
      "cause.</footer></body></html>\n";
  return std::move(writer).Finish();
}

std::string RenderStatusPage(const analysis::Findings& findings,
                             const std::vector<SourceStatus>& sources, std::string_view version,
                             double now) {
  return Gunzip(RenderStatusPageGzip(findings, sources, version, now).bytes);
}

}  // namespace lagsight::status
