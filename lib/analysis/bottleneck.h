// What holds a job back, and what would catch it up: pure arithmetic on one Flink poll's job
// graph and vertex loads (flink::VertexLoad, read for the jobs that are behind).
//
// The bottleneck is the rule of Flink's backpressure guide: the vertex whose subtasks are busy
// while the vertices it reads from are backpressured (they wait for it), or a busy source that is
// not backpressured itself (reading is the limit). Skew: its busiest subtask works at least twice
// its average (flink::LooksSkewed), or one partition holds most of the backlog (a hot key), so
// the work does not spread and more subtasks would not take it.
//
// The catch-up arithmetic is the autoscaler's: the vertex's true processing rate is what it
// processes per second over the share of the second it is busy (records in, or out for a source,
// over busy time), so one subtask handles rate / parallelism at 100 %; to drain `backlog` records
// within T seconds while `input` records/s keep arriving it needs (input + backlog / T) records/s.
// The answer assumes the rate scales with subtasks (no skew, no shared external limit), and says
// why it cannot be given where it cannot.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "flink/snapshot.h"

namespace lagsight::analysis {

struct Findings;

struct Bottleneck {
  std::string vertex_id;
  // Cut to kMaxVertexNameBytes (on a UTF-8 boundary, "..." appended): it is a label of six
  // series and a line of the status page, and Flink names a chained vertex after every operator
  // in it, which in SQL jobs runs to kilobytes. vertex_id is exact.
  std::string vertex_name;
  int parallelism = 0;
  std::optional<int> max_parallelism;
  bool source = false;  // the vertex reads no other vertex
  // A source, or fed by one through FORWARD edges only: its subtasks get work only where a
  // source subtask holds partitions, so more of them than partitions stay idle.
  bool bounded_by_partitions = false;
  double busy_ms_max = 0;
  std::optional<double> busy_ms_avg;
  bool skewed = false;
  // Which subtask is the busiest, where skewed and Flink said (VertexLoad::busiest_subtask).
  std::optional<int> busiest_subtask;
  // Records per second the whole vertex would process at 100 % busy; none when unknowable.
  std::optional<double> capacity_per_second;
};

inline constexpr std::size_t kMaxVertexNameBytes = 256;

// Busy at least this share of each second (ms/s): working flat out, as Flink's web UI colours it.
inline constexpr double kBottleneckBusyMs = 500;

// The job's bottleneck, or none (no loads read, nobody busy: a healthy or idle job).
std::optional<Bottleneck> FindBottleneck(const flink::FlinkJob& job);

struct PartitionBacklog {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t backlog = 0;  // records behind, as the job reads it (Flink-side lag)
};

struct HotPartition {
  std::string topic;
  std::int32_t partition = 0;
  double share = 0;  // of the pair's backlog, 0..1
};

// The partition that holds most of a backlog spread over several: at least half of it and at
// least twice an even share (so of 2 partitions only one holding all of it). None where the
// backlog spreads, or there is none.
std::optional<HotPartition> FindHotPartition(const std::vector<PartitionBacklog>& backlogs);

struct CatchUpPlan {
  // The parallelism of the bottleneck that drains the backlog within the target; none with
  // `unknown` saying why.
  std::optional<int> parallelism;
  std::string unknown;
  // At today's parallelism: seconds to drain the backlog at the vertex's capacity; none when it
  // never does (capacity at or below the input rate) or the capacity is unknown.
  std::optional<double> catch_up_seconds_now;
  // Set where one partition holds most of the backlog: skew, whatever the subtasks' busy time.
  std::optional<HotPartition> hot_partition;
};

// `partitions`: of the topics the job reads; they bound a bottleneck bounded_by_partitions.
// `hot`: FindHotPartition of the pair's backlog. Skew (of busy time or of the backlog) gives no
// parallelism: `unknown` names the busiest subtask and the partition where known.
CatchUpPlan PlanCatchUp(const Bottleneck& bottleneck, double input_per_second, double backlog,
                        double target_seconds, std::optional<int> partitions,
                        std::optional<HotPartition> hot = std::nullopt);

// The ids of the jobs whose pair is behind or close to it (really_behind or steady_backlog, as
// the cause or as evidence): the jobs whose vertices' load the next Flink poll reads.
std::set<std::string> JobsBehind(const Findings& findings);

}  // namespace lagsight::analysis
