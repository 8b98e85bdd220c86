#include "app/store_source.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <set>

#include "app/poll_guard.h"
#include "metrics/store_metrics.h"

namespace lagsight::app {

namespace asio = boost::asio;

StoreSource::StoreSource(asio::io_context& io, asio::thread_pool& workers,
                         config::PositionStoreConfig config)
    : io_(io),
      workers_(workers),
      config_(std::move(config)),
      collector_(std::make_shared<stores::Collector>(
          config_, std::make_unique<stores::RedisHashStore>(config_))) {}

std::vector<stores::StoreRead> StoreReadsOf(const config::PositionStoreConfig& config,
                                            const analysis::SourcesView& sources) {
  // Flink writes a topic's dots as '_' in its metric ids: the real names come from Kafka.
  std::map<std::string, std::set<std::string>> real_topics;
  for (const auto& [name, poll] : sources.kafka) {
    if (!poll.snapshot) continue;
    for (const auto& [topic, count] : poll.snapshot->topic_partitions) {
      real_topics[flink::MetricTopicName(topic)].insert(topic);
    }
  }
  std::vector<stores::StoreRead> reads;
  for (const auto& [cluster, flink] : sources.flink) {
    if (!flink.snapshot) continue;
    if (!config.flink_cluster.empty() && cluster != config.flink_cluster) continue;
    for (const flink::FlinkJob& job : flink.snapshot->jobs) {
      if (!config.job.FullMatch(job.overview.name)) continue;
      std::set<std::string> topics;
      for (const flink::SourceReader& reader : job.sources) {
        for (const auto& [tp, offsets] : reader.partitions) {
          const auto real = real_topics.find(tp.escaped_topic);
          if (real != real_topics.end()) topics.insert(real->second.begin(), real->second.end());
        }
      }
      reads.push_back(
          {cluster, job.overview.id, job.overview.name, {topics.begin(), topics.end()}});
    }
  }
  return reads;
}

void StoreSource::Poll(const analysis::SourcesView& sources, Done done) {
  asio::post(workers_, [self = shared_from_this(), collector = collector_,
                        reads = StoreReadsOf(config_, sources), done = std::move(done)]() mutable {
    const auto unix_now = [] {
      return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
    const double requested_at = unix_now();
    auto polled =
        PollGuarded("store \"" + self->config_.name + "\"", [&] { return collector->Poll(reads); });
    analysis::StoreReadings::Reading reading;
    std::optional<std::string> error;
    if (polled) {
      polled->requested_at = requested_at;
      polled->read_until = unix_now();
      reading = std::make_shared<const stores::StoreSnapshot>(std::move(polled).value());
    } else {
      error = polled.error().message;
    }
    asio::post(self->io_, [self, reading = std::move(reading), error = std::move(error),
                           done = std::move(done)]() mutable {
      if (reading) {
        for (const std::string& partial : reading->partial_errors) {
          spdlog::debug("store \"{}\": {}", self->config_.name, partial);
        }
      }
      self->readings_.Keep(std::move(reading));
      done(std::move(error));
    });
  });
}

void StoreSource::AddTo(analysis::SourcesView& view) const {
  view.stores[config_.name] = readings_.latest();
}

Source::Render StoreSource::Renderer(const metrics::PollStatus& status,
                                     const analysis::SourcesView& sources) const {
  return [name = config_.name, status, readings = readings_, sources](
             const analysis::Findings&, double now, metrics::FamilyBuilder& out) {
    const std::vector<analysis::StoredJobPositions> joined = readings.Join(sources);
    metrics::AppendStoreMetrics(name, status, readings.latest().get(),
                                readings.latest() ? &joined : nullptr, now, out);
  };
}

void StoreSource::TakeOver(const Source& previous) {
  if (const auto* store = dynamic_cast<const StoreSource*>(&previous)) {
    readings_ = store->readings_;
  }
}

}  // namespace lagsight::app
