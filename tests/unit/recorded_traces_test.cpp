// Recorded traces of the real-system scenarios, replayed through today's analysis in seconds.
//
// Each folder under tests/fixtures/traces/ holds what a lagsight of the integration suite handed
// its analysis while real Kafka and Flink ran a scenario (trace.jsonl.gz, recorded with
// --trace.record), the cause timeline that replay gave when the trace was kept (causes.txt: a
// line each time a pair's diagnosis line changes), and what the scenario's real systems showed
// to be true (truth.txt). A change to the analysis that changes any judgement on any recording
// fails here with the first line that differs; where the change is meant, regenerate the
// timelines with LAGSIGHT_REGENERATE_TRACE_TIMELINES=1 and review their diff. truth.txt holds
// each scenario to what the real systems established, whatever the timeline says:
//   expect CLUSTER/GROUP/JOB CAUSE   the pair shows CAUSE at some poll
//   never  CLUSTER/GROUP/JOB CAUSE   ... and never CAUSE (a false cause the scenario ruled out)
//   only   CLUSTER/GROUP/JOB A,B,... it shows no cause but these (no false cause at all)
//          (a store's entries are "store:NAME/JOB/TOPIC", their causes beyond_log_end and within)
//   never PAIR CAUSE until +S        ... before S seconds into the timeline (after S, the
//                                    scenario made it true on purpose)
//   continuous CLUSTER/GROUP/JOB S   once shown, the pair is never without a diagnosis line for
//                                    more than S seconds (a job redeployed under its name keeps
//                                    its pair: the line is by job name); GROUP "*" is any group
//                                    of the job (its group became known, or changed)
// with "-" for a pair without group or job, and `#` comments naming the ground truth.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace/replay.h"

using namespace lagsight;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> ReadLines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "local/group/job: cause (evidence: ...)" -> the pair and the cause.
std::pair<std::string, std::string> PairAndCause(const std::string& line) {
  const std::size_t colon = line.find(": ");
  const std::size_t space = line.find(' ', colon + 2);
  return {line.substr(0, colon), line.substr(colon + 2, space - colon - 2)};
}

// The replay of `trace` as the lines that changed: "+SECONDS pair: cause (evidence: ...)" when a
// pair's diagnosis line differs from its last one, "+SECONDS pair: (none)" when it went away;
// seconds since the trace's first observation.
std::vector<std::string> CauseTimeline(const fs::path& trace) {
  std::vector<std::string> timeline;
  std::map<std::string, std::string> current;  // pair -> its line
  std::optional<double> first;
  const auto replayed = trace::ReplayTrace(
      trace.string(), [&](const trace::TraceEvent& event, const analysis::Findings* findings,
                          const trace::Replayer& replayer) {
        const auto* store = std::get_if<trace::StoreEvent>(&event);
        if (findings == nullptr && store == nullptr) return;
        const double now = store != nullptr ? store->now
                           : std::holds_alternative<trace::KafkaEvent>(event)
                               ? std::get<trace::KafkaEvent>(event).now
                               : std::get<trace::FlinkEvent>(event).now;
        if (!first) first = now;
        char at[32];
        std::snprintf(at, sizeof at, "+%.1f ", now - *first);
        // A render follows every poll: the stores' entries are judged with the log then.
        std::map<std::string, std::string> seen;
        for (const std::string& line : trace::StoreLines(replayer.StoredPositions())) {
          seen[PairAndCause(line).first] = line;
        }
        if (findings != nullptr) {
          for (const std::string& line : trace::DiagnosisLines(*findings)) {
            seen[PairAndCause(line).first] = line;
          }
        } else {
          for (const auto& [pair, line] : current) {  // the diagnosis stands until the next one
            if (!pair.starts_with("store:") && !line.empty()) seen[pair] = line;
          }
        }
        for (const auto& [pair, line] : seen) {
          if (current[pair] != line) timeline.push_back(at + line);
        }
        for (const auto& [pair, line] : current) {
          if (!line.empty() && !seen.contains(pair)) timeline.push_back(at + pair + ": (none)");
        }
        current = std::move(seen);
      });
  REQUIRE(replayed.ok());
  return timeline;
}

double SecondsOf(const std::string& line) { return std::stod(line.substr(1, line.find(' '))); }

