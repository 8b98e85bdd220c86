// app::FlinkSource: a Flink cluster's REST API as a daemon source. Its poll is the collector's
// coroutine on the event loop (the HTTP client is asynchronous, nothing blocks).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "app/source.h"
#include "config/config.h"
#include "flink/collector.h"
#include "flink/snapshot.h"

namespace lagsight::app {

class FlinkSource final : public Source, public std::enable_shared_from_this<FlinkSource> {
 public:
  // The cluster's TLS files and URL were checked when the configuration was validated.
  FlinkSource(boost::asio::io_context& io, config::FlinkClusterConfig config);

  const config::FlinkClusterConfig& config() const { return *config_; }

  Kind kind() const override { return Kind::kFlink; }
  const std::string& name() const override { return config_->name; }
  std::chrono::milliseconds poll_interval() const override { return config_->poll_interval; }
  void Poll(const analysis::SourcesView& sources, Done done) override;
  void AddTo(analysis::SourcesView& view) const override;
  std::shared_ptr<const analysis::Findings> Observe(analysis::Analyzer& analyzer,
                                                    const analysis::SourcesView& sources,
                                                    double now_unix_seconds) override;
  Render Renderer(const metrics::PollStatus& status,
                  const analysis::SourcesView& sources) const override;
  void TakeOver(const Source& previous) override;

 private:
  void WarnUnmappedInShard(const flink::FlinkSnapshot& snapshot);

  boost::asio::io_context& io_;
  std::shared_ptr<const config::FlinkClusterConfig> config_;
  std::shared_ptr<flink::Collector> collector_;
  std::shared_ptr<const flink::FlinkSnapshot> snapshot_;  // null while the REST API is down
  // Sharded: the unmapped jobs that commit whose log warning was written (once per job name).
  std::set<std::string> warned_unmapped_;
  // The jobs the latest analysis found behind, whose vertices' load the next poll reads;
  // written by Observe on the analysis strand, read by Poll on the event loop.
  std::mutex behind_mutex_;
  std::set<std::string> jobs_behind_;
};

}  // namespace lagsight::app
