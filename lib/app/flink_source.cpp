#include "app/flink_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>

#include "app/poll_guard.h"
#include "flink/client_options.h"
#include "metrics/flink_metrics.h"

namespace lagsight::app {

namespace asio = boost::asio;

FlinkSource::FlinkSource(asio::io_context& io, config::FlinkClusterConfig config)
    : io_(io),
      config_(std::make_shared<const config::FlinkClusterConfig>(std::move(config))),
      collector_(std::make_shared<flink::Collector>(
          *config_,
          std::move(flink::HttpClient::Create(io.get_executor(), flink::ClientOptions(*config_)))
              .value())) {}

void FlinkSource::Poll(const analysis::SourcesView&, Done done) {
  {
    const std::lock_guard lock(behind_mutex_);
    collector_->InspectJobs(jobs_behind_);
  }
  asio::co_spawn(
      io_,
      [self = shared_from_this(), collector = collector_,
       done = std::move(done)]() -> asio::awaitable<void> {
        const double requested_at =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        Result<flink::FlinkSnapshot> polled = Error{"not polled"};
        try {
          polled = co_await collector->Poll();
        } catch (const std::exception& thrown) {  // see app/poll_guard.h
          polled = InternalPollError("flink cluster \"" + self->name() + "\"", thrown);
        }
        std::optional<std::string> error;
        if (polled) {
          polled->requested_at = requested_at;
          for (const std::string& partial : polled->partial_errors) {
            spdlog::debug("flink cluster \"{}\": {}", self->name(), partial);
          }
          self->WarnUnmappedInShard(*polled);
          self->snapshot_ = std::make_shared<const flink::FlinkSnapshot>(std::move(polled).value());
        } else {
          error = polled.error().message;
          self->snapshot_.reset();
        }
        done(std::move(error));
      },
      asio::detached);
}

void FlinkSource::WarnUnmappedInShard(const flink::FlinkSnapshot& snapshot) {
  if (!config_->shard.sharded()) return;
  for (const flink::FlinkJob& job : snapshot.jobs) {
    const std::string& name = job.overview.name;
    if (config::JobOwnerKey(*config_, name) != name || warned_unmapped_.contains(name)) continue;
    const bool commits =
        std::any_of(job.sources.begin(), job.sources.end(), [](const auto& source) {
          return std::any_of(
              source.partitions.begin(), source.partitions.end(),
              [](const auto& partition) { return partition.second.committed.has_value(); });
        });
    if (!commits) continue;
    // Once per job name; the set is bounded so years of renamed jobs cannot grow it for ever.
    if (warned_unmapped_.size() >= 10'000) warned_unmapped_.clear();
    warned_unmapped_.insert(name);
    spdlog::warn(
        "flink cluster \"{}\": job \"{}\" commits offsets but no groups mapping names its group; "
        "sharded, it is read by the shard of its name and paired only with that shard's groups "
        "(map it in flink[].groups so it is read where its group is)",
        config_->name, name);
  }
}

void FlinkSource::AddTo(analysis::SourcesView& view) const {
  view.flink[config_->name] = {config_, snapshot_};
}

std::shared_ptr<const analysis::Findings> FlinkSource::Observe(analysis::Analyzer& analyzer,
                                                               const analysis::SourcesView& sources,
                                                               double now_unix_seconds) {
  auto findings = analyzer.ObserveFlink(config_->name, sources, now_unix_seconds);
  if (findings) {
    std::set<std::string> behind = analysis::JobsBehind(*findings);
    const std::lock_guard lock(behind_mutex_);
    jobs_behind_ = std::move(behind);
  }
  return findings;
}

Source::Render FlinkSource::Renderer(const metrics::PollStatus& status,
                                     const analysis::SourcesView&) const {
  return [name = config_->name, status, snapshot = snapshot_](const analysis::Findings& findings,
                                                              double, metrics::FamilyBuilder& out) {
    static const analysis::FlinkFindings kNothingFound;
    const auto found = findings.flink.find(name);
    metrics::AppendFlinkMetrics(
        name, status, snapshot.get(),
        snapshot && found != findings.flink.end() ? found->second : kNothingFound, out);
  };
}

void FlinkSource::TakeOver(const Source& previous) {
  if (const auto* flink = dynamic_cast<const FlinkSource*>(&previous)) snapshot_ = flink->snapshot_;
}

}  // namespace lagsight::app
