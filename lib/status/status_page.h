// The human status page served at `/`: one self-contained HTML document, rendered from the
// analysis' findings and the sources' health.
//
// Pure: no I/O, no clock (`now` is a parameter), so it renders on a worker next to the
// exposition and is unit-tested on hand-made findings. The page loads nothing: its style is
// inline, its charts are inline SVG, there is no script, and it reloads itself every 15 s. Every
// name that comes from Kafka, Flink or the config (cluster, group, job, error text) is
// HTML-escaped, in text and in attributes. Problems sort first, most severe first.
// Thread-safe: it only reads its arguments.
//
// Its parts: status_page.cpp assembles the page (head, sources, table, footer);
// diagnosis_row.h writes a table row, lag_chart.h a row's chart, severity.h weighs and explains
// the causes, html_text.h escapes and formats the text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/findings.h"
#include "common/gzip_stream.h"
#include "status/severity.h"  // Severity, SeverityOf: how loudly the page shows each cause

namespace lagsight::status {

// One configured source as the app sees it after its latest poll.
struct SourceStatus {
  enum class Kind { kKafka, kFlink, kStore };
  Kind kind = Kind::kKafka;
  std::string name;                    // the cluster's config name
  bool polled = false;                 // false until its first poll finished
  bool up = false;                     // the latest poll succeeded
  std::optional<double> last_success;  // unix seconds of the latest successful poll
  std::string last_error;              // why the latest poll failed, when it did
};

// The page as one gzip member, compressed while it is written (the daemon publishes this).
// Throws std::runtime_error when the deflater fails (out of memory).
GzippedText RenderStatusPageGzip(const analysis::Findings& findings,
                                 const std::vector<SourceStatus>& sources, std::string_view version,
                                 double now);

// The same page as text, for tests and tools.
std::string RenderStatusPage(const analysis::Findings& findings,
                             const std::vector<SourceStatus>& sources, std::string_view version,
                             double now);

// `text` with & < > " ' replaced by character references; safe in text and quoted attributes.
std::string EscapeHtml(std::string_view text);

}  // namespace lagsight::status
