// The bottleneck rule and the catch-up arithmetic (analysis/bottleneck.h) on the job graph and
// vertex loads of real Flink 1.20 and 2.x MiniClusters (tests/unit/testdata/flink-job-graph,
// recorded by tests/harness/record_job_graph_fixtures.py): a job whose map sleeps 5 ms
// per record at parallelism 2 while 300 records/s arrive on 4 partitions, a job that keeps
// up with 50 records/s, and a job at parallelism 4 whose partition 0 gets 17 of every 20 records
// and holds the whole backlog (skew). Then the cases a recording cannot hold still: limits.
#include "analysis/bottleneck.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/findings.h"
#include "flink/job_graph_parsers.h"
#include "trace/trace_format.h"

namespace {

namespace fs = std::filesystem;
using namespace lagsight;

std::string Recorded(const std::string& line, const std::string& file) {
  std::ifstream in(fs::path(LAGSIGHT_TEST_DATA) / "flink-job-graph" / line / file);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The recorded job `name` (slow_map, healthy or hot_partition) with each vertex's recorded load,
// and the busiest subtask where the load looks skewed, as the collector reads them.
flink::FlinkJob RecordedJob(const std::string& line, const std::string& name) {
  flink::FlinkJob job;
  auto vertices = flink::ParseJobVertices(Recorded(line, name + "_job.json"));
  REQUIRE(vertices.ok());
  job.vertices = std::move(vertices).value();
  REQUIRE(job.vertices.size() == 2);
  for (flink::Vertex& vertex : job.vertices) {
    const std::string kind = vertex.inputs.empty() ? "source" : "map";
    std::vector<std::string> anomalies;
    auto load =
        flink::ParseVertexLoad(Recorded(line, name + "_" + kind + "_load.json"), &anomalies);
    REQUIRE(load.ok());
    CHECK(anomalies.empty());
    vertex.load = *load;
    if (flink::LooksSkewed(vertex)) {
      auto busiest = flink::ParseBusiestSubtask(
          Recorded(line, name + "_" + kind + "_backpressure.json"), &anomalies);
      REQUIRE(busiest.ok());
      vertex.load->busiest_subtask = *busiest;
    }
  }
  return job;
}

// Flink's own answer of which subtask of the vertex is the most backpressured (the source
// subtask that holds the hot partition), from the recorded GET .../backpressure.
int MostBackpressuredSubtask(const std::string& line, const std::string& file) {
  const std::string text = Recorded(line, file);
  int most = -1;
  double highest = -1;
  std::size_t at = 0;
  while ((at = text.find("\"subtask\":", at)) != std::string::npos) {
    const int index = std::stoi(text.substr(at + 10));
    const std::size_t ratio_at = text.find("\"ratio\":", at);
    const double ratio = std::stod(text.substr(ratio_at + 8));
    if (ratio > highest) {
      highest = ratio;
      most = index;
    }
    at = ratio_at;
  }
  return most;
}

flink::Vertex Loaded(std::string id, std::vector<std::string> inputs, int parallelism,
                     double busy_max, double busy_avg, double backpressured, double rate) {
  flink::Vertex vertex;
  vertex.id = id;
  vertex.name = "vertex " + id;
  vertex.parallelism = parallelism;
  vertex.max_parallelism = 128;
  vertex.inputs = std::move(inputs);
  flink::VertexLoad load;
  load.busy_ms_max = busy_max;
  load.busy_ms_avg = busy_avg;
  load.backpressured_ms_max = backpressured;
  load.records_in_per_second_sum = vertex.inputs.empty() ? std::optional<double>() : rate;
  load.records_out_per_second_sum = rate;
  vertex.load = load;
  return vertex;
}

}  // namespace

TEST_CASE("the job graph and vertex loads of both Flink lines parse", "[flink][bottleneck]") {
  for (const std::string line : {"1.20", "2.x"}) {
    CAPTURE(line);
    const flink::FlinkJob job = RecordedJob(line, "slow_map");
    const flink::Vertex& source = job.vertices[0];
    const flink::Vertex& map = job.vertices[1];
    CHECK(source.name == "Source: slowjob-source");
    CHECK(source.inputs.empty());
    CHECK(map.inputs == std::vector<std::string>{source.id});  // the plan's edge
    CHECK(map.forward_inputs == map.inputs);                   // source -> map is FORWARD
    CHECK(map.parallelism == 2);
    CHECK(map.max_parallelism == 128);
    REQUIRE(map.load->busy_ms_max);
    CHECK(*map.load->busy_ms_max > 900);               // sleeping 5 ms per record, flat out
    CHECK(*source.load->backpressured_ms_max >= 900);  // waiting for the map
    CHECK(*map.load->records_in_per_second_sum > 200);
  }
  // Flink answers [] for a vertex that reported nothing yet (1.20's idle source of the healthy
  // job, 45 s after it started): nothing known, no error.
  const auto empty = flink::ParseVertexLoad("[]");
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->busy_ms_max.has_value());
}

