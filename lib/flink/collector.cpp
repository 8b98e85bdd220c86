#include "flink/collector.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>

#include "flink/job_graph_parsers.h"
#include "flink/rest_parsers.h"

namespace lagsight::flink {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// Flink URLs (and many proxies) cope with a few KiB; stay well below.
constexpr std::size_t kMaxQueryBytes = 3000;

// A JobManager metric whose value differs at every refresh of the metric store (the JVM's CPU
// time): when it changed, the refresh has landed. Checked every 100 ms, for at most a second.
constexpr const char* kRefreshWitnessPath = "/jobmanager/metrics?get=Status.JVM.CPU.Time";
constexpr const char* kRefreshWitness = "Status.JVM.CPU.Time";
constexpr std::chrono::milliseconds kRefreshCheckEvery{100};
constexpr int kRefreshChecks = 10;

bool LooksLikeSource(const Vertex& vertex) {
  return vertex.name.find("Source:") != std::string::npos;
}

// An id that failed validation, made safe for a log line (it may hold CR, LF or worse).
std::string Printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 80;
  std::string out;
  for (unsigned char c : text.substr(0, kMaxShown)) {
    out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

std::string Describe(const Result<HttpResponse>& response) {
  return response ? "HTTP " + std::to_string(response->status) : response.error().message;
}

}  // namespace

// What one job's coroutine hands back: the job, or why it could not be read, and the oddities
// met on the way (counted as partial errors even when the job is kept).
struct Collector::JobOutcome {
  Result<FlinkJob> job = Error{"not polled"};
  std::vector<std::string> anomalies;
};

// Shared by a poll and its per-job coroutines, so none of them points into another's frame.
struct Collector::PollState {
  PollState(asio::any_io_executor executor, std::vector<JobOverview> to_poll, Clock::time_point end,
            std::set<std::string> inspected)
      : jobs(std::move(to_poll)),
        inspect(std::move(inspected)),
        outcomes(this->jobs.size()),
        remaining(this->jobs.size()),
        deadline(end),
        all_done(std::move(executor), Clock::time_point::max()) {}
  std::vector<JobOverview> jobs;
  std::set<std::string> inspect;  // the jobs whose vertices' load this poll reads
  std::vector<JobOutcome> outcomes;
  std::size_t remaining;
  Clock::time_point deadline;
  asio::steady_timer all_done;
};

namespace {

// The jobs read go into the snapshot; what could not be read, and the oddities met, go into its
// partial errors, each prefixed by its job.
void AddJobOutcomes(Collector::PollState& state, FlinkSnapshot& snapshot) {
  for (std::size_t i = 0; i < state.jobs.size(); ++i) {
    Collector::JobOutcome& outcome = state.outcomes[i];
    const std::string which = "job " + state.jobs[i].id + " (" + state.jobs[i].name + "): ";
    for (const std::string& anomaly : outcome.anomalies) {
      snapshot.partial_errors.push_back(which + anomaly);
    }
    if (outcome.job) {
      snapshot.jobs.push_back(std::move(outcome.job).value());
    } else {
      snapshot.partial_errors.push_back(which + outcome.job.error().message);
    }
  }
}

}  // namespace

bool IsTerminalJobState(std::string_view state) {
  return state == "FINISHED" || state == "CANCELED" || state == "FAILED";
}

bool IsFlinkId(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string PercentEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::vector<std::string> BatchMetricQueries(const std::vector<std::string>& ids,
                                            std::size_t max_query_bytes) {
  std::vector<std::string> batches;
  std::string current;
  for (const std::string& id : ids) {
    // Flink splits `get` on ',' after decoding, so such an id cannot be asked for.
    if (id.find(',') != std::string::npos) continue;
    const std::string encoded = PercentEncode(id);
    if (!current.empty() && current.size() + 1 + encoded.size() > max_query_bytes) {
      batches.push_back(std::move(current));
      current.clear();
    }
    current += (current.empty() ? "" : ",") + encoded;
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

Collector::Collector(config::FlinkClusterConfig cluster, std::unique_ptr<HttpFetch> http)
    : cluster_(std::move(cluster)), http_(std::move(http)) {}

std::chrono::milliseconds Collector::PollTimeout() const { return 3 * cluster_.request_timeout; }

std::vector<JobOverview> Collector::JobsToPoll(std::vector<JobOverview>& overviews,
                                               std::vector<std::string>& partial_errors) const {
  std::vector<JobOverview> live;
  for (JobOverview& job : overviews) {
    if (IsTerminalJobState(job.state) || !cluster_.jobs.Accepts(job.name)) continue;
    // Another shard's job: read where its group is (config::JobOwnerKey). Unsharded, the
    // mappings' patterns are not run at all.
    if (cluster_.shard.sharded() && !cluster_.shard.Owns(config::JobOwnerKey(cluster_, job.name))) {
      continue;
    }
    if (!IsFlinkId(job.id)) {
      partial_errors.push_back("job \"" + Printable(job.id) + "\" (" + Printable(job.name) +
                               "): not a Flink job id (32 lowercase hex digits); skipped");
      continue;
    }
    live.push_back(std::move(job));
  }
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return live;
}

asio::awaitable<void> Collector::PollJobsConcurrently(std::shared_ptr<PollState> state) {
  const auto executor = co_await asio::this_coro::executor;
  for (std::size_t i = 0; i < state->jobs.size(); ++i) {
    asio::co_spawn(executor, PollJob(state, i), [state, i](std::exception_ptr failure) {
      if (failure) {
        try {
          std::rethrow_exception(failure);
        } catch (const std::exception& e) {
          state->outcomes[i].job = Error{std::string("unexpected failure: ") + e.what()};
        } catch (...) {
          state->outcomes[i].job = Error{"unexpected failure"};
        }
      }
      if (--state->remaining == 0) state->all_done.cancel();
    });
  }
  if (!state->jobs.empty()) {
    boost::system::error_code ignored;
    co_await state->all_done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

asio::awaitable<Result<FlinkSnapshot>> Collector::Poll() {
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = started + PollTimeout();
  const auto overran = [&](std::size_t done, std::size_t total) {
    return Error{"the poll did not finish within " + std::to_string(PollTimeout().count()) +
                 " ms (3 x request_timeout); " + std::to_string(done) + " of " +
                 std::to_string(total) + " jobs were read"};
  };

  auto overview_response = co_await http_->Get("/jobs/overview", deadline);
  if (!overview_response)
    co_return Error{"GET /jobs/overview: " + overview_response.error().message};
  if (overview_response->status != 200) {
    co_return Error{"GET /jobs/overview: HTTP " + std::to_string(overview_response->status)};
  }
  FlinkSnapshot snapshot;
  auto overviews = ParseJobsOverview(overview_response->body, &snapshot.partial_errors);
  if (!overviews) co_return overviews.error();
  std::vector<JobOverview> live = JobsToPoll(*overviews, snapshot.partial_errors);

  if (++polls_since_config_read_ >= kJobManagerConfigRefreshPolls || !metrics_fetch_interval_ms_) {
    co_await RefreshMetricsFetchInterval(deadline, snapshot.partial_errors);
  }
  snapshot.metrics_fetch_interval_ms = metrics_fetch_interval_ms_;
  if (std::any_of(live.begin(), live.end(),
                  [](const JobOverview& job) { return job.state == "RUNNING"; })) {
    co_await RefreshMetricStore(deadline);
  }

  // Poll the jobs concurrently; the HTTP client bounds the requests actually in flight, and ends
  // each by the poll's deadline, so every job's coroutine is done soon after it.
  const auto executor = co_await asio::this_coro::executor;
  std::set<std::string> inspect;
  for (const std::string& id : inspect_) {
    if (inspect.size() == kMaxInspectedJobs) {
      snapshot.partial_errors.push_back(std::to_string(inspect_.size()) +
                                        " jobs are behind; the load of the first " +
                                        std::to_string(kMaxInspectedJobs) + " by id is read");
      break;
    }
    inspect.insert(id);
  }
  auto state = std::make_shared<PollState>(executor, std::move(live), deadline, std::move(inspect));
  co_await PollJobsConcurrently(state);

  if (Clock::now() >= deadline) {
    std::size_t done = 0;
    for (const JobOutcome& outcome : state->outcomes) done += outcome.job.ok() ? 1 : 0;
    co_return overran(done, state->jobs.size());
  }
  AddJobOutcomes(*state, snapshot);
  co_return snapshot;
}

asio::awaitable<void> Collector::RefreshMetricsFetchInterval(
    Clock::time_point deadline, std::vector<std::string>& partial_errors) {
  auto response = co_await http_->Get("/jobmanager/config", deadline);
  if (!response || response->status != 200) {
    partial_errors.push_back("GET /jobmanager/config: " + Describe(response));
    co_return;
  }
  auto interval = ParseMetricsFetchIntervalMs(response->body);
  if (!interval) {
    partial_errors.push_back(interval.error().message);
    co_return;
  }
  metrics_fetch_interval_ms_ = *interval;
  polls_since_config_read_ = 0;
}

asio::awaitable<void> Collector::RefreshMetricStore(Clock::time_point deadline) {
  const auto interval =
      std::chrono::duration<double, std::milli>(metrics_fetch_interval_ms_.value_or(10'000));
  const Clock::time_point asked = Clock::now();
  if (last_refresh_asked_ && asked - *last_refresh_asked_ <= interval) co_return;
  last_refresh_asked_ = asked;
  // At most a third of what is left of the poll's time, the witness's own requests included (a
  // JobManager slow to answer them): the jobs must still be read.
  const Clock::time_point give_up =
      std::min(asked + kRefreshChecks * kRefreshCheckEvery, asked + (deadline - asked) / 3);
  const auto witness = [](const Result<HttpResponse>& response) -> std::optional<double> {
    if (!response || response->status != 200) return std::nullopt;
    auto values = ParseMetricValues(response->body);
    if (!values) return std::nullopt;
    const auto found = values->find(kRefreshWitness);
    return found != values->end() ? found->second : std::nullopt;
  };
  // The answer to the request that starts the refresh holds the old value.
  const std::optional<double> old_value =
      witness(co_await http_->Get(kRefreshWitnessPath, give_up));
  if (!old_value) {  // no witness: the poll reads the store as it is
    spdlog::debug("flink cluster \"{}\": no {} to see the metric store refresh by", cluster_.name,
                  kRefreshWitness);
    co_return;
  }
  asio::steady_timer pause(co_await asio::this_coro::executor);
  while (Clock::now() + kRefreshCheckEvery <= give_up) {
    pause.expires_after(kRefreshCheckEvery);
    co_await pause.async_wait(asio::use_awaitable);
    const std::optional<double> value = witness(co_await http_->Get(kRefreshWitnessPath, give_up));
    if (value && *value != *old_value) {
      spdlog::debug(
          "flink cluster \"{}\": the metric store refreshed within {} ms", cluster_.name,
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - asked).count());
      co_return;
    }
  }
  spdlog::debug(
      "flink cluster \"{}\": the metric store did not refresh within {} ms", cluster_.name,
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - asked).count());
}

asio::awaitable<bool> Collector::ReadJobVertices(const std::string& base, bool running,
                                                 Clock::time_point deadline, FlinkJob& job,
                                                 JobOutcome& outcome) {
  // A job that is not running (restarting, failing, starting...) is kept with what Flink can
  // tell about it; only a running job must answer everything.
  auto details = co_await http_->Get(base, deadline);
  if (!details || details->status != 200) {
    if (running) {
      outcome.job = Error{"GET " + base + ": " + Describe(details)};
      co_return false;
    }
  } else {
    auto vertices = ParseJobVertices(details->body);
    if (!vertices) {
      outcome.job = vertices.error();
      co_return false;
    }
    job.vertices = std::move(vertices).value();
  }
  co_return true;
}

asio::awaitable<void> Collector::ReadNumRestarts(const std::string& base,
                                                 Clock::time_point deadline, FlinkJob& job,
                                                 std::vector<std::string>& anomalies) {
  auto restarts = co_await http_->Get(base + "/metrics?get=numRestarts", deadline);
  if (!restarts || restarts->status != 200) {
    anomalies.push_back("GET " + base + "/metrics?get=numRestarts: " + Describe(restarts));
  } else {
    auto parsed = ParseNumRestarts(restarts->body, &anomalies);
    if (parsed) {
      job.overview.num_restarts = *parsed;
    } else {
      anomalies.push_back(parsed.error().message);
    }
  }
}

asio::awaitable<bool> Collector::ReadCheckpoints(const std::string& base, bool running,
                                                 Clock::time_point deadline, FlinkJob& job,
                                                 JobOutcome& outcome) {
  auto checkpoints = co_await http_->Get(base + "/checkpoints", deadline);
  Result<CheckpointStats> stats =
      checkpoints ? ParseCheckpoints(checkpoints->status, checkpoints->body, &outcome.anomalies)
                  : Result<CheckpointStats>(
                        Error{"GET " + base + "/checkpoints: " + checkpoints.error().message});
  Result<CheckpointConfig> config = Error{"not read"};
  if (stats) {
    auto config_response = co_await http_->Get(base + "/checkpoints/config", deadline);
    config = config_response
                 ? ParseCheckpointConfig(config_response->status, config_response->body)
                 : Result<CheckpointConfig>(Error{
                       "GET " + base + "/checkpoints/config: " + config_response.error().message});
  }
  if (stats && config) {
    job.checkpoints = std::move(stats).value();
    job.checkpoint_config = std::move(config).value();
    // Only the configuration tells "disabled" apart from "none completed yet" (Flink 1.20/2.x).
    job.checkpoints.enabled = job.checkpoints.enabled && job.checkpoint_config.enabled;
  } else if (running) {
    outcome.job = stats ? config.error() : stats.error();
    co_return false;
  } else {
    job.checkpoint_stats_reported = false;
  }
  co_return true;
}

asio::awaitable<bool> Collector::ReadSources(Clock::time_point deadline, FlinkJob& job,
                                             JobOutcome& outcome) {
  for (const Vertex& vertex : job.vertices) {
    if (!LooksLikeSource(vertex)) continue;
    if (!IsFlinkId(vertex.id)) {
      outcome.anomalies.push_back("source vertex \"" + Printable(vertex.name) + "\": id \"" +
                                  Printable(vertex.id) +
                                  "\" is not a Flink vertex id (32 lowercase hex digits); "
                                  "skipped");
      continue;
    }
    auto reader = co_await PollSource(job.overview.id, vertex, deadline, outcome.anomalies);
    if (!reader) {
      outcome.job = Error{"source vertex \"" + vertex.name + "\": " + reader.error().message};
      co_return false;
    }
    // A source vertex without Kafka source metrics (KafkaSource or FlinkKafkaConsumer) reads
    // something else than Kafka.
    if (!reader->partitions.empty() || reader->commits_succeeded || reader->commits_failed) {
      job.sources.push_back(std::move(reader).value());
    }
  }
  co_return true;
}

asio::awaitable<void> Collector::ReadVertexLoads(const std::string& base,
                                                 Clock::time_point deadline, FlinkJob& job,
                                                 std::vector<std::string>& anomalies) {
  std::size_t read = 0;
  for (Vertex& vertex : job.vertices) {
    if (read++ == kMaxInspectedVertices) {
      anomalies.push_back("the load of the first " + std::to_string(kMaxInspectedVertices) +
                          " of " + std::to_string(job.vertices.size()) + " vertices is read");
      break;
    }
    if (!IsFlinkId(vertex.id)) {
      anomalies.push_back("vertex \"" + Printable(vertex.name) + "\": id \"" +
                          Printable(vertex.id) + "\" is not a Flink vertex id; load not read");
      continue;
    }
    const std::string vertex_path = base + "/vertices/" + PercentEncode(vertex.id);
    const std::string path = vertex_path + "/subtasks/metrics?" + VertexLoadQuery();
    auto answer = co_await http_->Get(path, deadline);
    if (!answer || answer->status != 200) {
      anomalies.push_back("GET " + path + ": " + Describe(answer));
      continue;
    }
    auto load = ParseVertexLoad(answer->body, &anomalies);
    if (!load) {
      anomalies.push_back(load.error().message);
      continue;
    }
    vertex.load = std::move(load).value();
    if (LooksSkewed(vertex)) co_await ReadBusiestSubtask(vertex_path, deadline, vertex, anomalies);
  }
}

asio::awaitable<void> Collector::ReadBusiestSubtask(const std::string& vertex_path,
                                                    Clock::time_point deadline, Vertex& vertex,
                                                    std::vector<std::string>& anomalies) {
  const std::string path = vertex_path + "/backpressure";
  auto answer = co_await http_->Get(path, deadline);
  if (!answer || answer->status != 200) {
    anomalies.push_back("GET " + path + ": " + Describe(answer));
    co_return;
  }
  auto busiest = ParseBusiestSubtask(answer->body, &anomalies);
  if (!busiest) {
    anomalies.push_back(busiest.error().message);
    co_return;
  }
  vertex.load->busiest_subtask = *busiest;
}

asio::awaitable<void> Collector::PollJob(std::shared_ptr<PollState> state, std::size_t index) {
  const JobOverview& overview = state->jobs[index];
  JobOutcome& outcome = state->outcomes[index];
  const Clock::time_point deadline = state->deadline;
  const bool running = overview.state == "RUNNING";
  FlinkJob job;
  job.overview = overview;
  job.read_committed =
      std::any_of(cluster_.read_committed_jobs.begin(), cluster_.read_committed_jobs.end(),
                  [&](const config::Pattern& pattern) { return pattern.FullMatch(overview.name); });
  const std::string base = "/jobs/" + PercentEncode(overview.id);

  // Each step that fails the job has set outcome.job to why.
  if (!co_await ReadJobVertices(base, running, deadline, job, outcome)) co_return;
  co_await ReadNumRestarts(base, deadline, job, outcome.anomalies);
  if (!co_await ReadCheckpoints(base, running, deadline, job, outcome)) co_return;
  if (running && !co_await ReadSources(deadline, job, outcome)) co_return;
  if (running && state->inspect.contains(overview.id)) {
    co_await ReadVertexLoads(base, deadline, job, outcome.anomalies);
  }
  outcome.job = std::move(job);
}

asio::awaitable<Result<SourceReader>> Collector::PollSource(const std::string& job_id,
                                                            const Vertex& vertex,
                                                            Clock::time_point deadline,
                                                            std::vector<std::string>& anomalies) {
  const std::string base =
      "/jobs/" + PercentEncode(job_id) + "/vertices/" + PercentEncode(vertex.id) + "/metrics";
  auto listed = co_await http_->Get(base, deadline);
  if (!listed) co_return Error{"GET " + base + ": " + listed.error().message};
  if (listed->status != 200)
    co_return Error{"GET " + base + ": HTTP " + std::to_string(listed->status)};
  auto ids = ParseMetricIds(listed->body);
  if (!ids) co_return ids.error();
  std::vector<std::string> wanted;
  for (const std::string& id : *ids) {
    if (ClassifySourceMetricId(id)) wanted.push_back(id);
  }
  std::map<std::string, std::optional<double>> values;
  for (const std::string& batch : BatchMetricQueries(wanted, kMaxQueryBytes)) {
    auto answer = co_await http_->Get(base + "?get=" + batch, deadline);
    if (!answer) co_return Error{"GET " + base + "?get=...: " + answer.error().message};
    if (answer->status != 200)
      co_return Error{"GET " + base + "?get=...: HTTP " + std::to_string(answer->status)};
    auto parsed = ParseMetricValues(answer->body);
    if (!parsed) co_return parsed.error();
    values.merge(*parsed);
  }
  co_return CombineSourceMetrics(vertex.id, vertex.name, values, &anomalies);
}

}  // namespace lagsight::flink
