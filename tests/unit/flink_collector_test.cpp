// flink::Collector against a fake HttpFetch: which requests a poll makes (ids validated and
// percent-encoded), which jobs it keeps (non-terminal states, the restart count, the metrics
// fetch interval) and that a poll overrunning its deadline fails as a whole.
// clang-format off
#include "common/awaitable.h"
// clang-format on
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "flink/collector.h"
#include "flink/job_graph_parsers.h"

namespace {

namespace asio = boost::asio;
using namespace lagsight;
using namespace lagsight::flink;
using Clock = std::chrono::steady_clock;

constexpr const char* kRunningId = "0123456789abcdef0123456789abcdef";
constexpr const char* kRestartingId = "11111111111111111111111111111111";
constexpr const char* kFinishedId = "22222222222222222222222222222222";
constexpr const char* kSourceVertex = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

// Answers from a table of target -> response; every target asked for is recorded. An optional
// delay per request stands in for a slow server, cut short at the request's deadline as the real
// client does.
class FakeHttp final : public HttpFetch {
 public:
  FakeHttp() { answers["/jobmanager/config"] = {200, "[]"}; }

  std::map<std::string, HttpResponse> answers;
  std::vector<std::string> requested;
  std::chrono::milliseconds delay{0};
  // Answers the metric store's refresh witness: its n-th request (from 0) gets witness(n).
  std::function<HttpResponse(int)> witness;
  int witness_requests = 0;
  std::chrono::milliseconds witness_delay{0};  // before each witness answer

  asio::awaitable<Result<HttpResponse>> Get(std::string target,
                                            Clock::time_point deadline) override {
    requested.push_back(target);
    if (delay.count() > 0) {
      asio::steady_timer timer(co_await asio::this_coro::executor,
                               std::min(deadline, Clock::now() + delay));
      co_await timer.async_wait(asio::use_awaitable);
      if (Clock::now() >= deadline) co_return Error{"deadline"};
    }
    if (witness && target == "/jobmanager/metrics?get=Status.JVM.CPU.Time") {
      if (witness_delay.count() > 0) {
        asio::steady_timer timer(co_await asio::this_coro::executor,
                                 std::min(deadline, Clock::now() + witness_delay));
        co_await timer.async_wait(asio::use_awaitable);
        if (Clock::now() >= deadline) co_return Error{"deadline"};
      }
      co_return witness(witness_requests++);
    }
    const auto found = answers.find(target);
    if (found == answers.end()) co_return HttpResponse{404, R"({"errors":["Not found"]})"};
    co_return found->second;
  }
};

std::string Overview(const std::vector<std::pair<std::string, std::string>>& id_states) {
  std::string jobs;
  for (const auto& [id, state] : id_states) {
    if (!jobs.empty()) jobs += ",";
    jobs += R"({"jid":")" + id + R"(","name":"job-)" + state + R"(","state":")" + state +
            R"(","start-time":1700000000000,"end-time":-1,"last-modification":1700000005000})";
  }
  return R"({"jobs":[)" + jobs + "]}";
}

// A healthy job with one Kafka source vertex, as far as the collector reads it.
void AddJob(FakeHttp& http, const std::string& id, const std::string& vertex_id = kSourceVertex) {
  const std::string base = "/jobs/" + id;
  http.answers[base] = {200, R"({"vertices":[{"id":")" + vertex_id +
                                 R"(","name":"Source: orders","parallelism":1}]})"};
  http.answers[base + "/metrics?get=numRestarts"] = {200, R"([{"id":"numRestarts","value":"3"}])"};
  http.answers[base + "/checkpoints"] = {
      200, R"({"counts":{"completed":4,"failed":0,"restored":0,"in_progress":0}})"};
  http.answers[base + "/checkpoints/config"] = {200, R"({"interval":1000,"timeout":60000})"};
  const std::string metrics = base + "/vertices/" + vertex_id + "/metrics";
  const std::string offset = "0.Source__orders.KafkaSourceReader.topic.orders.partition.0.";
  http.answers[metrics] = {200, R"([{"id":")" + offset + R"(currentOffset"}])"};
  http.answers[metrics + "?get=" + offset + "currentOffset"] = {
      200, R"([{"id":")" + offset + R"(currentOffset","value":"41"}])"};
}

