#include "flink/collector.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "flink/rest_parsers.h"

namespace lagsight::flink {

namespace asio = boost::asio;

namespace {

// Percent-encodes all but unreserved characters; ',' separates ids in `get=` and stays literal.
std::string EncodeQueryValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Flink URLs (and many proxies) cope with a few KiB; stay well below.
constexpr std::size_t kMaxQueryBytes = 3000;

bool LooksLikeSource(const Vertex& vertex) {
  return vertex.name.find("Source:") != std::string::npos;
}

}  // namespace

bool IsTerminalJobState(std::string_view state) {
  return state == "FINISHED" || state == "CANCELED" || state == "FAILED";
}

std::vector<std::string> BatchMetricQueries(const std::vector<std::string>& ids,
                                            std::size_t max_query_bytes) {
  std::vector<std::string> batches;
  std::string current;
  for (const std::string& id : ids) {
    const std::string encoded = EncodeQueryValue(id);
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

asio::awaitable<Result<FlinkSnapshot>> Collector::Poll() {
  auto overview_response = co_await http_->Get("/jobs/overview");
  if (!overview_response)
    co_return Error{"GET /jobs/overview: " + overview_response.error().message};
  if (overview_response->status != 200) {
    co_return Error{"GET /jobs/overview: HTTP " + std::to_string(overview_response->status)};
  }
  auto overviews = ParseJobsOverview(overview_response->body);
  if (!overviews) co_return overviews.error();

  std::vector<JobOverview> live;
  for (JobOverview& job : *overviews) {
    if (!IsTerminalJobState(job.state) && cluster_.jobs.Accepts(job.name))
      live.push_back(std::move(job));
  }
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.id < b.id; });

  // Poll the jobs concurrently; the HTTP client bounds the requests actually in flight.
  std::vector<Result<FlinkJob>> jobs(live.size(), Error{"not polled"});
  if (!live.empty()) {
    const auto executor = co_await asio::this_coro::executor;
    std::size_t remaining = live.size();
    asio::steady_timer all_done(executor, std::chrono::steady_clock::time_point::max());
    for (std::size_t i = 0; i < live.size(); ++i) {
      asio::co_spawn(executor, PollJob(live[i], jobs[i]), [&](std::exception_ptr) {
        if (--remaining == 0) all_done.cancel();
      });
    }
    boost::system::error_code ignored;
    co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }

  FlinkSnapshot snapshot;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (jobs[i]) {
      snapshot.jobs.push_back(std::move(jobs[i]).value());
    } else {
      snapshot.partial_errors.push_back("job " + live[i].id + " (" + live[i].name +
                                        "): " + jobs[i].error().message);
    }
  }
  co_return snapshot;
}

asio::awaitable<void> Collector::PollJob(const JobOverview& overview, Result<FlinkJob>& out) {
  FlinkJob job;
  job.overview = overview;
  const std::string base = "/jobs/" + overview.id;

  auto details = co_await http_->Get(base);
  if (!details || details->status != 200) {
    out = Error{"GET " + base + ": " +
                (details ? "HTTP " + std::to_string(details->status) : details.error().message)};
    co_return;
  }
  auto vertices = ParseJobVertices(details->body);
  if (!vertices) {
    out = vertices.error();
    co_return;
  }
  job.vertices = std::move(vertices).value();

  auto checkpoints = co_await http_->Get(base + "/checkpoints");
  if (!checkpoints) {
    out = Error{"GET " + base + "/checkpoints: " + checkpoints.error().message};
    co_return;
  }
  auto stats = ParseCheckpoints(checkpoints->status, checkpoints->body);
  if (!stats) {
    out = stats.error();
    co_return;
  }
  job.checkpoints = std::move(stats).value();

  auto config_response = co_await http_->Get(base + "/checkpoints/config");
  if (!config_response) {
    out = Error{"GET " + base + "/checkpoints/config: " + config_response.error().message};
    co_return;
  }
  auto config = ParseCheckpointConfig(config_response->status, config_response->body);
  if (!config) {
    out = config.error();
    co_return;
  }
  job.checkpoint_config = std::move(config).value();
  // Only the configuration tells "disabled" apart from "none completed yet" (Flink 1.20/2.x).
  job.checkpoints.enabled = job.checkpoints.enabled && job.checkpoint_config.enabled;

  if (overview.state == "RUNNING") {
    for (const Vertex& vertex : job.vertices) {
      if (!LooksLikeSource(vertex)) continue;
      auto reader = co_await PollSource(overview.id, vertex);
      if (!reader) {
        out = Error{"source vertex \"" + vertex.name + "\": " + reader.error().message};
        co_return;
      }
      // A source vertex without KafkaSourceReader metrics reads something else than Kafka.
      if (!reader->partitions.empty() || reader->commits_succeeded || reader->commits_failed) {
        job.sources.push_back(std::move(reader).value());
      }
    }
  }
  out = std::move(job);
}

asio::awaitable<Result<SourceReader>> Collector::PollSource(const std::string& job_id,
                                                            const Vertex& vertex) {
  const std::string base = "/jobs/" + job_id + "/vertices/" + vertex.id + "/metrics";
  auto listed = co_await http_->Get(base);
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
    auto answer = co_await http_->Get(base + "?get=" + batch);
    if (!answer) co_return Error{"GET " + base + "?get=...: " + answer.error().message};
    if (answer->status != 200)
      co_return Error{"GET " + base + "?get=...: HTTP " + std::to_string(answer->status)};
    auto parsed = ParseMetricValues(answer->body);
    if (!parsed) co_return parsed.error();
    values.merge(*parsed);
  }
  co_return CombineSourceMetrics(vertex.id, vertex.name, values);
}

}  // namespace lagsight::flink
