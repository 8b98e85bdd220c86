#include "status/status_page.h"

#include <algorithm>
#include <array>
#include <tuple>

#include "status/diagnosis_row.h"
#include "status/html_text.h"

namespace lagsight::status {
namespace {

using analysis::DiagnosisFinding;

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

// Each configured source with its health: up and when last polled, or down and why.
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

// The findings in the page's order, problems first, most severe first, and how many of each
// severity there are.
struct DiagnosisRows {
  std::vector<const DiagnosisFinding*> rows;
  std::array<int, 4> counts{};  // by Severity
};

DiagnosisRows SortedBySeverity(const std::vector<DiagnosisFinding>& diagnosis) {
  DiagnosisRows sorted;
  sorted.rows.reserve(diagnosis.size());
  for (const DiagnosisFinding& finding : diagnosis) {
    sorted.rows.push_back(&finding);
    ++sorted.counts[static_cast<int>(SeverityOf(finding.cause))];
  }
  std::stable_sort(sorted.rows.begin(), sorted.rows.end(), [](const auto* a, const auto* b) {
    const Severity sa = SeverityOf(a->cause);
    const Severity sb = SeverityOf(b->cause);
    if (sa != sb) return sa < sb;
    return std::tie(a->kafka_cluster, a->group, a->job_name, a->job_id) <
           std::tie(b->kafka_cluster, b->group, b->job_name, b->job_id);
  });
  return sorted;
}

// The document's head (the title counts the problems) and the page's header bar.
void AppendHead(std::string& out, int problems, std::string_view version, double now) {
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"15\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>";
  if (problems > 0) {
    AppendInteger(out, problems);
    out += problems == 1 ? " problem" : " problems";
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
}

// Instead of an empty table, what the page waits for; nullptr when there are rows to show.
const char* EmptyDiagnosisMessage(const std::vector<SourceStatus>& sources, bool no_rows) {
  const bool any_polled = std::any_of(sources.begin(), sources.end(),
                                      [](const SourceStatus& source) { return source.polled; });
  const bool any_kafka_up = std::any_of(sources.begin(), sources.end(), [](const auto& source) {
    return source.kind == SourceStatus::Kind::kKafka && source.up;
  });
  if (sources.empty()) return "No sources configured.";
  if (!any_polled) return "Waiting for the first poll&hellip;";
  if (no_rows && !any_kafka_up) return "No Kafka cluster is up: nothing to diagnose.";
  if (no_rows) return "No groups: no consumer group or Flink job found yet.";
  return nullptr;
}

// The count per severity, the chart's legend and the table's header; its columns are those
// AppendDiagnosisRow writes.
void AppendTableStart(std::string& out, const std::array<int, 4>& counts) {
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
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEscaped(out, text);
  return out;
}

GzippedText RenderStatusPageGzip(const analysis::Findings& findings,
                                 const std::vector<SourceStatus>& sources, std::string_view version,
                                 double now) {
  const DiagnosisRows sorted = SortedBySeverity(findings.diagnosis);

  // Compressed a piece at a time between rows: reserved whole, the page took 2,600 bytes a pair
  // (52 MB at 20,000 groups) at the peak of every render.
  GzipWriter writer;
  std::string& out = writer.text();
  AppendHead(out, sorted.counts[0] + sorted.counts[1], version, now);
  AppendSources(out, sources, now);

  out += "<h2>Job &harr; group diagnosis</h2>";
  if (const char* message = EmptyDiagnosisMessage(sources, sorted.rows.empty())) {
    AppendEmpty(out, message);
  } else {
    AppendTableStart(out, sorted.counts);
    for (const DiagnosisFinding* finding : sorted.rows) {
      AppendDiagnosisRow(out, *finding, now);
      writer.CompressIfFull();
    }
    out += "</tbody></table>";
  }
  out +=
      "</main><footer>Kafka lag is what Kafka's tools show; a Flink job commits only on "
      "checkpoints, so Flink lag is the job's real position. lagsight's docs/runbooks.md "
      "has a section per cause.</footer></body></html>\n";
  return std::move(writer).Finish();
}

std::string RenderStatusPage(const analysis::Findings& findings,
                             const std::vector<SourceStatus>& sources, std::string_view version,
                             double now) {
  return Gunzip(RenderStatusPageGzip(findings, sources, version, now).bytes);
}

}  // namespace lagsight::status
