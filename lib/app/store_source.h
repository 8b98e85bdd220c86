// app::StoreSource: an external position store (positions: in the config) as a daemon source.
// Its poll asks the latest Flink snapshots which jobs the store is for and which topics they
// read and runs the blocking store collector on the worker pool; it keeps its latest readings.
// Each render joins them with the job and the log as every source's latest state has them then
// (analysis::JoinStoredPositions): an entry is judged against the newest log ends, so one
// planted beyond the log end is flagged by the first Kafka poll that began after the store
// reading that saw it, not a store poll after that.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>
#include <vector>

#include "analysis/stored_positions.h"
#include "app/source.h"
#include "config/config.h"
#include "stores/collector.h"

namespace lagsight::app {

class StoreSource final : public Source, public std::enable_shared_from_this<StoreSource> {
 public:
  StoreSource(boost::asio::io_context& io, boost::asio::thread_pool& workers,
              config::PositionStoreConfig config);

  const config::PositionStoreConfig& config() const { return config_; }

  Kind kind() const override { return Kind::kStore; }
  const std::string& name() const override { return config_.name; }
  std::chrono::milliseconds poll_interval() const override { return config_.poll_interval; }
  void Poll(const analysis::SourcesView& sources, Done done) override;
  void AddTo(analysis::SourcesView& view) const override;
  std::shared_ptr<const analysis::Findings> Observe(analysis::Analyzer&,
                                                    const analysis::SourcesView&, double) override {
    return nullptr;  // the diagnosis does not use stored positions yet
  }
  Render Renderer(const metrics::PollStatus& status,
                  const analysis::SourcesView& sources) const override;
  void TakeOver(const Source& previous) override;

 private:
  boost::asio::io_context& io_;
  boost::asio::thread_pool& workers_;
  config::PositionStoreConfig config_;
  std::shared_ptr<stores::Collector> collector_;
  analysis::StoreReadings readings_;
};

// The jobs of `sources` the store `config` is for, with the real topics each reads.
std::vector<stores::StoreRead> StoreReadsOf(const config::PositionStoreConfig& config,
                                            const analysis::SourcesView& sources);

}  // namespace lagsight::app
