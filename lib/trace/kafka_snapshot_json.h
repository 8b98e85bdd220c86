// A kafka::KafkaSnapshot as trace JSON, both ways, every field of it (the analysis may read any).
//
// The large parts are compact rows rather than objects, since a snapshot holds one entry per
// group-partition: committed offsets as [topic, partition, offset], partitions as
// [topic, partition, log_start, log_end, last_stable], record positions as
// [topic, partition, offset, read_committed, ...]. Writing what was read gives the same bytes.
#pragma once

#include <string>

#include "kafka/snapshot.h"
#include "trace/json_text.h"

namespace lagsight::trace {

void AppendKafkaSnapshot(std::string& out, const kafka::KafkaSnapshot& snapshot);

// Throws json::FormatError naming the field that is missing or wrong.
kafka::KafkaSnapshot ReadKafkaSnapshot(json::element e);

}  // namespace lagsight::trace
