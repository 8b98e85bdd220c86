// flink::Collector: one poll of one Flink cluster's REST API, turned into a FlinkSnapshot.
//
// Lists the jobs, keeps the live ones the job filter accepts, and for each (concurrently, within
// the HTTP client's bound on requests in flight) reads its vertices, checkpoint statistics and
// configuration and, for each source vertex, the KafkaSourceReader metrics: the metric ids
// first, then their values in batches that keep URLs short. Runs as a coroutine on the daemon's
// io_context; one poll at a time per instance.
#pragma once

#include <memory>

#include "common/awaitable.h"
#include "config/config.h"
#include "flink/http_client.h"
#include "flink/snapshot.h"

namespace lagsight::flink {

class Collector {
 public:
  Collector(config::FlinkClusterConfig cluster, std::unique_ptr<HttpFetch> http);

  // Fails as a whole when the job list cannot be read; a job or vertex that cannot be read is
  // recorded in FlinkSnapshot::partial_errors.
  boost::asio::awaitable<Result<FlinkSnapshot>> Poll();

  const config::FlinkClusterConfig& cluster() const { return cluster_; }

 private:
  boost::asio::awaitable<void> PollJob(const JobOverview& overview, Result<FlinkJob>& out);
  boost::asio::awaitable<Result<SourceReader>> PollSource(const std::string& job_id,
                                                          const Vertex& vertex);

  config::FlinkClusterConfig cluster_;
  std::unique_ptr<HttpFetch> http_;
};

// Job states whose job is gone for good; such jobs are not exported.
bool IsTerminalJobState(std::string_view state);

// Splits metric ids into `?get=` lists whose query stays under `max_query_bytes`.
std::vector<std::string> BatchMetricQueries(const std::vector<std::string>& ids,
                                            std::size_t max_query_bytes);

}  // namespace lagsight::flink
