// app::KafkaSource: a Kafka cluster as a daemon source. Its poll runs the blocking collector on
// the worker pool, derives the poll's numbers there (analysis::DeriveKafkaPoll) and stores the
// result on the event loop; replaced clients are destroyed on the retirer thread, because
// destroying a librdkafka client waits for its threads.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <set>
#include <string>

#include "analysis/kafka_poll.h"
#include "app/source.h"
#include "config/config.h"
#include "kafka/collector.h"
#include "kafka/rdkafka_admin.h"

namespace lagsight::app {

class KafkaSource final : public Source, public std::enable_shared_from_this<KafkaSource> {
 public:
  KafkaSource(boost::asio::io_context& io, boost::asio::thread_pool& workers,
              boost::asio::thread_pool& retirer, config::KafkaClusterConfig config,
              std::unique_ptr<kafka::RdKafkaAdmin> admin);

  const config::KafkaClusterConfig& config() const { return config_; }

  Kind kind() const override { return Kind::kKafka; }
  const std::string& name() const override { return config_.name; }
  std::chrono::milliseconds poll_interval() const override { return config_.poll_interval; }
  void Poll(const analysis::SourcesView& sources, Done done) override;
  void AddTo(analysis::SourcesView& view) const override;
  std::shared_ptr<const analysis::Findings> Observe(analysis::Analyzer& analyzer,
                                                    const analysis::SourcesView& sources,
                                                    double now_unix_seconds) override;
  Render Renderer(const metrics::PollStatus& status,
                  const analysis::SourcesView& sources) const override;
  // A Flink job reads a topic this cluster's latest poll did not read: the job's Flink-side lag
  // needs its log end, which the next poll on schedule would read up to a poll interval later
  // (the job's current offsets were exported a poll or two before its lag).
  bool WantsEarlyPoll(const analysis::SourcesView& sources) override;
  void TakeOver(const Source& previous) override;
  void Retire() override;

 private:
  void Store(analysis::KafkaPoll poll, double seconds);

  boost::asio::io_context& io_;
  boost::asio::thread_pool& workers_;
  boost::asio::thread_pool& retirer_;
  config::KafkaClusterConfig config_;
  std::shared_ptr<kafka::Collector> collector_;
  analysis::KafkaPoll latest_;
  std::size_t last_partial_errors_ = 0;
  // The topics (Flink's escaped names) an early poll was started for and the latest poll still
  // lacks: one early poll per topic, also for a topic this cluster does not have.
  std::set<std::string> early_polled_for_;
  // Pairs the series budget coarsened at the last render that logged it: a render logs only a
  // change, so a lasting overrun is one line, not one per render. Renders run on workers.
  std::shared_ptr<std::atomic<std::size_t>> budget_coarsened_ =
      std::make_shared<std::atomic<std::size_t>>(0);
};

// What the Flink jobs of every Flink cluster read, in the Kafka collector's terms. Every Flink
// cluster's: a mapping may send one job to another Kafka cluster than its Flink cluster's.
kafka::ExtraReads FlinkReadsOf(const analysis::SourcesView& sources);

}  // namespace lagsight::app
