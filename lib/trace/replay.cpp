#include "trace/replay.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <utility>

namespace lagsight::trace {

std::shared_ptr<const analysis::Findings> Replayer::Apply(const TraceEvent& event) {
  if (const auto* config = std::get_if<ConfigEvent>(&event)) {
    analyzer_.SetConfig(config->diagnosis);
    return nullptr;
  }
  if (const auto* retain = std::get_if<RetainEvent>(&event)) {
    // The daemon's view holds only configured sources; the analyzer forgets the others.
    std::erase_if(sources_.kafka,
                  [&](const auto& entry) { return !retain->kafka_clusters.contains(entry.first); });
    std::erase_if(sources_.flink,
                  [&](const auto& entry) { return !retain->flink_clusters.contains(entry.first); });
    analyzer_.Retain(retain->kafka_clusters, retain->flink_clusters);
    return nullptr;
  }
  if (const auto* kafka = std::get_if<KafkaEvent>(&event)) {
    analysis::KafkaPoll& poll = sources_.kafka[kafka->cluster];
    poll = analysis::DeriveKafkaPoll(kafka->snapshot, poll);
    if (!kafka->observe) return nullptr;
    return analyzer_.ObserveKafka(kafka->cluster, sources_, kafka->now);
  }
  if (const auto* store = std::get_if<StoreEvent>(&event)) {
    auto reading =
        store->snapshot ? std::make_shared<const stores::StoreSnapshot>(*store->snapshot) : nullptr;
    sources_.stores[store->cluster] = reading;
    stores_[store->cluster].Keep(std::move(reading));
    return nullptr;
  }
  const auto& flink = std::get<FlinkEvent>(event);
  sources_.flink[flink.cluster] = {
      std::make_shared<const config::FlinkClusterConfig>(flink.config),
      flink.snapshot ? std::make_shared<const flink::FlinkSnapshot>(*flink.snapshot) : nullptr};
  if (!flink.observe) return nullptr;
  return analyzer_.ObserveFlink(flink.cluster, sources_, flink.now);
}

std::map<std::string, std::vector<analysis::StoredJobPositions>> Replayer::StoredPositions() const {
  std::map<std::string, std::vector<analysis::StoredJobPositions>> joined;
  for (const auto& [name, readings] : stores_) joined[name] = readings.Join(sources_);
  return joined;
}

Result<std::size_t> ReplayTrace(const std::string& path, const ReplayStep& step,
                                std::size_t max_line_bytes) {
  auto reader = TraceReader::Open(path, max_line_bytes);
  if (!reader) return reader.error();
  Replayer replayer;
  std::size_t events = 0;
  while (true) {
    auto event = reader->Next();
    if (!event) return Error{path + ": " + event.error().message};
    if (!*event) return events;
    const auto findings = replayer.Apply(**event);
    ++events;
    step(**event, findings.get(), replayer);
  }
}

std::vector<std::string> DiagnosisLines(const analysis::Findings& findings) {
  const auto shown = [](const std::string& name) { return name.empty() ? "-" : name; };
  std::vector<std::string> lines;
  for (const analysis::DiagnosisFinding& finding : findings.diagnosis) {
    std::string evidence;
    for (const analysis::Cause cause : finding.evidence) {
      if (!evidence.empty()) evidence += ", ";
      evidence += analysis::CauseName(cause);
    }
    lines.push_back(fmt::format("{}/{}/{}: {} (evidence: {})", finding.kafka_cluster,
                                shown(finding.group), shown(finding.job_name),
                                analysis::CauseName(finding.cause),
                                evidence.empty() ? "none" : evidence));
  }
  return lines;
}

std::vector<std::string> StoreLines(
    const std::map<std::string, std::vector<analysis::StoredJobPositions>>& stores) {
  std::vector<std::string> lines;
  for (const auto& [store, jobs] : stores) {
    for (const analysis::StoredJobPositions& job : jobs) {
      for (const analysis::StoredTopic& topic : job.topics) {
        lines.push_back(fmt::format(
            "store:{}/{}/{}: {} (partitions: {})", store, job.job_name, topic.topic,
            topic.beyond_log_end > 0 ? "beyond_log_end" : "within", topic.beyond_log_end));
      }
    }
  }
  return lines;
}

std::string FormatUnixTime(double unix_seconds) {
  const double total_ms = std::round(unix_seconds * 1000);
  // Beyond any calendar lagsight runs in (or not a number): as it is.
  if (!(std::abs(total_ms) < 1e15)) return fmt::format("{}", unix_seconds);
  const auto ms = static_cast<std::int64_t>(total_ms);
  std::int64_t seconds = ms / 1000;
  std::int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  const auto time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  if (gmtime_r(&time, &utc) == nullptr) return fmt::format("{}", unix_seconds);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
}

namespace {

// The time, the event, its source and whether its poll failed.
template <typename Event>
void PrintHeading(std::FILE* out, const TraceEvent& event, const Event& polled) {
  fmt::print(out, "{} {} {}{}\n", FormatUnixTime(polled.now), EventName(event), polled.cluster,
             polled.snapshot ? "" : " (poll failed)");
}

void PrintStep(std::FILE* out, const TraceEvent& event, const analysis::Findings* findings,
               const Replayer& replayer) {
  if (const auto* retain = std::get_if<RetainEvent>(&event)) {
    fmt::print(out, "retain kafka=[{}] flink=[{}]\n", fmt::join(retain->kafka_clusters, ","),
               fmt::join(retain->flink_clusters, ","));
    return;
  }
  if (std::holds_alternative<ConfigEvent>(event)) {
    fmt::print(out, "config\n");
    return;
  }
  if (const auto* store = std::get_if<StoreEvent>(&event)) {
    PrintHeading(out, event, *store);
    for (const std::string& line : StoreLines(replayer.StoredPositions())) {
      fmt::print(out, "  {}\n", line);
    }
    return;
  }
  if (findings == nullptr) return;  // a source's state, read by the next observation
  if (const auto* kafka = std::get_if<KafkaEvent>(&event)) {
    PrintHeading(out, event, *kafka);
  } else {
    PrintHeading(out, event, std::get<FlinkEvent>(event));
  }
  for (const std::string& line : DiagnosisLines(*findings)) fmt::print(out, "  {}\n", line);
  // A render follows every poll: the stores' entries are judged against the newest log ends.
  for (const std::string& line : StoreLines(replayer.StoredPositions())) {
    fmt::print(out, "  {}\n", line);
  }
}

}  // namespace

int RunReplayCommand(const std::string& path, std::FILE* out, std::FILE* err) {
  const auto replayed = ReplayTrace(
      path, [out](const TraceEvent& event, const analysis::Findings* findings,
                  const Replayer& replayer) { PrintStep(out, event, findings, replayer); });
  std::fflush(out);
  if (!replayed) {
    fmt::print(err, "lagsight replay: {}\n", replayed.error().message);
    return 1;
  }
  fmt::print(err, "lagsight replay: {} events replayed from {}\n", *replayed, path);
  return 0;
}

}  // namespace lagsight::trace