TEST_CASE("the vertex load parser leaves out the impossible and refuses garbage",
          "[flink][bottleneck]") {
  std::vector<std::string> anomalies;
  const auto load = flink::ParseVertexLoad(
      R"([{"id":"busyTimeMsPerSecond","max":5000,"avg":-3,"sum":9000},
          {"id":"numRecordsInPerSecond","sum":"NaN"},{"id":"idleTimeMsPerSecond","avg":"12"},
          {"nothing":1},7])",
      &anomalies);
  REQUIRE(load.ok());
  CHECK_FALSE(load->busy_ms_max.has_value());
  CHECK_FALSE(load->busy_ms_avg.has_value());
  CHECK_FALSE(load->records_in_per_second_sum.has_value());
  CHECK(load->idle_ms_avg == 12);
  CHECK(anomalies.size() == 2);
  CHECK_FALSE(flink::ParseVertexLoad("{}").ok());
  CHECK_FALSE(flink::ParseVertexLoad("not json").ok());
}

TEST_CASE("the bottleneck of recorded jobs: the slow map, never the waiting source",
          "[analysis][bottleneck]") {
  for (const std::string line : {"1.20", "2.x"}) {
    CAPTURE(line);
    const flink::FlinkJob job = RecordedJob(line, "slow_map");
    const auto slow = analysis::FindBottleneck(job);
    REQUIRE(slow);
    CHECK(slow->vertex_name.starts_with("slowjob-map"));
    CHECK_FALSE(slow->source);
    CHECK_FALSE(slow->skewed);
    CHECK(slow->parallelism == 2);
    // Fed by the source through a FORWARD edge: no more useful subtasks than partitions.
    CHECK(slow->bounded_by_partitions);
    const auto plan = analysis::PlanCatchUp(*slow, 300, 100'000, 60, 4);
    CHECK_FALSE(plan.parallelism);
    CHECK_THAT(plan.unknown, Catch::Contains("more subtasks than the 4 partitions"));
    REQUIRE(slow->capacity_per_second);
    // Records in over busy time (e.g. 261 records/s at 97.5 % busy); sleeping 5 ms a record,
    // each of the 2 subtasks can do fewer than 200 a second.
    const flink::VertexLoad& load = *job.vertices[1].load;
    CHECK(*slow->capacity_per_second ==
          Approx(*load.records_in_per_second_sum / (*load.busy_ms_avg / 1000)));
    CHECK(*slow->capacity_per_second > 150);
    CHECK(*slow->capacity_per_second < 400);
    CHECK_FALSE(analysis::FindBottleneck(RecordedJob(line, "healthy")));
  }
}

TEST_CASE("a busy source that is not backpressured is its own bottleneck; an idle job has none",
          "[analysis][bottleneck]") {
  flink::FlinkJob job;
  job.vertices = {Loaded("s", {}, 2, 950, 940, 0, 500), Loaded("m", {"s"}, 2, 300, 280, 0, 500)};
  const auto found = analysis::FindBottleneck(job);
  REQUIRE(found);
  CHECK(found->vertex_id == "s");
  CHECK(found->source);
  // Backpressured itself: waiting on downstream, which is not busy either (e.g. a slow sink
  // outside Flink's metrics) - no vertex is named rather than the wrong one.
  job.vertices = {Loaded("s", {}, 1, 0, 0, 900, 50), Loaded("m", {"s"}, 1, 600, 600, 700, 50)};
  CHECK_FALSE(analysis::FindBottleneck(job));
  job.vertices = {Loaded("s", {}, 1, 10, 10, 0, 50), Loaded("m", {"s"}, 1, 20, 20, 0, 50)};
  CHECK_FALSE(analysis::FindBottleneck(job));
}

TEST_CASE("the parallelism that catches up, and when it cannot be known",
          "[analysis][bottleneck]") {
  flink::FlinkJob job;
  // 2 subtasks at 80 % busy process 400 records/s: 500/s at 100 %, 250/s each.
  job.vertices = {Loaded("s", {}, 2, 0, 0, 1000, 400), Loaded("m", {"s"}, 2, 820, 800, 0, 400)};
  auto bottleneck = analysis::FindBottleneck(job);
  REQUIRE(bottleneck);
  REQUIRE(bottleneck->capacity_per_second);
  CHECK(*bottleneck->capacity_per_second == Approx(500));
  // 450/s arrive, 60,000 behind, 5 minutes to drain: 450 + 200 = 650/s, 2.6 subtasks -> 3.
  auto plan = analysis::PlanCatchUp(*bottleneck, 450, 60'000, 300, 4);
  CHECK(plan.parallelism == 3);
  CHECK(plan.unknown.empty());
  REQUIRE(plan.catch_up_seconds_now);
  CHECK(*plan.catch_up_seconds_now == Approx(60'000.0 / 50));  // 50/s to spare today
  // More arrives than it can take: it never catches up today.
  plan = analysis::PlanCatchUp(*bottleneck, 600, 60'000, 300, 4);
  CHECK_FALSE(plan.catch_up_seconds_now);
  CHECK(plan.parallelism == 4);  // 600 + 200 = 800/s, 3.2 -> 4
  // Beyond the max parallelism.
  bottleneck->max_parallelism = 3;
  plan = analysis::PlanCatchUp(*bottleneck, 600, 60'000, 300, 4);
  CHECK_FALSE(plan.parallelism);
  CHECK_THAT(plan.unknown, Catch::Contains("max parallelism 3"));
  // A source bottleneck is bounded by its partitions.
  job.vertices = {Loaded("s", {}, 2, 820, 800, 0, 400)};
  bottleneck = analysis::FindBottleneck(job);
  REQUIRE(bottleneck);
  plan = analysis::PlanCatchUp(*bottleneck, 600, 60'000, 300, 2);
  CHECK_FALSE(plan.parallelism);
  CHECK_THAT(plan.unknown,
             Catch::Contains("more subtasks than the 2 partitions the job reads (a source"));
}

TEST_CASE("skew: one subtask does the work, no parallelism is recommended",
          "[analysis][bottleneck]") {
  flink::FlinkJob job;
  job.vertices = {Loaded("s", {}, 4, 0, 0, 1000, 400), Loaded("m", {"s"}, 4, 990, 300, 0, 400)};
  const auto bottleneck = analysis::FindBottleneck(job);
  REQUIRE(bottleneck);
  CHECK(bottleneck->skewed);
  const auto plan = analysis::PlanCatchUp(*bottleneck, 450, 60'000, 300, 8);
  CHECK_FALSE(plan.parallelism);
  CHECK_THAT(plan.unknown, Catch::Contains("skew"));
}

TEST_CASE("a recorded hot partition: skew, the busiest subtask and the partition are named",
          "[analysis][bottleneck]") {
  for (const std::string line : {"1.20", "2.x"}) {
    CAPTURE(line);
    const flink::FlinkJob job = RecordedJob(line, "hot_partition");
    const auto found = analysis::FindBottleneck(job);
    REQUIRE(found);
    CHECK(found->vertex_name.starts_with("hotjob-map"));
    CHECK(found->parallelism == 4);
    CHECK(found->skewed);
    // The map subtask fed (FORWARD) by the source subtask that waits for it: Flink's own
    // per-subtask backpressure of the source says which one that is.
    REQUIRE(found->busiest_subtask);
    CHECK(*found->busiest_subtask ==
          MostBackpressuredSubtask(line, "hot_partition_source_backpressure.json"));
    // The job's backlog as lagsight would join it: all on partition 0.
    const auto hot = analysis::FindHotPartition(
        {{"hot", 0, 7'400}, {"hot", 1, 3}, {"hot", 2, 0}, {"hot", 3, 5}});
    REQUIRE(hot);
    CHECK(hot->partition == 0);
    const auto plan = analysis::PlanCatchUp(*found, 200, 7'408, 60, 4, hot);
    CHECK_FALSE(plan.parallelism);
    CHECK_THAT(plan.unknown, Catch::StartsWith("skew: subtask " +
                                               std::to_string(*found->busiest_subtask) + " of 4"));
    CHECK_THAT(plan.unknown, Catch::Contains("partition hot/0 holds 100% of the backlog"));
    // 170 of the 200 records/s go to partition 0; its subtask takes fewer than that.
    CHECK_FALSE(plan.catch_up_seconds_now);
  }
}

TEST_CASE("the partition that holds most of the backlog, and when none does",
          "[analysis][bottleneck]") {
  using analysis::FindHotPartition;
  CHECK_FALSE(FindHotPartition({}));
  CHECK_FALSE(FindHotPartition({{"t", 0, 1'000}}));               // one partition: no skew
  CHECK_FALSE(FindHotPartition({{"t", 0, 600}, {"t", 1, 400}}));  // 2 of 2: not twice even
  CHECK_FALSE(FindHotPartition({{"t", 0, 0}, {"t", 1, 0}}));
  CHECK_FALSE(FindHotPartition({{"t", 0, 300}, {"t", 1, 300}, {"t", 2, 250}, {"t", 3, 250}}));
  const auto hot = FindHotPartition({{"t", 0, 100}, {"u", 7, 550}, {"t", 1, 200}, {"t", 2, 150}});
  REQUIRE(hot);
  CHECK(hot->topic == "u");
  CHECK(hot->partition == 7);
  CHECK(hot->share == Approx(0.55));
  // A hot partition alone is skew, even while the subtasks' busy time looks even (a job at
  // parallelism 1): more subtasks would leave the partition's records on one of them.
  flink::FlinkJob job;
  job.vertices = {Loaded("s", {}, 1, 0, 0, 1000, 400), Loaded("m", {"s"}, 1, 990, 990, 0, 400)};
  const auto bottleneck = analysis::FindBottleneck(job);
  REQUIRE(bottleneck);
  CHECK_FALSE(bottleneck->skewed);
  const auto plan = analysis::PlanCatchUp(*bottleneck, 300, 60'000, 300, 4, hot);
  CHECK_FALSE(plan.parallelism);
  CHECK(plan.unknown ==
        "skew: partition u/7 holds 55% of the backlog: more subtasks would not "
        "take it");
}

TEST_CASE("the busiest subtask parser reads both lines and leaves out the impossible",
          "[flink][bottleneck]") {
  for (const std::string line : {"1.20", "2.x"}) {
    CAPTURE(line);
    const auto busiest =
        flink::ParseBusiestSubtask(Recorded(line, "slow_map_map_backpressure.json"));
    REQUIRE(busiest.ok());
    REQUIRE(busiest->has_value());
    CHECK(**busiest <= 1);
  }
  std::vector<std::string> anomalies;
  const auto read = flink::ParseBusiestSubtask(
      R"({"subtasks":[{"subtask":0,"busyRatio":7},{"subtask":1,"busyRatio":0.2},
          {"subtask":2},{"subtask":-4,"busyRatio":0.9},{"subtask":3,"busyRatio":"0.5"},3]})",
      &anomalies);
  REQUIRE(read.ok());
  CHECK(*read == 3);
  CHECK(anomalies.size() == 2);  // a ratio of 7, a subtask of -4
  const auto none = flink::ParseBusiestSubtask(R"({"status":"ok","subtasks":[]})");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK_FALSE(flink::ParseBusiestSubtask("[]").ok());
  CHECK_FALSE(flink::ParseBusiestSubtask(R"({"status":"ok"})").ok());
  CHECK_FALSE(flink::ParseBusiestSubtask("{").ok());
}

TEST_CASE("the jobs whose load the next poll reads are the ones behind", "[analysis][bottleneck]") {
  analysis::Findings findings;
  analysis::DiagnosisFinding behind;
  behind.job_id = "a";
  behind.cause = analysis::Cause::kReallyBehind;
  analysis::DiagnosisFinding nearly;  // not confirmed yet
  nearly.job_id = "b";
  nearly.evidence = {analysis::Cause::kSteadyBacklog};
  analysis::DiagnosisFinding healthy;
  healthy.job_id = "c";
  analysis::DiagnosisFinding kafka_only;  // no job to read
  kafka_only.cause = analysis::Cause::kReallyBehind;
  findings.diagnosis = {behind, nearly, healthy, kafka_only};
  CHECK(analysis::JobsBehind(findings) == std::set<std::string>{"a", "b"});
}

TEST_CASE("a trace keeps the job graph and loads; older traces without them still read",
          "[trace][bottleneck]") {
  flink::FlinkSnapshot snapshot;
  snapshot.jobs.push_back(RecordedJob("2.x", "slow_map"));
  snapshot.jobs.back().overview.id = "0123456789abcdef0123456789abcdef";
  const std::string text = trace::FormatFlinkEvent("flink", 1.0, true, {}, &snapshot);
  const auto event = trace::ParseTraceEvent(text);
  REQUIRE(event.ok());
  const auto& flink_event = std::get<trace::FlinkEvent>(*event);
  REQUIRE(flink_event.snapshot);
  const flink::FlinkSnapshot& read = *flink_event.snapshot;
  REQUIRE(read.jobs.size() == 1);
  const auto& vertices = read.jobs[0].vertices;
  REQUIRE(vertices.size() == 2);
  CHECK(vertices[1].inputs == snapshot.jobs[0].vertices[1].inputs);
  CHECK(vertices[1].forward_inputs == snapshot.jobs[0].vertices[1].forward_inputs);
  CHECK(vertices[1].max_parallelism == 128);
  REQUIRE(vertices[1].load);
  CHECK(vertices[1].load->busy_ms_avg == snapshot.jobs[0].vertices[1].load->busy_ms_avg);
  CHECK(analysis::FindBottleneck(read.jobs[0])->vertex_id == vertices[1].id);
  CHECK_FALSE(vertices[1].load->busiest_subtask);
  // The busiest subtask, read for a skewed vertex, is kept too.
  snapshot.jobs[0] = RecordedJob("1.20", "hot_partition");
  snapshot.jobs[0].overview.id = "0123456789abcdef0123456789abcdef";
  const auto skewed =
      trace::ParseTraceEvent(trace::FormatFlinkEvent("flink", 1.0, true, {}, &snapshot));
  REQUIRE(skewed.ok());
  const auto& kept = std::get<trace::FlinkEvent>(*skewed).snapshot->jobs[0].vertices[1];
  REQUIRE(kept.load);
  CHECK(kept.load->busiest_subtask == snapshot.jobs[0].vertices[1].load->busiest_subtask);
  CHECK(kept.load->busiest_subtask.has_value());
}

// tests/integration/test_bottleneck.py, first run: a map fed by its source through a FORWARD
// edge, about 83 records/s per subtask, 120/s arriving on 4 partitions, 4,663 behind, a 60 s
// target. Spread evenly 3 subtasks would do (198/s needed); but at 3 one source subtask reads 2
// of the 4 partitions, and its map subtask drains their half of the backlog at 83 - 60 = 23/s:
// the restore at 3 took 90 s, the arithmetic says 101 s. 4 is the answer.
TEST_CASE("a vertex fed through partitions: the busiest subtask's share decides",
          "[analysis][bottleneck]") {
  lagsight::analysis::Bottleneck map;
  map.parallelism = 1;
  map.max_parallelism = 128;
  map.bounded_by_partitions = true;
  map.capacity_per_second = 83;
  auto plan = lagsight::analysis::PlanCatchUp(map, 120, 4663, 60, 4);
  CHECK(plan.parallelism == 4);
  CHECK_FALSE(plan.catch_up_seconds_now);  // 83/s against 120/s
  map.parallelism = 3;
  map.capacity_per_second = 3 * 83;
  plan = lagsight::analysis::PlanCatchUp(map, 120, 4663, 60, 4);
  REQUIRE(plan.catch_up_seconds_now);
  CHECK(*plan.catch_up_seconds_now == Approx(4663.0 / 2 / (83 - 60)));
  CHECK(plan.parallelism == 4);
  // Not fed through partitions: spread evenly, 3 do.
  map.bounded_by_partitions = false;
  CHECK(lagsight::analysis::PlanCatchUp(map, 120, 4663, 60, 4).parallelism == 3);
}

// Flink names a chained vertex after all its operators; a SQL job's name runs to kilobytes. The
// label and the status page line are cut, on a character boundary; the id stays exact.
TEST_CASE("a 32k-character vertex name is cut for its label", "[analysis][bottleneck]") {
  flink::FlinkJob job;
  job.vertices = {Loaded("s", {}, 1, 0, 0, 1000, 40), Loaded("m", {"s"}, 1, 990, 990, 0, 40)};
  job.vertices[1].name = std::string(255, 'x') + "\xC3\xA9" + std::string(32 * 1024, 'y');
  const auto bottleneck = analysis::FindBottleneck(job);
  REQUIRE(bottleneck);
  CHECK(bottleneck->vertex_id == "m");
  CHECK(bottleneck->vertex_name == std::string(255, 'x') + "...");  // not half of the é
  job.vertices[1].name = "enrich-map";
  CHECK(analysis::FindBottleneck(job)->vertex_name == "enrich-map");
}
