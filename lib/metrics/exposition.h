// Building and rendering one scrape's worth of metrics in the Prometheus text format.
//
// FamilyBuilder collects samples from all sources under one family per metric name (the text
// format allows each name once, with one HELP and TYPE) and writes each sample's line as it is
// added; Render() joins the families, sorted by name. Rendering happens after a poll, off the
// scrape path, so a scrape only sends an already rendered string.
//
// Written by hand rather than through prometheus-cpp's data model and TextSerializer, for a
// measured reason (tests/bench/exposition_bench, 996,509 series, 113 MB of text, 2 cores): the
// data model and serializer took 1.27 s and peaked at 708 MB (one ClientMetric with its label
// vector per sample, then the text beside them); writing each line as it is added takes 0.46 s
// and peaks at 299 MB. The text is byte for byte what TextSerializer writes (a unit test
// compares the two over awkward values and labels), so `promtool check metrics` and the golden
// files hold.
// Not thread-safe; build on one thread, then publish the result.
#pragma once

#include <prometheus/metric_type.h>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lagsight::metrics {

struct MetricDef {
  const char* name;
  const char* help;
  prometheus::MetricType type;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

class FamilyBuilder {
 public:
  void Add(const MetricDef& def, const Labels& labels, double value);

  // Series added so far, over all families.
  std::size_t series() const { return series_; }

  // The exposition: families sorted by name, each with its HELP and TYPE, samples in the order
  // they were added.
  std::string Render() &&;

 private:
  struct Family {
    const MetricDef* def = nullptr;
    std::string samples;  // one line per sample
  };
  std::map<std::string_view, Family> families_;
  std::size_t series_ = 0;
};

// How the text format writes a sample value, as prometheus-cpp 1.0.1 does: "Nan", "+Inf", "-Inf",
// else 16 significant digits (%.16g).
void AppendValue(double value, std::string& out);

}  // namespace lagsight::metrics
