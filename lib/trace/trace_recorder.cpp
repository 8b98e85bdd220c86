#include "trace/trace_recorder.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "trace/trace_format.h"

namespace lagsight::trace {

namespace {

// Whether `written` still points at what `current` points at (both null counts as the same).
bool Same(const std::weak_ptr<const void>& written, const std::shared_ptr<const void>& current) {
  return !written.owner_before(current) && !current.owner_before(written);
}

}  // namespace

Result<std::unique_ptr<TraceRecorder>> TraceRecorder::Open(std::string path,
                                                           std::size_t max_bytes) {
  std::unique_ptr<TraceRecorder> recorder(new TraceRecorder(std::move(path), max_bytes));
  if (auto started = recorder->StartFile(); !started) return started.error();
  return recorder;
}

// Moves the current file (or one a previous run left) to `<path>.1` and opens a new one.
Result<bool> TraceRecorder::StartFile() {
  file_.reset();
  std::error_code error;
  if (std::filesystem::exists(path_, error)) {
    std::filesystem::rename(path_, path_ + ".1", error);
    if (error) return Error{path_ + ": cannot move it to " + path_ + ".1: " + error.message()};
  }
  file_.reset(std::fopen(path_.c_str(), "wb"));
  if (file_ == nullptr) return Error{path_ + ": " + std::strerror(errno)};
  bytes_in_file_ = 0;
  written_.clear();
  if (config_line_) Write(*config_line_);
  if (retain_line_) Write(*retain_line_);
  return true;
}

void TraceRecorder::RecordConfig(const config::DiagnosisConfig& diagnosis) {
  config_line_ = FormatConfigEvent(diagnosis);
  Write(*config_line_);
  Flush();
}

void TraceRecorder::RecordRetain(const std::set<std::string>& kafka_clusters,
                                 const std::set<std::string>& flink_clusters) {
  retain_line_ = FormatRetainEvent(kafka_clusters, flink_clusters);
  // A source dropped and configured again later is written anew.
  std::erase_if(written_, [&](const auto& entry) {
    const auto& names = entry.first.first == Kind::kKafka ? kafka_clusters : flink_clusters;
    return !names.contains(entry.first.second);
  });
  Write(*retain_line_);
  Flush();
}

void TraceRecorder::RecordKafkaObservation(const std::string& cluster,
                                           const analysis::SourcesView& sources, double now) {
  RecordObservation({Kind::kKafka, cluster}, sources, now);
}

void TraceRecorder::RecordFlinkObservation(const std::string& cluster,
                                           const analysis::SourcesView& sources, double now) {
  RecordObservation({Kind::kFlink, cluster}, sources, now);
}

void TraceRecorder::RecordStoreReading(const std::string& store,
                                       const analysis::SourcesView& sources, double now) {
  if (!ReadyToWrite()) return;
  const auto reading = sources.stores.find(store);
  Write(FormatStoreEvent(store, now,
                         reading != sources.stores.end() ? reading->second.get() : nullptr));
  Flush();
}

void TraceRecorder::RecordObservation(const SourceKey& observed,
                                      const analysis::SourcesView& sources, double now) {
  if (!ReadyToWrite()) return;
  for (const auto& [name, poll] : sources.kafka) {
    if (SourceKey key{Kind::kKafka, name}; key != observed) WriteSource(key, sources, now, false);
  }
  for (const auto& [name, flink] : sources.flink) {
    if (SourceKey key{Kind::kFlink, name}; key != observed) WriteSource(key, sources, now, false);
  }
  WriteSource(observed, sources, now, true);
  Flush();
}

void TraceRecorder::WriteSource(const SourceKey& key, const analysis::SourcesView& sources,
                                double now, bool observe) {
  const auto& [kind, name] = key;
  std::shared_ptr<const void> snapshot;
  std::shared_ptr<const void> config;
  if (kind == Kind::kKafka) {
    const auto found = sources.kafka.find(name);
    if (found != sources.kafka.end()) snapshot = found->second.snapshot;
  } else {
    const auto found = sources.flink.find(name);
    if (found != sources.flink.end()) {
      config = found->second.config;
      snapshot = found->second.snapshot;
    }
  }
  const auto written = written_.find(key);
  if (!observe && written != written_.end() && Same(written->second.snapshot, snapshot) &&
      Same(written->second.config, config)) {
    return;
  }
  if (kind == Kind::kKafka) {
    Write(FormatKafkaEvent(name, now, observe,
                           static_cast<const kafka::KafkaSnapshot*>(snapshot.get())));
  } else {
    static const config::FlinkClusterConfig kUnknownConfig;
    Write(FormatFlinkEvent(
        name, now, observe,
        config ? *static_cast<const config::FlinkClusterConfig*>(config.get()) : kUnknownConfig,
        static_cast<const flink::FlinkSnapshot*>(snapshot.get())));
  }
  written_[key] = {snapshot, config};
}

bool TraceRecorder::ReadyToWrite() {
  if (file_ == nullptr) return false;
  if (bytes_in_file_ >= max_bytes_) {
    if (auto started = StartFile(); !started) {
      Fail(started.error().message);
      return false;
    }
  }
  return true;
}

void TraceRecorder::Write(const std::string& line) {
  if (file_ == nullptr) return;
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size()) {
    Fail(std::strerror(errno));
    return;
  }
  bytes_in_file_ += line.size();
}

void TraceRecorder::Flush() {
  if (file_ != nullptr && std::fflush(file_.get()) != 0) Fail(std::strerror(errno));
}

void TraceRecorder::Fail(const std::string& what) {
  spdlog::error("trace {}: writing failed, recording stops: {}", path_, what);
  file_.reset();
}

}  // namespace lagsight::trace