config::FlinkClusterConfig Cluster() {
  config::FlinkClusterConfig cluster;
  cluster.name = "test";
  cluster.rest_url = "http://127.0.0.1:1";
  cluster.request_timeout = std::chrono::milliseconds(200);
  return cluster;
}

Result<FlinkSnapshot> RunPoll(Collector& collector) {
  asio::io_context io;
  std::optional<Result<FlinkSnapshot>> out;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out = co_await collector.Poll(); }, asio::detached);
  io.run();
  REQUIRE(out.has_value());
  return std::move(*out);
}

bool AnyContains(const std::vector<std::string>& texts, std::string_view part) {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const std::string& text) { return text.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("job and vertex ids that are not Flink ids never reach a request path", "[flink]") {
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  const std::vector<std::string> hostile = {"../../jobmanager/config",
                                            "0123456789abcdef0123456789abcde?",
                                            "abc#frag",
                                            "0123456789abcdef0123456789abcdef\r\nHost: evil",
                                            "0123456789ABCDEF0123456789ABCDEF",
                                            ""};
  std::vector<std::pair<std::string, std::string>> listed = {{kRunningId, "RUNNING"}};
  for (const std::string& id : hostile) listed.emplace_back(id, "RUNNING");
  // JSON-escape the CR LF of the header-injection id.
  std::string overview = Overview(listed);
  for (std::size_t at; (at = overview.find("\r\n")) != std::string::npos;)
    overview.replace(at, 2, "\\r\\n");
  fake.answers["/jobs/overview"] = {200, overview};
  AddJob(fake, kRunningId, "../vertex/../../x");
  Collector collector(Cluster(), std::move(http));

  const auto snapshot = RunPoll(collector);
  REQUIRE(snapshot.ok());
  REQUIRE(snapshot->jobs.size() == 1);
  CHECK(snapshot->jobs[0].overview.id == kRunningId);
  CHECK(snapshot->jobs[0].sources.empty());  // its source vertex had a bad id
  // One partial error per bad job id and one for the bad vertex id.
  CHECK(snapshot->partial_errors.size() == hostile.size() + 1);
  CHECK(AnyContains(snapshot->partial_errors, "not a Flink job id"));
  CHECK(AnyContains(snapshot->partial_errors, "not a Flink vertex id"));
  for (const std::string& error : snapshot->partial_errors) {
    CHECK(error.find('\r') == std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  }
  for (const std::string& target : fake.requested) {
    INFO(target);
    CHECK(target.find("..") == std::string::npos);
    CHECK(target.find('#') == std::string::npos);
    CHECK(target.find('\r') == std::string::npos);
    CHECK(target.find("vertices") == std::string::npos);
  }
}

TEST_CASE("metric ids are percent-encoded in ?get= and ids with ',' are left out", "[flink]") {
  const auto batches = BatchMetricQueries(
      {"0.a b&c=d#e?f/g%h", "0.x,y", "0.KafkaSourceReader.topic.t\r\nX.partition.0.currentOffset"},
      3000);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0] ==
        "0.a%20b%26c%3Dd%23e%3Ff%2Fg%25h,0.KafkaSourceReader.topic.t%0D%0AX.partition.0."
        "currentOffset");
  CHECK(PercentEncode("../x") == "..%2Fx");
  CHECK(IsFlinkId(kRunningId));
  CHECK_FALSE(IsFlinkId("0123456789ABCDEF0123456789ABCDEF"));
  CHECK_FALSE(IsFlinkId("0123456789abcdef0123456789abcde"));
}

