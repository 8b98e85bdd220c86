// Building and serializing one scrape's worth of metric families.
//
// FamilyBuilder collects samples from all sources under one family per metric name (the text
// format allows each name once, with one HELP and TYPE) and hands them to prometheus-cpp's data
// model; Serialize() renders them with prometheus-cpp's TextSerializer. Rendering happens after
// a poll, off the scrape path, so a scrape only copies out an already rendered string.
// Not thread-safe; build on one thread, then publish the result.
#pragma once

#include <prometheus/metric_family.h>

#include <map>
#include <string>
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

  // Families sorted by name, samples in the order they were added.
  std::vector<prometheus::MetricFamily> Build() &&;

 private:
  std::map<std::string, prometheus::MetricFamily> families_;
};

std::string Serialize(const std::vector<prometheus::MetricFamily>& families);

}  // namespace lagsight::metrics
