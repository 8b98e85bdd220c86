// trace::TraceRecorder: writes what the daemon hands the analysis to a trace file (trace_event.h),
// for a bug report that replays in seconds (trace/replay.h, `lagsight replay`).
//
// Bounded on disk: once the file holds `max_bytes` it is renamed to `<path>.1` (replacing the
// older one) and a new file begins, so at most about twice the bound is on disk (each file may
// exceed it by the observation that crossed it). Opening also moves an existing file to `.1`, so
// a restart keeps the run before it. Every file replays on its own: it begins with the latest
// config and retain events and, with the first observation, the latest state of every source.
// A source whose state changed since it was last written (a poll the analyzer was not handed
// yet) is written as a state event before the observation that reads it.
//
// It writes synchronously and flushes after each event: the daemon calls it on its analysis
// strand (beside the analysis, which takes far longer than a poll's JSON), never on the event
// loop. A write that fails is logged once and ends the recording; the daemon goes on. Not
// thread-safe: one caller at a time.
#pragma once

#include <cstddef>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analysis/findings.h"
#include "common/result.h"

namespace lagsight::trace {

inline constexpr std::size_t kDefaultTraceMaxBytes = 256 * 1024 * 1024;

class TraceRecorder {
 public:
  // Starts a new trace at `path`. The error says why the file cannot be written.
  static Result<std::unique_ptr<TraceRecorder>> Open(std::string path, std::size_t max_bytes);

  void RecordConfig(const config::DiagnosisConfig& diagnosis);
  void RecordRetain(const std::set<std::string>& kafka_clusters,
                    const std::set<std::string>& flink_clusters);
  // Cluster `cluster` was handed to the analyzer with `sources` at `now`.
  void RecordKafkaObservation(const std::string& cluster, const analysis::SourcesView& sources,
                              double now);
  void RecordFlinkObservation(const std::string& cluster, const analysis::SourcesView& sources,
                              double now);
  // Position store `store`'s poll ended at `now`: its latest reading in `sources` (none: failed).
  void RecordStoreReading(const std::string& store, const analysis::SourcesView& sources,
                          double now);

  // False once a write failed.
  bool recording() const { return file_ != nullptr; }
  std::size_t bytes_in_file() const { return bytes_in_file_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  enum class Kind { kKafka, kFlink };
  using SourceKey = std::pair<Kind, std::string>;
  // What was last written of a source: its snapshot and (Flink) config, compared by identity.
  struct Written {
    std::weak_ptr<const void> snapshot;
    std::weak_ptr<const void> config;
  };

  TraceRecorder(std::string path, std::size_t max_bytes)
      : path_(std::move(path)), max_bytes_(max_bytes) {}

  Result<bool> StartFile();
  void RecordObservation(const SourceKey& observed, const analysis::SourcesView& sources,
                         double now);
  // Writes `key`'s state from `sources`: always when `observe`, else only when it is not what was
  // last written of it.
  void WriteSource(const SourceKey& key, const analysis::SourcesView& sources, double now,
                   bool observe);
  // False when nothing can be written: recording stopped, or the file at its bound could not
  // be replaced by a new one (a new file begins here otherwise).
  bool ReadyToWrite();
  void Write(const std::string& line);
  void Flush();
  void Fail(const std::string& what);

  std::string path_;
  std::size_t max_bytes_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::size_t bytes_in_file_ = 0;
  std::optional<std::string> config_line_;  // the latest, for the top of the next file
  std::optional<std::string> retain_line_;
  std::map<SourceKey, Written> written_;  // in the current file
};

}  // namespace lagsight::trace