TEST_CASE("non-terminal jobs that are not running are kept without source metrics", "[flink]") {
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  fake.answers["/jobs/overview"] = {
      200, Overview({{kRunningId, "RUNNING"},
                     {kRestartingId, "RESTARTING"},
                     {kFinishedId, "FINISHED"},
                     {"33333333333333333333333333333333", "FAILED"},
                     {"44444444444444444444444444444444", "CANCELED"},
                     {"55555555555555555555555555555555", "INITIALIZING"}})};
  AddJob(fake, kRunningId);
  AddJob(fake, kRestartingId);
  fake.answers[std::string("/jobs/") + kRestartingId + "/metrics?get=numRestarts"] = {
      200, R"([{"id":"numRestarts","value":"17"}])"};
  // INITIALIZING: Flink answers nothing useful yet; the job is kept all the same.
  Collector collector(Cluster(), std::move(http));

  const auto snapshot = RunPoll(collector);
  REQUIRE(snapshot.ok());
  REQUIRE(snapshot->jobs.size() == 3);
  const FlinkJob& running = snapshot->jobs[0];
  const FlinkJob& restarting = snapshot->jobs[1];
  const FlinkJob& initializing = snapshot->jobs[2];
  CHECK(running.overview.state == "RUNNING");
  CHECK(running.overview.num_restarts == 3);
  CHECK(running.overview.last_modification_ms == 1700000005000);
  REQUIRE(running.sources.size() == 1);
  CHECK(running.sources[0].partitions.begin()->second.current == 41);

  CHECK(restarting.overview.state == "RESTARTING");
  CHECK(restarting.overview.num_restarts == 17);
  CHECK(restarting.overview.start_time_ms == 1700000000000);
  CHECK(restarting.checkpoint_stats_reported);
  CHECK(restarting.checkpoints.counts.completed == 4);
  CHECK(restarting.sources.empty());
  CHECK(initializing.overview.state == "INITIALIZING");
  CHECK_FALSE(initializing.checkpoint_stats_reported);
  CHECK_FALSE(initializing.overview.num_restarts.has_value());

  for (const std::string& target : fake.requested) {
    INFO(target);
    CHECK(target.find(kFinishedId) == std::string::npos);
    // No vertex metrics for any job but the running one.
    if (target.find("/vertices/") != std::string::npos) CHECK(target.find(kRunningId) == 6);
  }
}

TEST_CASE("the metrics fetch interval comes from /jobmanager/config, read every 10th poll",
          "[flink]") {
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  fake.answers["/jobs/overview"] = {200, Overview({})};
  fake.answers["/jobmanager/config"] = {200, R"([{"key":"rest.port","value":"8081"},
               {"key":"metrics.fetcher.update-interval","value":"2 s"}])"};
  Collector collector(Cluster(), std::move(http));
  for (int poll = 0; poll < 11; ++poll) {
    const auto snapshot = RunPoll(collector);
    REQUIRE(snapshot.ok());
    CHECK(snapshot->metrics_fetch_interval_ms == 2000);
  }
  CHECK(std::count(fake.requested.begin(), fake.requested.end(), "/jobmanager/config") == 2);

  auto http_default = std::make_unique<FakeHttp>();
  http_default->answers["/jobs/overview"] = {200, Overview({})};
  http_default->answers["/jobmanager/config"] = {200, R"([{"key":"rest.port","value":"8081"}])"};
  Collector default_collector(Cluster(), std::move(http_default));
  CHECK(RunPoll(default_collector)->metrics_fetch_interval_ms == 10000);
}

