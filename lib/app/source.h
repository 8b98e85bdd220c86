// app::Source: one thing the daemon polls on a timer: a Kafka cluster, a Flink cluster's REST
// API, and whatever comes next (an external offset store is one more implementation of this
// interface, plus its configuration).
//
// The daemon drives every source the same way (daemon.cpp): Poll(); when `done` runs, Observe()
// into the analyzer; Renderer() when the exposition is rendered. Health, timers, readiness and
// reloads are the daemon's and the same for every source. A source holds its latest state and
// hands it out only as shared, immutable values (its entry in SourcesView, the Renderer's
// captures), so a render on a worker never races the next poll.
//
// Every method but Observe() is called on the event-loop thread. Poll() may do its work
// elsewhere (a worker thread, a coroutine) but calls `done` on the event loop, after the source
// stored what it read. Observe() runs on the daemon's analysis strand, beside the next poll: it
// may read only what does not change after construction (its name, its configuration).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "analysis/analyzer.h"
#include "metrics/exposition.h"
#include "metrics/poll_status.h"

namespace lagsight::app {

class Source {
 public:
  // Also the order in which the daemon polls, renders and lists sources.
  enum class Kind { kKafka, kFlink, kStore };
  // Runs on the event loop once the poll ended: none = it succeeded.
  using Done = std::function<void(std::optional<std::string> error)>;
  // Appends the source's series; runs on a worker with the findings of the same render.
  using Render = std::function<void(const analysis::Findings& findings, double now_unix_seconds,
                                    metrics::FamilyBuilder& out)>;

  virtual ~Source() = default;

  virtual Kind kind() const = 0;
  virtual const std::string& name() const = 0;
  virtual std::chrono::milliseconds poll_interval() const = 0;

  // Starts one poll. `sources` is every source's latest state (a Kafka poll also reads what
  // the Flink jobs read). Not called again before `done` ran.
  virtual void Poll(const analysis::SourcesView& sources, Done done) = 0;

  // Puts the latest state into `view` (also while down: a null snapshot says so).
  virtual void AddTo(analysis::SourcesView& view) const = 0;

  // Hands the latest poll (already in `sources`) to the analyzer and returns its findings;
  // null when the analysis has nothing new from this source.
  virtual std::shared_ptr<const analysis::Findings> Observe(analysis::Analyzer& analyzer,
                                                            const analysis::SourcesView& sources,
                                                            double now_unix_seconds) = 0;

  // `sources`: every source's latest state as the render starts. A source whose series compare
  // its facts with another source's (a store's entries with the log ends) compares them here,
  // against the newest of the other's readings, not against those of when its own poll began.
  virtual Render Renderer(const metrics::PollStatus& status,
                          const analysis::SourcesView& sources) const = 0;

  // Whether what the other sources hold now (`sources`, after one of them polled) makes this
  // source's next poll worth starting at once instead of on its schedule: a Flink job names a
  // topic whose log end a Kafka cluster did not read. Called on the event loop while this
  // source is not polling; each reason may start one early poll.
  virtual bool WantsEarlyPoll(const analysis::SourcesView& /*sources*/) { return false; }

  // This source replaces `previous` (same kind and name, changed settings): it serves the
  // previous data until its own first poll, so a reload does not blank the series.
  virtual void TakeOver(const Source& previous) = 0;

  // A reload removed or replaced this source: release what is costly to hold (a poll in flight
  // may still finish, and nothing it reads is used).
  virtual void Retire() {}
};

// "kafka", "flink" or "store", as logs, readiness and the status page name the kind.
std::string_view KindName(Source::Kind kind);

}  // namespace lagsight::app
