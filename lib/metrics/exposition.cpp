#include "metrics/exposition.h"

#include <prometheus/text_serializer.h>

namespace lagsight::metrics {

void FamilyBuilder::Add(const MetricDef& def, const Labels& labels, double value) {
  auto [it, inserted] = families_.try_emplace(def.name);
  prometheus::MetricFamily& family = it->second;
  if (inserted) {
    family.name = def.name;
    family.help = def.help;
    family.type = def.type;
  }
  prometheus::ClientMetric& sample = family.metric.emplace_back();
  sample.label.reserve(labels.size());
  for (const auto& [name, label_value] : labels) sample.label.push_back({name, label_value});
  switch (def.type) {
    case prometheus::MetricType::Counter:
      sample.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      sample.gauge.value = value;
      break;
    default:
      sample.untyped.value = value;
      break;
  }
}

std::vector<prometheus::MetricFamily> FamilyBuilder::Build() && {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(families_.size());
  for (auto& [name, family] : families_) out.push_back(std::move(family));
  return out;
}

std::string Serialize(const std::vector<prometheus::MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace lagsight::metrics