// Whether the timeline's `shown` pair is `pair`, where a `*` group stands for any group (a job
// whose group becomes known, or changes, is still one job: the suite watches it by name).
bool SamePair(const std::string& pair, const std::string& shown) {
  const std::size_t any = pair.find("/*/");
  if (any == std::string::npos) return shown == pair;
  const std::size_t group = shown.find('/');
  const std::size_t job = shown.find('/', group + 1);
  return group != std::string::npos && job != std::string::npos &&
         shown.substr(0, group) == pair.substr(0, any) &&
         shown.substr(job + 1) == pair.substr(any + 3);
}

// The longest time `pair` was without a diagnosis line after it first had one (to the
// timeline's last change when it never came back).
double LongestGap(const std::vector<std::string>& timeline, const std::string& pair) {
  std::set<std::string> showing;  // the matching pairs with a line now
  double gone_at = -1;            // when the last of them went away; -1 while one is shown
  double longest = 0;
  for (const std::string& line : timeline) {
    const auto [shown, cause] = PairAndCause(line.substr(line.find(' ') + 1));
    if (!SamePair(pair, shown)) continue;
    if (cause == "(none)") {
      showing.erase(shown);
      if (showing.empty()) gone_at = SecondsOf(line);
    } else {
      showing.insert(shown);
      if (gone_at >= 0) longest = std::max(longest, SecondsOf(line) - gone_at);
      gone_at = -1;
    }
  }
  if (gone_at >= 0) longest = std::max(longest, SecondsOf(timeline.back()) - gone_at);
  return longest;
}

std::vector<fs::path> Recordings() {
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(LAGSIGHT_TRACE_FIXTURES)) {
    if (entry.is_directory() && fs::exists(entry.path() / "trace.jsonl.gz")) {
      folders.push_back(entry.path());
    }
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

}  // namespace

TEST_CASE("recorded scenarios replay to the judgements they were kept with, and to the truth",
          "[trace][recorded]") {
  const auto recordings = Recordings();
  REQUIRE_FALSE(recordings.empty());
  const bool regenerate = std::getenv("LAGSIGHT_REGENERATE_TRACE_TIMELINES") != nullptr;
  for (const fs::path& folder : recordings) {
    CAPTURE(folder.filename().string());
    const std::vector<std::string> timeline = CauseTimeline(folder / "trace.jsonl.gz");
    if (regenerate) {
      std::ofstream out(folder / "causes.txt");
      for (const std::string& line : timeline) out << line << '\n';
    }
    const std::vector<std::string> kept = ReadLines(folder / "causes.txt");
    for (std::size_t i = 0; i < std::max(kept.size(), timeline.size()); ++i) {
      CAPTURE(i);
      REQUIRE((i < kept.size() ? kept[i] : "(end)") ==
              (i < timeline.size() ? timeline[i] : "(end)"));
    }

    // pair -> every cause shown, with when it was first shown
    std::map<std::string, std::map<std::string, double>> causes_of;
    for (const std::string& line : timeline) {
      const std::string change = line.substr(line.find(' ') + 1);
      const auto [pair, cause] = PairAndCause(change);
      if (cause != "(none)") causes_of[pair].try_emplace(cause, SecondsOf(line));
    }
    int rules = 0;
    for (const std::string& rule : ReadLines(folder / "truth.txt")) {
      if (rule.empty() || rule[0] == '#') continue;
      std::istringstream words(rule);
      std::string kind, pair, cause, until, bound;
      words >> kind >> pair >> cause >> until >> bound;
      const double before = until == "until" ? std::stod(bound.substr(1)) : 1e300;
      CAPTURE(rule);
      REQUIRE((kind == "expect" || kind == "never" || kind == "only" || kind == "continuous"));
      if (kind == "continuous") CHECK(LongestGap(timeline, pair) <= std::stod(cause));
      ++rules;
      if (kind == "expect") CHECK(causes_of[pair].contains(cause));
      if (kind == "never")
        CHECK_FALSE((causes_of[pair].contains(cause) && causes_of[pair].at(cause) < before));
      if (kind == "only") {
        std::set<std::string> allowed;
        std::istringstream list(cause);
        for (std::string one; std::getline(list, one, ',');) allowed.insert(one);
        for (const auto& [shown, at] : causes_of[pair]) {
          CAPTURE(shown);
          CHECK(allowed.contains(shown));
        }
      }
    }
    CHECK(rules > 0);
  }
}
