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
// The busiest subtask working this many times the average: skew.
constexpr double kSkewRatio = 2;

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
  bottleneck.vertex_name = found->name;
  bottleneck.parallelism = found->parallelism;
  bottleneck.max_parallelism = found->max_parallelism;
  bottleneck.source = found->inputs.empty();
  bottleneck.busy_ms_max = *found->load->busy_ms_max;
  bottleneck.busy_ms_avg = found->load->busy_ms_avg;
  bottleneck.skewed = found->parallelism > 1 && bottleneck.busy_ms_avg &&
                      bottleneck.busy_ms_max >= kSkewRatio * *bottleneck.busy_ms_avg;
  bottleneck.capacity_per_second = Capacity(*found);
  return bottleneck;
}

CatchUpPlan PlanCatchUp(const Bottleneck& bottleneck, double input_per_second, double backlog,
                        double target_seconds, std::optional<int> partitions) {
  CatchUpPlan plan;
  if (!bottleneck.capacity_per_second || bottleneck.parallelism <= 0) {
    plan.unknown = "its processing rate is unknown (no busy time or records reported)";
    return plan;
  }
  const double capacity = *bottleneck.capacity_per_second;
  const double input = std::max(0.0, input_per_second);
  if (capacity > input) plan.catch_up_seconds_now = std::max(0.0, backlog) / (capacity - input);
  if (bottleneck.skewed) {
    plan.unknown = "skew: one subtask does most of the work, more subtasks would not take it";
    return plan;
  }
  const double per_subtask = capacity / bottleneck.parallelism;
  const double needed = input + std::max(0.0, backlog) / std::max(1.0, target_seconds);
  const double wanted = std::ceil(needed / per_subtask - 1e-9);
  if (bottleneck.max_parallelism && wanted > *bottleneck.max_parallelism) {
    plan.unknown = "it needs " + std::to_string(static_cast<long long>(wanted)) +
                   " subtasks, beyond its max parallelism " +
                   std::to_string(*bottleneck.max_parallelism);
    return plan;
  }
  if (bottleneck.source && partitions && wanted > *partitions) {
    plan.unknown = "it needs " + std::to_string(static_cast<long long>(wanted)) +
                   " source subtasks, more than the " + std::to_string(*partitions) +
                   " partitions it reads";
    return plan;
  }
  plan.parallelism = std::max(1, static_cast<int>(wanted));
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
