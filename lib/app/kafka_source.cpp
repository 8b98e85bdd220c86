#include "app/kafka_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <limits>

#include "app/poll_guard.h"
#include "metrics/kafka_metrics.h"

namespace lagsight::app {

namespace asio = boost::asio;

KafkaSource::KafkaSource(asio::io_context& io, asio::thread_pool& workers,
                         asio::thread_pool& retirer, config::KafkaClusterConfig config,
                         std::unique_ptr<kafka::RdKafkaAdmin> admin)
    : io_(io),
      workers_(workers),
      retirer_(retirer),
      config_(std::move(config)),
      collector_(std::make_shared<kafka::Collector>(config_, std::move(admin))) {}

void KafkaSource::Poll(const analysis::SourcesView& sources, Done done) {
  // Only a weak reference to the client while queued: a reload storm must not keep every
  // replaced client (threads, sockets) alive until its turn comes, to poll a cluster no one reads.
  asio::post(workers_, [self = shared_from_this(), weak_collector = std::weak_ptr(collector_),
                        reads = FlinkReadsOf(sources), previous = latest_,
                        done = std::move(done)]() mutable {
    const auto collector = weak_collector.lock();
    if (!collector) return;  // replaced by a reload before its turn
    const auto started = std::chrono::steady_clock::now();
    const double requested_at =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto polled = PollGuarded("kafka cluster \"" + self->config_.name + "\"",
                              [&] { return collector->Poll(reads); });
    std::optional<std::string> error;
    std::optional<kafka::KafkaSnapshot> snapshot;
    if (polled) {
      snapshot = std::move(polled).value();
      snapshot->requested_at = requested_at;
    } else {
      error = polled.error().message;
    }
    auto poll = analysis::DeriveKafkaPoll(std::move(snapshot), previous);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    asio::post(self->io_, [self, poll = std::move(poll), error = std::move(error), seconds,
                           done = std::move(done)]() mutable {
      self->Store(std::move(poll), seconds);
      done(std::move(error));
    });
  });
}

void KafkaSource::Store(analysis::KafkaPoll poll, double seconds) {
  if (poll.snapshot) {
    const kafka::KafkaSnapshot& snapshot = *poll.snapshot;
    if (snapshot.partial_errors.size() != last_partial_errors_) {
      for (const std::string& partial : snapshot.partial_errors) {
        spdlog::warn("kafka cluster \"{}\": {}", config_.name, partial);
      }
    }
    last_partial_errors_ = snapshot.partial_errors.size();
    spdlog::debug("kafka cluster \"{}\": polled {} groups in {:.3f}s", config_.name,
                  snapshot.groups.size(), seconds);
    for (const analysis::OffsetRegression& regression : poll.regressions) {
      spdlog::info("kafka group \"{}\" {}/{}: committed offset went back from {} to {}",
                   regression.group, regression.partition.topic, regression.partition.partition,
                   regression.from, regression.to);
    }
  }
  latest_ = std::move(poll);
}

void KafkaSource::AddTo(analysis::SourcesView& view) const { view.kafka[config_.name] = latest_; }

bool KafkaSource::WantsEarlyPoll(const analysis::SourcesView& sources) {
  if (!latest_.snapshot) return false;  // down, or not polled yet: its schedule decides
  std::set<std::string> read;
  for (const auto& [topic, count] : latest_.snapshot->topic_partitions) {
    read.insert(flink::MetricTopicName(topic));
  }
  std::set<std::string> unread;
  for (const std::string& topic : FlinkReadsOf(sources).unified_topics) {
    if (!read.contains(topic)) unread.insert(topic);
  }
  const bool new_topic = std::any_of(unread.begin(), unread.end(), [&](const std::string& topic) {
    return !early_polled_for_.contains(topic);
  });
  early_polled_for_ = std::move(unread);
  return new_topic;
}

std::shared_ptr<const analysis::Findings> KafkaSource::Observe(analysis::Analyzer& analyzer,
                                                               const analysis::SourcesView& sources,
                                                               double now_unix_seconds) {
  return analyzer.ObserveKafka(config_.name, sources, now_unix_seconds);
}

Source::Render KafkaSource::Renderer(const metrics::PollStatus& status,
                                     const analysis::SourcesView&) const {
  return [name = config_.name, series = config_.series, status, poll = latest_,
          logged = budget_coarsened_](const analysis::Findings& findings, double,
                                      metrics::FamilyBuilder& out) {
    const auto cluster_findings = findings.kafka.find(name);
    const metrics::KafkaSeriesUse use = metrics::AppendKafkaMetrics(
        name, status, poll,
        cluster_findings == findings.kafka.end() ? nullptr : cluster_findings->second.get(), series,
        out);
    if (poll.snapshot == nullptr) return;
    const std::size_t coarsened = use.pairs_to_topic + use.pairs_to_group;
    if (logged->exchange(coarsened) == coarsened) return;
    if (coarsened == 0) {
      spdlog::info("kafka cluster \"{}\": {} detail series, within series.budget {} again", name,
                   use.detail_series, series.budget);
      return;
    }
    spdlog::warn(
        "kafka cluster \"{}\": {} per-topic and per-partition group series wanted, over "
        "series.budget {}: {} group-topic pair(s) exported per topic and {} per group only "
        "({} series); raise the budget or set a coarser series.granularity",
        name, use.wanted_series, series.budget, use.pairs_to_topic, use.pairs_to_group,
        use.detail_series);
  };
}

void KafkaSource::TakeOver(const Source& previous) {
  if (const auto* kafka = dynamic_cast<const KafkaSource*>(&previous)) {
    latest_ = kafka->latest_;
    // A poll of the previous settings that ends later must not count regressions against ours.
    latest_.regressions.clear();
  }
}

void KafkaSource::Retire() {
  // A poll in flight holds the client and releases it when it ends.
  asio::post(retirer_, [retired = std::move(collector_)] {});
}

kafka::ExtraReads FlinkReadsOf(const analysis::SourcesView& sources) {
  // Flink names a topic in its metric ids as Kafka's collision-unified name ("orders.v2" as
  // "orders_v2"): the escaped names are already in the collector's terms.
  kafka::ExtraReads reads;
  for (const auto& [name, flink] : sources.flink) {
    if (!flink.snapshot) continue;
    for (const flink::FlinkJob& job : flink.snapshot->jobs) {
      for (const flink::SourceReader& reader : job.sources) {
        for (const auto& [tp, offsets] : reader.partitions) {
          reads.unified_topics.insert(tp.escaped_topic);
          if (job.read_committed) reads.read_committed_topics.insert(tp.escaped_topic);
          if (offsets.current && *offsets.current < std::numeric_limits<std::int64_t>::max()) {
            reads.positions.emplace(tp.escaped_topic, tp.partition, *offsets.current + 1,
                                    job.read_committed);
          }
        }
      }
    }
  }
  return reads;
}

}  // namespace lagsight::app
