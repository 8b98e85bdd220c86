// The time of one Kafka poll: Deadline, what is left of the poll's time and how long the next
// request may take; PhaseTimes, where a slow poll spent it (logged at debug level). Internal to
// the collector.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace lagsight::kafka {

class Deadline {
 public:
  using SteadyClock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  Deadline(milliseconds poll_timeout, milliseconds request_timeout)
      : end_(SteadyClock::now() + poll_timeout), request_timeout_(request_timeout) {}

  milliseconds Left() const {
    return std::max(milliseconds(1),
                    std::chrono::duration_cast<milliseconds>(end_ - SteadyClock::now()));
  }
  milliseconds NextRequest() const { return std::min(request_timeout_, Left()); }
  bool Expired() const { return SteadyClock::now() >= end_; }

 private:
  SteadyClock::time_point end_;
  milliseconds request_timeout_;
};

// Where a slow poll spends its time, at debug level: listing, describing, committed offsets,
// log offsets and record timestamps grow differently with groups and partitions.
class PhaseTimes {
 public:
  using SteadyClock = std::chrono::steady_clock;

  void Done(const char* name) { phases_.emplace_back(name, SteadyClock::now()); }

  void Log(const std::string& cluster_name, std::size_t groups) const {
    if (!spdlog::should_log(spdlog::level::debug)) return;
    std::string times;
    auto since = started_;
    for (const auto& [name, at] : phases_) {
      times += fmt::format("{}{} {:.3f} s", times.empty() ? "" : ", ", name,
                           std::chrono::duration<double>(at - since).count());
      since = at;
    }
    spdlog::debug("kafka {}: poll of {} groups: {}", cluster_name, groups, times);
  }

 private:
  SteadyClock::time_point started_ = SteadyClock::now();
  std::vector<std::pair<const char*, SteadyClock::time_point>> phases_;
};

}  // namespace lagsight::kafka
