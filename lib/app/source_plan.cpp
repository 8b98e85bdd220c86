#include "app/source_plan.h"

#include "app/flink_source.h"
#include "app/kafka_source.h"
#include "app/store_source.h"

namespace lagsight::app {

bool RunsKafkaCluster(const Source& running, const config::KafkaClusterConfig& cluster) {
  const auto* kafka = dynamic_cast<const KafkaSource*>(&running);
  return kafka != nullptr && kafka->config() == cluster;
}

std::vector<PlannedSource> PlanSources(ValidatedConfig& validated, const SourceContext& context) {
  std::vector<PlannedSource> plan;
  for (const config::KafkaClusterConfig& cluster : validated.config.kafka) {
    plan.push_back(
        {Source::Kind::kKafka, cluster.name,
         [&cluster](const Source& running) { return RunsKafkaCluster(running, cluster); },
         [&cluster, &validated, context]() -> std::shared_ptr<Source> {
           return std::make_shared<KafkaSource>(context.io, context.workers, context.retirer,
                                                cluster,
                                                std::move(validated.admins.at(cluster.name)));
         }});
  }
  for (const config::FlinkClusterConfig& cluster : validated.config.flink) {
    plan.push_back({Source::Kind::kFlink, cluster.name,
                    [&cluster](const Source& running) {
                      const auto* flink = dynamic_cast<const FlinkSource*>(&running);
                      return flink != nullptr && flink->config() == cluster;
                    },
                    [&cluster, context]() -> std::shared_ptr<Source> {
                      return std::make_shared<FlinkSource>(context.io, cluster);
                    }});
  }
  for (const config::PositionStoreConfig& store : validated.config.positions) {
    plan.push_back({Source::Kind::kStore, store.name,
                    [&store](const Source& running) {
                      const auto* source = dynamic_cast<const StoreSource*>(&running);
                      return source != nullptr && source->config() == store;
                    },
                    [&store, context]() -> std::shared_ptr<Source> {
                      return std::make_shared<StoreSource>(context.io, context.workers, store);
                    }});
  }
  return plan;
}

std::string_view KindName(Source::Kind kind) {
  switch (kind) {
    case Source::Kind::kKafka:
      return "kafka";
    case Source::Kind::kFlink:
      return "flink";
    case Source::Kind::kStore:
      return "store";
  }
  return "source";
}

}  // namespace lagsight::app
