// RecordRuns: what the record reader's passes answer later, and what they cost.
#include "kafka/record_runs.h"

#include <catch2/catch.hpp>

namespace {

using lagsight::kafka::RecordKey;
using lagsight::kafka::RecordRun;
using lagsight::kafka::RecordRuns;
using lagsight::kafka::RecordTimestamp;

RecordRun Run(std::int64_t from, std::vector<std::int64_t> offsets, bool read_committed = false) {
  RecordRun run{{"t", 0}, read_committed, from, {}};
  for (const std::int64_t offset : offsets) run.records.push_back({offset, {offset * 10, false}});
  return run;
}

std::optional<std::int64_t> Millis(const RecordRuns& runs, std::int64_t offset,
                                   bool read_committed = false) {
  const auto found = runs.Find(RecordKey{{"t", 0}, offset, read_committed});
  if (!found) return std::nullopt;
  return found->ms;
}

}  // namespace

TEST_CASE("record runs: a position from the run's start to its last record is answered",
          "[kafka][runs]") {
  RecordRuns runs(100);
  runs.Add(Run(10, {12, 13, 20}));
  CHECK(Millis(runs, 9) == std::nullopt);  // before the pass began: unknown
  CHECK(Millis(runs, 10) == 120);          // the first record at or after it
  CHECK(Millis(runs, 14) == 200);          // 14..19 are gaps: the record at 20
  CHECK(Millis(runs, 20) == 200);
  CHECK(Millis(runs, 21) == std::nullopt);        // beyond the last record read: unknown
  CHECK(Millis(runs, 12, true) == std::nullopt);  // another isolation reads other records
  CHECK(runs.records() == 3);
}

TEST_CASE("record runs: a newer pass replaces the ones it overlaps", "[kafka][runs]") {
  RecordRuns runs(100);
  runs.Add(Run(10, {10, 11}));
  runs.Add(Run(30, {30, 31}));
  runs.Add(Run(11, {11, 12, 25}));
  CHECK(runs.records() == 5);
  CHECK(Millis(runs, 10) == std::nullopt);  // the older pass over 10..11 is gone
  CHECK(Millis(runs, 24) == 250);
  CHECK(Millis(runs, 31) == 310);
}

TEST_CASE("record runs: bounded, and trimmed to what wanted positions can use", "[kafka][runs]") {
  RecordRuns runs(4);
  runs.Add(Run(0, {0, 1, 2}));
  runs.Add(Run(50, {50, 51}));  // would make 5: not kept
  CHECK(runs.records() == 3);
  CHECK(Millis(runs, 50) == std::nullopt);

  runs.Retain({{RecordKey{{"t", 0}, 1, false}, 7}});
  CHECK(runs.records() == 2);
  CHECK(Millis(runs, 0) == std::nullopt);
  CHECK(Millis(runs, 1) == 10);

  runs.Retain({{RecordKey{{"u", 0}, 1, false}, 7}});  // nobody waits on t/0 any more
  CHECK(runs.records() == 0);
  CHECK(Millis(runs, 2) == std::nullopt);
}
