#include "analysis/bottleneck.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/findings.h"

namespace lagsight::analysis {
namespace {

// Waiting at least this share of each second (ms/s) for buffers downstream: backpressured.
constexpr double kBackpressuredMs = 500;
// Below this average busy time the rate over busy time is mostly noise (a vertex busy 2 % of a
// second processing 10 records would "handle" 500/s).
constexpr double kMinBusyForCapacityMs = 100;

bool Backpressured(const flink::Vertex* vertex) {
  return vertex != nullptr && vertex->load && vertex->load->backpressured_ms_max &&
         *vertex->load->backpressured_ms_max >= kBackpressuredMs;
}

std::optional<double> Capacity(const flink::Vertex& vertex) {
  const flink::VertexLoad& load = *vertex.load;
  // A source counts what it reads as records out (1.20 reports no records in for it; 2.x both).
  const std::optional<double> rate =
      vertex.inputs.empty() ? load.records_out_per_second_sum : load.records_in_per_second_sum;
  if (!rate || *rate <= 0 || !load.busy_ms_avg || *load.busy_ms_avg < kMinBusyForCapacityMs) {
    return std::nullopt;
  }
  return *rate / (*load.busy_ms_avg / 1000);
}

// A source, or a vertex whose every input is a FORWARD edge from such a vertex.
bool BoundedByPartitions(const flink::Vertex& vertex,
                         const std::map<std::string, const flink::Vertex*>& by_id, int depth = 0) {
  if (vertex.inputs.empty()) return true;
  if (depth > 64 || vertex.forward_inputs.size() != vertex.inputs.size()) return false;
  return std::all_of(
      vertex.forward_inputs.begin(), vertex.forward_inputs.end(), [&](const std::string& id) {
        const auto input = by_id.find(id);
        return input != by_id.end() && BoundedByPartitions(*input->second, by_id, depth + 1);
      });
}

std::string ShortVertexName(const std::string& name) {
  if (name.size() <= kMaxVertexNameBytes) return name;
  std::size_t cut = kMaxVertexNameBytes;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return name.substr(0, cut) + "...";
}

}  // namespace

std::optional<Bottleneck> FindBottleneck(const flink::FlinkJob& job) {
  std::map<std::string, const flink::Vertex*> by_id;
  for (const flink::Vertex& vertex : job.vertices) by_id[vertex.id] = &vertex;
  const flink::Vertex* found = nullptr;
  for (const flink::Vertex& vertex : job.vertices) {
    if (!vertex.load || !vertex.load->busy_ms_max || *vertex.load->busy_ms_max < kBottleneckBusyMs)
      continue;
    // A vertex that waits for downstream more than it works is held back itself.
    if (vertex.load->backpressured_ms_max &&
        *vertex.load->backpressured_ms_max >= *vertex.load->busy_ms_max) {
      continue;
    }
    const bool upstream_waits =
        vertex.inputs.empty() ||
        std::any_of(vertex.inputs.begin(), vertex.inputs.end(), [&](const std::string& id) {
          const auto input = by_id.find(id);
          return input != by_id.end() && Backpressured(input->second);
        });
    if (!upstream_waits) continue;
    if (found == nullptr || *vertex.load->busy_ms_max > *found->load->busy_ms_max) found = &vertex;
  }
  if (found == nullptr) return std::nullopt;
  Bottleneck bottleneck;
  bottleneck.vertex_id = found->id;
  bottleneck.vertex_name = ShortVertexName(found->name);
  bottleneck.parallelism = found->parallelism;
  bottleneck.max_parallelism = found->max_parallelism;
  bottleneck.source = found->inputs.empty();
  bottleneck.bounded_by_partitions = BoundedByPartitions(*found, by_id);
  bottleneck.busy_ms_max = *found->load->busy_ms_max;
  bottleneck.busy_ms_avg = found->load->busy_ms_avg;
  bottleneck.skewed = flink::LooksSkewed(*found);
  if (bottleneck.skewed) bottleneck.busiest_subtask = found->load->busiest_subtask;
  bottleneck.capacity_per_second = Capacity(*found);
  return bottleneck;
}

namespace {

// The share of the vertex's work its busiest subtask gets at `parallelism`: even, or, where
// its subtasks get work only through partitions (bounded_by_partitions), that of the subtask
// holding the most of them: the KafkaSource hands a topic's partitions out round robin, so
// ceil(P / p) of P (4 partitions at 3: one subtask reads 2, the backlog of its 2 drains last).
double BusiestShare(const Bottleneck& bottleneck, int parallelism, std::optional<int> partitions) {
  if (!bottleneck.bounded_by_partitions || !partitions || *partitions <= 0) {
    return 1.0 / parallelism;
  }
  const int busiest = (*partitions + parallelism - 1) / std::min(parallelism, *partitions);
  return std::min(1.0, static_cast<double>(busiest) / *partitions);
}

std::string Percent(double share) {
  return std::to_string(static_cast<int>(std::lround(share * 100))) + "%";
}

// "skew: subtask 3 of 4 does most of the work (busy 978 ms/s, average 281); partition orders/0
// holds 93% of the backlog: more subtasks would not take it".
std::string SkewReason(const Bottleneck& bottleneck, const std::optional<HotPartition>& hot) {
  std::string why = "skew: ";
  if (bottleneck.skewed) {
    why += bottleneck.busiest_subtask ? "subtask " + std::to_string(*bottleneck.busiest_subtask) +
                                            " of " + std::to_string(bottleneck.parallelism)
                                      : std::string("one subtask");
    why += " does most of the work (busy " + std::to_string(std::lround(bottleneck.busy_ms_max)) +
           " ms/s, average " + std::to_string(std::lround(bottleneck.busy_ms_avg.value_or(0))) +
           ")";
    if (hot) why += "; ";
  }
  if (hot) {
    why += "partition " + hot->topic + "/" + std::to_string(hot->partition) + " holds " +
           Percent(hot->share) + " of the backlog";
  }
  return why + ": more subtasks would not take it";
}

}  // namespace

std::optional<HotPartition> FindHotPartition(const std::vector<PartitionBacklog>& backlogs) {
  std::int64_t total = 0;
  const PartitionBacklog* largest = nullptr;
  for (const PartitionBacklog& each : backlogs) {
    total += std::max<std::int64_t>(0, each.backlog);
    if (largest == nullptr || each.backlog > largest->backlog) largest = &each;
  }
  if (largest == nullptr || backlogs.size() < 2 || total <= 0) return std::nullopt;
  const double share = static_cast<double>(largest->backlog) / static_cast<double>(total);
  const double even = 1.0 / static_cast<double>(backlogs.size());
  if (share < 0.5 || share < 2 * even) return std::nullopt;
  return HotPartition{largest->topic, largest->partition, share};
}

CatchUpPlan PlanCatchUp(const Bottleneck& bottleneck, double input_per_second, double backlog,
                        double target_seconds, std::optional<int> partitions,
                        std::optional<HotPartition> hot) {
  CatchUpPlan plan;
  plan.hot_partition = hot;
  const bool rate_known = bottleneck.capacity_per_second && bottleneck.parallelism > 0;
  const double per_subtask =
      rate_known ? *bottleneck.capacity_per_second / bottleneck.parallelism : 0;
  const double input = std::max(0.0, input_per_second);
  const double behind = std::max(0.0, backlog);
  // Today: the busiest subtask's share of the backlog at what it has to spare. Under skew that
  // share is the hot partition's of the backlog, or the busiest subtask's of the busy time
  // (its work over all of it), and its share of the input is taken to be the same.
  double share_now = BusiestShare(bottleneck, bottleneck.parallelism, partitions);
  if (hot) {
    share_now = hot->share;
  } else if (bottleneck.skewed && bottleneck.busy_ms_avg) {
    share_now =
        std::min(1.0, bottleneck.busy_ms_max / (*bottleneck.busy_ms_avg * bottleneck.parallelism));
  }
  if (rate_known && per_subtask > input * share_now) {
    plan.catch_up_seconds_now = behind * share_now / (per_subtask - input * share_now);
  }
  if (bottleneck.skewed || hot) {
    plan.unknown = SkewReason(bottleneck, hot);
    return plan;
  }
  if (!rate_known) {
    plan.unknown = "its processing rate is unknown (no busy time or records reported)";
    return plan;
  }
  const double needed = input + behind / std::max(1.0, target_seconds);
  const bool bounded = bottleneck.bounded_by_partitions && partitions && *partitions > 0;
  const int limit =
      std::min(bounded ? *partitions : 1 << 20, bottleneck.max_parallelism.value_or(1 << 20));
  // The least parallelism whose busiest subtask takes its share of what is needed.
  const double even = std::max(1.0, std::ceil(needed / per_subtask - 1e-9));
  for (int p = static_cast<int>(std::min<double>(even, limit)); p <= limit; ++p) {
    if (needed * BusiestShare(bottleneck, p, partitions) <= per_subtask * (1 + 1e-9)) {
      plan.parallelism = p;
      return plan;
    }
  }
  const std::string wanted = std::to_string(static_cast<long long>(even));
  if (bounded && (!bottleneck.max_parallelism || *partitions <= *bottleneck.max_parallelism)) {
    plan.unknown = "it needs more subtasks than the " + std::to_string(*partitions) +
                   " partitions the job reads (" +
                   (bottleneck.source ? "a source" : "fed by its source through forward edges") +
                   ": the others would idle)";
  } else {
    plan.unknown = "it needs " + wanted + " subtasks, beyond its max parallelism " +
                   std::to_string(bottleneck.max_parallelism.value_or(0));
  }
  return plan;
}

std::set<std::string> JobsBehind(const Findings& findings) {
  std::set<std::string> jobs;
  for (const DiagnosisFinding& finding : findings.diagnosis) {
    if (finding.job_id.empty()) continue;
    const auto behind = [](Cause cause) {
      return cause == Cause::kReallyBehind || cause == Cause::kSteadyBacklog;
    };
    if (behind(finding.cause) ||
        std::any_of(finding.evidence.begin(), finding.evidence.end(), behind)) {
      jobs.insert(finding.job_id);
    }
  }
  return jobs;
}

}  // namespace lagsight::analysis
