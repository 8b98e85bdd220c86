// A stores::StoreSnapshot (one reading of a position store) as trace JSON, both ways, every field
// of it. Offsets are compact rows, [topic, partition, offset]; a job is an object. Writing what
// was read gives the same bytes.
#pragma once

#include <string>

#include "stores/snapshot.h"
#include "trace/json_text.h"

namespace lagsight::trace {

void AppendStoreSnapshot(std::string& out, const stores::StoreSnapshot& snapshot);

// Throws json::FormatError naming the field that is missing or wrong.
stores::StoreSnapshot ReadStoreSnapshot(json::element e);

}  // namespace lagsight::trace