TEST_CASE("a poll that overruns its deadline fails as a whole and ends at the deadline",
          "[flink]") {
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  std::vector<std::pair<std::string, std::string>> listed;
  for (int i = 0; i < 20; ++i) {
    char id[33];
    std::snprintf(id, sizeof id, "%032x", i + 1);
    listed.emplace_back(id, "RUNNING");
    AddJob(fake, id);
  }
  fake.answers["/jobs/overview"] = {200, Overview(listed)};
  fake.delay = std::chrono::milliseconds(150);  // 6 sequential requests per job: 900 ms
  Collector collector(Cluster(), std::move(http));
  REQUIRE(collector.PollTimeout() == std::chrono::milliseconds(600));

  const auto started = Clock::now();
  const auto snapshot = RunPoll(collector);
  const auto took = Clock::now() - started;
  REQUIRE_FALSE(snapshot.ok());
  CHECK(snapshot.error().message.find("did not finish within 600 ms") != std::string::npos);
  CHECK(took >= std::chrono::milliseconds(600));
  CHECK(took < std::chrono::milliseconds(900));
}

TEST_CASE("impossible numbers from Flink become partial errors of the poll", "[flink]") {
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  fake.answers["/jobs/overview"] = {200, Overview({{kRunningId, "RUNNING"}})};
  AddJob(fake, kRunningId);
  fake.answers[std::string("/jobs/") + kRunningId + "/metrics?get=numRestarts"] = {
      200, R"([{"id":"numRestarts","value":"9223372036854775808"}])"};
  fake.answers[std::string("/jobs/") + kRunningId + "/checkpoints"] = {
      200, R"({"counts":{"completed":-5,"failed":1e300,"restored":0,"in_progress":0}})"};
  Collector collector(Cluster(), std::move(http));
  const auto snapshot = RunPoll(collector);
  REQUIRE(snapshot.ok());
  REQUIRE(snapshot->jobs.size() == 1);
  CHECK_FALSE(snapshot->jobs[0].overview.num_restarts.has_value());
  CHECK(snapshot->jobs[0].checkpoints.counts.completed == 0);
  CHECK(snapshot->jobs[0].checkpoints.counts.failed == 0);
  CHECK(snapshot->partial_errors.size() == 3);
}

TEST_CASE("a shard reads only the jobs it owns: mapped ones where their group is", "[flink]") {
  std::map<std::string, int> owner;  // job name -> the shard that read it
  for (int index = 0; index < 2; ++index) {
    auto http = std::make_unique<FakeHttp>();
    FakeHttp& fake = *http;
    fake.answers["/jobs/overview"] = {200, Overview({{kRunningId, "RUNNING"},
                                                     {kRestartingId, "RESTARTING"},
                                                     {kFinishedId, "CREATED"}})};
    AddJob(fake, kRunningId);
    AddJob(fake, kRestartingId);
    AddJob(fake, kFinishedId);
    config::FlinkClusterConfig cluster = Cluster();
    cluster.shard = {index, 2};
    // FNV-1a 64 modulo 2 puts the group "app" on shard 0, and the name "job-CREATED" on shard 1.
    cluster.groups.push_back({*config::Pattern::Compile("job-CREATED"), "app", "", std::nullopt});
    Collector collector(cluster, std::move(http));
    const auto snapshot = RunPoll(collector);
    REQUIRE(snapshot.ok());
    for (const FlinkJob& job : snapshot->jobs) {
      CHECK(owner.emplace(job.overview.name, index).second);  // no job on two shards
    }
    for (const std::string& target : fake.requested) {
      if (target.rfind("/jobs/", 0) != 0 || target == "/jobs/overview") continue;
      const std::string id = target.substr(6, 32);
      const bool owned = std::any_of(snapshot->jobs.begin(), snapshot->jobs.end(),
                                     [&](const FlinkJob& job) { return job.overview.id == id; });
      INFO(target);
      CHECK(owned);  // nothing is asked of another shard's job
    }
  }
  CHECK(owner.size() == 3);
  CHECK(owner["job-CREATED"] == 0);  // with its group, not by its own name's hash
  CHECK(config::Shard{1, 2}.Owns("job-CREATED"));
  CHECK(config::Shard{0, 2}.Owns("app"));
}

