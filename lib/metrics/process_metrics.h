// Metrics about lagsight itself: build information, the state of its configuration, and what
// its HTTP server did to keep scrapers served.
#pragma once

#include <cstdint>
#include <string>

#include "metrics/exposition.h"

namespace lagsight::metrics {

void AppendProcessMetrics(const std::string& version, const std::string& revision,
                          bool last_reload_successful, double last_reload_success_unix_seconds,
                          FamilyBuilder& out);

// Which part of the fleet this instance reads (--shard, --total-shards).
void AppendShardMetrics(int shard, int total_shards, FamilyBuilder& out);

// Connections the HTTP server closed to make room for new ones, by whose share was full
// ("client": the new client's own; "server": max_connections), and new ones it turned away.
void AppendHttpConnectionMetrics(std::uint64_t shed_for_same_client,
                                 std::uint64_t shed_for_any_client, std::uint64_t refused,
                                 FamilyBuilder& out);

// How long the render of the previous exposition took on its worker: every family's sample
// lines, text and gzip, not the analysis before it and never a scrape (a scrape sends what a
// render published). The render that writes a value cannot know its own duration.
void AppendRenderMetrics(double previous_render_seconds, FamilyBuilder& out);

}  // namespace lagsight::metrics
