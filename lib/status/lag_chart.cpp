#include "status/lag_chart.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "status/html_text.h"

namespace lagsight::status {
namespace {

// The chart's drawing area in SVG user units (= CSS pixels at this size).
constexpr int kChartWidth = 160;
constexpr int kChartHeight = 36;
constexpr double kChartPadding = 2;

}  // namespace

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

}  // namespace lagsight::status