// 100 jobs of 20 vertices each (a source and 19 operators): what reading the vertices' load costs
// per poll. Nothing while no job is behind; one request per vertex of each job behind, and one
// more per skewed vertex (which subtask is busiest); bounded at kMaxInspectedJobs however many
// are behind.
TEST_CASE("vertex loads cost one request per vertex of each job behind, and are bounded",
          "[flink][bottleneck]") {
  constexpr int kJobs = 100;
  constexpr int kVertices = 20;
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  std::vector<std::pair<std::string, std::string>> listed;
  std::vector<std::string> ids;
  for (int j = 0; j < kJobs; ++j) {
    char id[33];
    std::snprintf(id, sizeof id, "%032x", j + 1);
    ids.emplace_back(id);
    listed.emplace_back(id, "RUNNING");
    AddJob(fake, id);
    std::string vertices =
        R"({"id":")" + std::string(kSourceVertex) + R"(","name":"Source: orders","parallelism":1})";
    for (int v = 1; v < kVertices; ++v) {
      char vid[33];
      std::snprintf(vid, sizeof vid, "%032x", 1000 + v);
      vertices += R"(,{"id":")" + std::string(vid) + R"(","name":"op","parallelism":4})";
      // The last operator is skewed: its busiest subtask is asked for, one request more.
      const bool skewed = v == kVertices - 1;
      const std::string vertex_path = "/jobs/" + ids.back() + "/vertices/" + vid;
      fake.answers[vertex_path + "/subtasks/metrics?" + VertexLoadQuery()] = {
          200, skewed ? R"([{"id":"busyTimeMsPerSecond","max":990,"avg":300,"sum":1200}])"
                      : R"([{"id":"busyTimeMsPerSecond","max":990,"avg":900,"sum":3600}])"};
      if (skewed) {
        fake.answers[vertex_path + "/backpressure"] = {
            200, R"({"status":"ok","subtasks":[{"subtask":0,"busyRatio":0.1},)"
                 R"({"subtask":2,"busyRatio":0.99},{"subtask":1,"busyRatio":0.1}]})"};
      }
    }
    fake.answers["/jobs/" + ids.back()] = {200, R"({"vertices":[)" + vertices + "]}"};
  }
  fake.answers["/jobs/overview"] = {200, Overview(listed)};
  Collector collector(Cluster(), std::move(http));
  const auto load_requests = [&] {
    return std::count_if(fake.requested.begin(), fake.requested.end(), [](const std::string& t) {
      return t.find("/subtasks/metrics?") != std::string::npos;
    });
  };

  REQUIRE(RunPoll(collector).ok());
  const auto baseline = fake.requested.size();
  CHECK(load_requests() == 0);

  fake.requested.clear();
  collector.InspectJobs({ids[3], ids[42], "not-listed"});
  const auto two_behind = RunPoll(collector);
  REQUIRE(two_behind.ok());
  CHECK(load_requests() == 2 * kVertices);
  // No /jobmanager/config now, nor a metric store refresh (asked for within the fetch
  // interval); a /backpressure per job for its skewed vertex.
  CHECK(fake.requested.size() == baseline - 2 + 2 * (kVertices + 1));
  for (const FlinkJob& job : two_behind->jobs) {
    const bool inspected = job.overview.id == ids[3] || job.overview.id == ids[42];
    CHECK(job.vertices[5].load.has_value() == inspected);
    CHECK_FALSE((inspected && job.vertices[5].load->busiest_subtask));
    if (inspected) CHECK(job.vertices[kVertices - 1].load->busiest_subtask == 2);
  }

  fake.requested.clear();
  collector.InspectJobs(std::set<std::string>(ids.begin(), ids.end()));
  const auto all_behind = RunPoll(collector);
  REQUIRE(all_behind.ok());
  CHECK(load_requests() == static_cast<long>(Collector::kMaxInspectedJobs) * kVertices);
  CHECK(AnyContains(all_behind->partial_errors, "100 jobs are behind"));
  const auto all_requests = fake.requested.size();
  WARN("requests per poll: " << baseline << " with none behind, +" << 2 * (kVertices + 1)
                             << " with 2 behind, +" << all_requests - (baseline - 2)
                             << " at the bound");
}

