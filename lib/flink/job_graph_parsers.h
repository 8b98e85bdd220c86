// Parsers of the Flink REST answers that describe a job's graph and how hard each vertex works:
// bytes in, plain structs or an Error out, as the other REST parsers (rest_parsers.h: tolerant
// of fields one Flink line lacks, impossible numbers left out and described in `anomalies`).
// Recorded answers of Flink 1.20 and 2.x are in tests/unit/testdata/flink-job-graph.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "flink/snapshot.h"

namespace lagsight::flink {

// The vertices of GET /jobs/:jid with their parallelism, max parallelism and inputs (the
// "plan" nodes' edges, which both lines include in the job details).
Result<std::vector<Vertex>> ParseJobVertices(std::string_view body,
                                             std::vector<std::string>* anomalies = nullptr);

// The query of GET /jobs/:jid/vertices/:vid/subtasks/metrics that ParseVertexLoad reads.
std::string VertexLoadQuery();

// Its answer: [{"id": "busyTimeMsPerSecond", "max": .., "avg": .., "sum": ..}, ...]. Flink
// answers [] for a vertex whose subtasks reported nothing yet: a load with nothing known.
// Milliseconds per second outside [0, 1000] and negative rates are left out as anomalies.
Result<VertexLoad> ParseVertexLoad(std::string_view body,
                                   std::vector<std::string>* anomalies = nullptr);

// GET /jobs/:jid/vertices/:vid/backpressure, read for a vertex whose load looks skewed
// (LooksSkewed): which subtask is busiest, by its "subtasks"[].busyRatio (both lines answer it
// from the same task metrics, per subtask, in one request). None when no subtask reported one.
Result<std::optional<int>> ParseBusiestSubtask(std::string_view body,
                                               std::vector<std::string>* anomalies = nullptr);

}  // namespace lagsight::flink
