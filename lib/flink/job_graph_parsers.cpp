#include "flink/job_graph_parsers.h"

#include <limits>
#include <map>
#include <optional>

#include "flink/json_fields.h"

namespace lagsight::flink {
namespace {

using namespace json_fields;

std::optional<int> Parallelism(object o, const char* key, std::vector<std::string>* anomalies) {
  const auto value = Count(o, key, "job details", anomalies);
  if (!value) return std::nullopt;
  if (*value > std::numeric_limits<int>::max()) {
    Note(anomalies,
         std::string("job details: ") + key + " " + std::to_string(*value) + " is absurd");
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

struct Inputs {
  std::vector<std::string> all;
  std::vector<std::string> forward;
};

// The plan's edges: node id -> the ids of its inputs.
std::map<std::string, Inputs> PlanInputs(object top) {
  std::map<std::string, Inputs> inputs;
  object plan;
  array nodes;
  if (top["plan"].get(plan) || plan["nodes"].get(nodes)) return inputs;
  for (element node : nodes) {
    object o;
    array edges;
    if (node.get(o) || o["inputs"].get(edges)) continue;
    const auto id = String(o, "id");
    if (!id) continue;
    auto& into = inputs[std::string(*id)];
    for (element edge : edges) {
      object e;
      if (edge.get(e)) continue;
      const auto from = String(e, "id");
      if (!from) continue;
      into.all.emplace_back(*from);
      if (String(e, "ship_strategy") == "FORWARD") into.forward.emplace_back(*from);
    }
  }
  return inputs;
}

}  // namespace

Result<std::vector<Vertex>> ParseJobVertices(std::string_view body,
                                             std::vector<std::string>* anomalies) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "job details");
  if (!root) return root.error();
  auto top = ObjectOf(*root, "job details");
  if (!top) return top.error();
  array vertices;
  if ((*top)["vertices"].get(vertices)) return Error{"job details: no \"vertices\" list"};
  auto inputs = PlanInputs(*top);
  std::vector<Vertex> out;
  for (element vertex : vertices) {
    object o;
    if (vertex.get(o)) continue;
    const auto id = String(o, "id");
    if (!id) continue;
    Vertex v;
    v.id = std::string(*id);
    v.name = std::string(String(o, "name").value_or(""));
    v.parallelism = Parallelism(o, "parallelism", anomalies).value_or(0);
    v.max_parallelism = Parallelism(o, "maxParallelism", anomalies);
    if (const auto edges = inputs.find(v.id); edges != inputs.end()) {
      v.inputs = std::move(edges->second.all);
      v.forward_inputs = std::move(edges->second.forward);
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string VertexLoadQuery() {
  return "get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,idleTimeMsPerSecond,"
         "numRecordsInPerSecond,numRecordsOutPerSecond&agg=max,avg,sum";
}

Result<VertexLoad> ParseVertexLoad(std::string_view body, std::vector<std::string>* anomalies) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "vertex load");
  if (!root) return root.error();
  array metrics;
  if (root->get(metrics)) return Error{"vertex load: expected a JSON list"};
  VertexLoad load;
  for (element metric : metrics) {
    object o;
    if (metric.get(o)) continue;
    const auto id = String(o, "id");
    if (!id) continue;
    const bool per_second_of_time = id->ends_with("TimeMsPerSecond");
    const auto read = [&](const char* aggregate) -> std::optional<double> {
      const auto value = Number(o, aggregate);
      if (!value) return std::nullopt;
      // Summed over subtasks, time per second exceeds 1000; max and avg cannot.
      const bool absurd = *value < 0 || (per_second_of_time &&
                                         std::string_view(aggregate) != "sum" && *value > 1000.5);
      if (absurd) {
        Note(anomalies, "vertex load: " + std::string(*id) + "." + aggregate + " = " +
                            std::to_string(*value) + " is impossible; left out");
        return std::nullopt;
      }
      return value;
    };
    if (*id == "busyTimeMsPerSecond") {
      load.busy_ms_max = read("max");
      load.busy_ms_avg = read("avg");
    } else if (*id == "backPressuredTimeMsPerSecond") {
      load.backpressured_ms_max = read("max");
      load.backpressured_ms_avg = read("avg");
    } else if (*id == "idleTimeMsPerSecond") {
      load.idle_ms_avg = read("avg");
    } else if (*id == "numRecordsInPerSecond") {
      load.records_in_per_second_sum = read("sum");
    } else if (*id == "numRecordsOutPerSecond") {
      load.records_out_per_second_sum = read("sum");
    }
  }
  return load;
}

Result<std::optional<int>> ParseBusiestSubtask(std::string_view body,
                                               std::vector<std::string>* anomalies) {
  simdjson::dom::parser parser;
  auto root = Parse(parser, body, "vertex backpressure");
  if (!root) return root.error();
  auto top = ObjectOf(*root, "vertex backpressure");
  if (!top) return top.error();
  array subtasks;
  if ((*top)["subtasks"].get(subtasks)) return Error{"vertex backpressure: no \"subtasks\" list"};
  std::optional<int> busiest;
  double most = -1;
  for (element subtask : subtasks) {
    object o;
    if (subtask.get(o)) continue;
    const auto index = Count(o, "subtask", "vertex backpressure", anomalies);
    const auto busy = Number(o, "busyRatio");
    // Flink writes NaN (not JSON: the answer would not parse) or leaves it out while a subtask
    // has not measured yet; a ratio outside [0, 1] is not one.
    if (!index || *index > std::numeric_limits<int>::max() || !busy) continue;
    if (*busy < 0 || *busy > 1.0005) {
      Note(anomalies, "vertex backpressure: busyRatio " + std::to_string(*busy) + " of subtask " +
                          std::to_string(*index) + " is impossible; left out");
      continue;
    }
    if (*busy > most) {
      most = *busy;
      busiest = static_cast<int>(*index);
    }
  }
  return busiest;
}

}  // namespace lagsight::flink