TEST_CASE("a job's metrics are read once the metric store's refresh has landed", "[flink]") {
  // Flink answers the request that starts a refresh from the old store: the witness (the
  // JobManager's CPU time) keeps its old value until the refresh lands, here at its 4th answer.
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  fake.answers["/jobs/overview"] = {200, Overview({{kRunningId, "RUNNING"}})};
  AddJob(fake, kRunningId);
  const auto cpu_time = [](int value) {
    return HttpResponse{
        200, R"([{"id":"Status.JVM.CPU.Time","value":")" + std::to_string(value) + R"("}])"};
  };
  fake.witness = [&](int n) { return cpu_time(n < 3 ? 7 : 8); };
  config::FlinkClusterConfig cluster = Cluster();
  cluster.request_timeout = std::chrono::seconds(2);  // the poll may take 6 s: a third is 2 s
  Collector collector(cluster, std::move(http));
  const auto witness_at = [&] {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < fake.requested.size(); ++i) {
      if (fake.requested[i].starts_with("/jobmanager/metrics")) at.push_back(i);
    }
    return at;
  };
  const auto first_source_read = [&] {
    for (std::size_t i = 0; i < fake.requested.size(); ++i) {
      if (fake.requested[i].find("/vertices/") != std::string::npos) return i;
    }
    return fake.requested.size();
  };

  REQUIRE(RunPoll(collector).ok());
  const std::vector<std::size_t> asked = witness_at();
  REQUIRE(asked.size() == 4);  // the request that starts it, then until the value changed
  CHECK(asked.back() < first_source_read());

  SECTION("within the fetch interval Flink would not refresh: nothing is asked, nothing waits") {
    fake.requested.clear();
    REQUIRE(RunPoll(collector).ok());
    CHECK(witness_at().empty());
  }
}

TEST_CASE("a refresh that never lands, or no witness, costs at most a second", "[flink]") {
  auto http = std::make_unique<FakeHttp>();
  FakeHttp& fake = *http;
  fake.answers["/jobs/overview"] = {200, Overview({{kRunningId, "RUNNING"}})};
  AddJob(fake, kRunningId);
  bool witness_known = true;
  fake.witness = [&](int) {
    return witness_known ? HttpResponse{200, R"([{"id":"Status.JVM.CPU.Time","value":"7"}])"}
                         : HttpResponse{200, "[]"};
  };
  config::FlinkClusterConfig cluster = Cluster();
  cluster.request_timeout = std::chrono::seconds(2);
  Collector collector(cluster, std::move(http));

  SECTION("the value never changes: checked every 100 ms for a second, then the poll goes on") {
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(RunPoll(collector).ok());
    // The first, then one every 100 ms for a second (the timer's own delays may cost one).
    CHECK(fake.witness_requests >= 10);
    CHECK(fake.witness_requests <= 11);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
  }
  SECTION("a JobManager slow to answer it: given up after a second, the jobs are read") {
    fake.witness_delay = std::chrono::seconds(5);
    const auto started = std::chrono::steady_clock::now();
    const auto polled = RunPoll(collector);
    REQUIRE(polled.ok());
    CHECK(polled->jobs.size() == 1);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
    CHECK(std::count(fake.requested.begin(), fake.requested.end(),
                     "/jobmanager/metrics?get=Status.JVM.CPU.Time") == 1);
  }
  SECTION("the JobManager has no such metric: asked once, no wait") {
    witness_known = false;
    REQUIRE(RunPoll(collector).ok());
    CHECK(fake.witness_requests == 1);
  }
}
