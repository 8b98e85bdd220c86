#include "kafka/record_runs.h"

#include <algorithm>
#include <limits>

namespace lagsight::kafka {
namespace {

bool ByOffset(const std::pair<std::int64_t, RecordTimestamp>& record, std::int64_t offset) {
  return record.first < offset;
}

}  // namespace

void RecordRuns::Add(RecordRun run) {
  if (run.records.empty()) return;
  std::vector<Run>& kept = runs_[{run.partition, run.read_committed}];
  const std::int64_t first = run.from;
  const std::int64_t last = run.records.back().first;
  // Runs that overlap the new one are older passes over the same records: the new one replaces
  // them (it is as right, and reaches as far as this poll's read did).
  std::size_t dropped = 0;
  std::erase_if(kept, [&](const Run& old) {
    const bool overlaps = old.from <= last && old.records.back().first >= first;
    if (overlaps) dropped += old.records.size();
    return overlaps;
  });
  records_ -= dropped;
  if (records_ + run.records.size() > max_records_) {
    if (kept.empty()) runs_.erase({run.partition, run.read_committed});
    return;
  }
  records_ += run.records.size();
  const auto at =
      std::lower_bound(kept.begin(), kept.end(), first,
                       [](const Run& r, std::int64_t offset) { return r.from < offset; });
  kept.insert(at, Run{first, std::move(run.records)});
}

std::optional<RecordTimestamp> RecordRuns::Find(const RecordKey& position) const {
  const auto found = runs_.find({position.partition, position.read_committed});
  if (found == runs_.end()) return std::nullopt;
  for (const Run& run : found->second) {
    if (position.offset < run.from || position.offset > run.records.back().first) continue;
    return std::lower_bound(run.records.begin(), run.records.end(), position.offset, ByOffset)
        ->second;
  }
  return std::nullopt;
}

void RecordRuns::Retain(const std::map<RecordKey, std::int64_t>& wanted) {
  std::map<Key, std::int64_t> lowest;
  for (const auto& [key, lag] : wanted) {
    auto [at, inserted] = lowest.try_emplace({key.partition, key.read_committed}, key.offset);
    if (!inserted) at->second = std::min(at->second, key.offset);
  }
  for (auto at = runs_.begin(); at != runs_.end();) {
    const auto low = lowest.find(at->first);
    const std::int64_t floor =
        low == lowest.end() ? std::numeric_limits<std::int64_t>::max() : low->second;
    std::vector<Run>& kept = at->second;
    for (Run& run : kept) {
      if (run.from >= floor) continue;
      // Positions from `floor` on are answered by the records from there on.
      const auto keep = std::lower_bound(run.records.begin(), run.records.end(), floor, ByOffset);
      records_ -= static_cast<std::size_t>(keep - run.records.begin());
      run.records.erase(run.records.begin(), keep);
      run.from = floor;
    }
    std::erase_if(kept, [](const Run& run) { return run.records.empty(); });
    at = kept.empty() ? runs_.erase(at) : std::next(at);
  }
}

}  // namespace lagsight::kafka
