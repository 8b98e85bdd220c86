// flink::Collector: one poll of one Flink cluster's REST API, turned into a FlinkSnapshot.
//
// Lists the jobs and keeps the non-terminal ones the job filter accepts. For each (concurrently,
// within the HTTP client's bound on requests in flight) it reads the vertices, checkpoint
// statistics and configuration and the job's restart count; for a RUNNING job also, per source
// vertex, the KafkaSourceReader metrics: the metric ids first, then their values in batches that
// keep URLs short. Every id taken from a response is checked before it goes into a URL, and every
// path segment and query value is percent-encoded. A poll ends by one deadline: past it the
// requests under way are cut short and the poll fails as a whole. Runs as a coroutine on the
// daemon's io_context; one poll at a time per instance; the instance must outlive its polls.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/awaitable.h"
#include "config/config.h"
#include "flink/http_client.h"
#include "flink/snapshot.h"

namespace lagsight::flink {

class Collector {
 public:
  Collector(config::FlinkClusterConfig cluster, std::unique_ptr<HttpFetch> http);

  // Fails as a whole when the job list cannot be read or the poll overruns PollTimeout(); a job
  // or vertex that cannot be read is recorded in FlinkSnapshot::partial_errors.
  boost::asio::awaitable<Result<FlinkSnapshot>> Poll();

  // How long one whole poll may take. Derived from request_timeout until the configuration has a
  // key of its own: a few sequential requests' worth.
  std::chrono::milliseconds PollTimeout() const;

  // /jobmanager/config is read on the first poll and again every this many polls.
  static constexpr int kJobManagerConfigRefreshPolls = 10;

  // The running jobs whose vertices' load (Vertex::load) the next polls read: one request per
  // vertex (GET /jobs/:jid/vertices/:vid/subtasks/metrics, aggregated by Flink), for the jobs the
  // analysis found behind, so the cost follows the jobs that are behind, not the fleet. At most
  // kMaxInspectedJobs (the first by id) and kMaxInspectedVertices per job; the rest is noted.
  void InspectJobs(std::set<std::string> job_ids) { inspect_ = std::move(job_ids); }
  static constexpr std::size_t kMaxInspectedJobs = 20;
  static constexpr std::size_t kMaxInspectedVertices = 32;

  struct JobOutcome;
  struct PollState;

 private:
  // The listed jobs this poll reads: live, accepted by the job filter, this shard's, with a valid
  // id (the others are noted in `partial_errors`), by id.
  std::vector<JobOverview> JobsToPoll(std::vector<JobOverview>& overviews,
                                      std::vector<std::string>& partial_errors) const;
  // Runs PollJob for each of the state's jobs at once; returns when all are done.
  boost::asio::awaitable<void> PollJobsConcurrently(std::shared_ptr<PollState> state);
  boost::asio::awaitable<void> PollJob(std::shared_ptr<PollState> state, std::size_t index);
  // The steps of PollJob, on the job's REST path `base`. Those returning bool return false when
  // the job cannot be kept, with `outcome.job` set to why.
  boost::asio::awaitable<bool> ReadJobVertices(const std::string& base, bool running,
                                               std::chrono::steady_clock::time_point deadline,
                                               FlinkJob& job, JobOutcome& outcome);
  boost::asio::awaitable<void> ReadNumRestarts(const std::string& base,
                                               std::chrono::steady_clock::time_point deadline,
                                               FlinkJob& job, std::vector<std::string>& anomalies);
  boost::asio::awaitable<bool> ReadCheckpoints(const std::string& base, bool running,
                                               std::chrono::steady_clock::time_point deadline,
                                               FlinkJob& job, JobOutcome& outcome);
  // A running job's Kafka sources, each read by PollSource.
  boost::asio::awaitable<bool> ReadSources(std::chrono::steady_clock::time_point deadline,
                                           FlinkJob& job, JobOutcome& outcome);
  // Vertex::load of each of the job's vertices; what cannot be read is an anomaly.
  boost::asio::awaitable<void> ReadVertexLoads(const std::string& base,
                                               std::chrono::steady_clock::time_point deadline,
                                               FlinkJob& job, std::vector<std::string>& anomalies);
  // VertexLoad::busiest_subtask of a vertex whose load LooksSkewed: one more request.
  boost::asio::awaitable<void> ReadBusiestSubtask(const std::string& vertex_path,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  Vertex& vertex,
                                                  std::vector<std::string>& anomalies);
  boost::asio::awaitable<Result<SourceReader>> PollSource(
      const std::string& job_id, const Vertex& vertex,
      std::chrono::steady_clock::time_point deadline, std::vector<std::string>& anomalies);
  boost::asio::awaitable<void> RefreshMetricsFetchInterval(
      std::chrono::steady_clock::time_point deadline, std::vector<std::string>& partial_errors);
  // Has the JobManager refresh its metric store, and waits (at most a second) until it has:
  // Flink answers the request that starts a refresh from the old store, so a value read at a
  // 15 s poll was this poll's or the previous one's, which one changing from poll to poll
  // (docs/facts.md). Not within the fetch interval of the last one asked: Flink would not
  // refresh, and the store is at most that old.
  boost::asio::awaitable<void> RefreshMetricStore(std::chrono::steady_clock::time_point deadline);

  config::FlinkClusterConfig cluster_;
  std::unique_ptr<HttpFetch> http_;
  int polls_since_config_read_ = kJobManagerConfigRefreshPolls;
  std::optional<double> metrics_fetch_interval_ms_;
  std::optional<std::chrono::steady_clock::time_point> last_refresh_asked_;
  std::set<std::string> inspect_;
};

// Job states whose job is gone for good; such jobs are not exported.
bool IsTerminalJobState(std::string_view state);

// Whether `id` has the form of a Flink job or vertex id: 32 lowercase hex digits.
bool IsFlinkId(std::string_view id);

// Percent-encodes all but RFC 3986 unreserved characters, for one path segment or query value.
std::string PercentEncode(std::string_view value);

// Splits metric ids into `?get=` lists whose query stays under `max_query_bytes`; each id is
// percent-encoded, ',' separates them. An id containing ',' cannot be asked for and is left out.
std::vector<std::string> BatchMetricQueries(const std::vector<std::string>& ids,
                                            std::size_t max_query_bytes);

}  // namespace lagsight::flink
