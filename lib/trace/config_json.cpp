#include "trace/config_json.h"

#include <fmt/format.h>

#include <utility>

namespace lagsight::trace {

namespace {

using json::AppendInt;
using json::AppendString;
using json::Field;
using json::ReadArray;
using json::ReadString;

void AppendPattern(std::string& out, const config::Pattern& pattern) {
  AppendString(out, pattern.text());
}

config::Pattern ReadPattern(json::element e, std::string_view what) {
  auto pattern = config::Pattern::Compile(ReadString(e, what));
  if (!pattern) throw json::FormatError(std::string(what) + ": " + pattern.error().message);
  return std::move(pattern).value();
}

std::optional<config::Pattern> ReadOptionalPattern(json::element e, std::string_view what) {
  return json::ReadOptional(e, what, ReadPattern);
}

void AppendMilliseconds(std::string& out, const char* key, std::chrono::milliseconds duration) {
  out += ",\"";
  out += key;
  out += "_ms\":";
  AppendInt(out, duration.count());
}

std::chrono::milliseconds ReadMilliseconds(json::object o, const std::string& key) {
  return std::chrono::milliseconds(json::ReadInt(Field(o, key + "_ms"), key));
}

constexpr std::pair<config::CommitModeRule::Mode, const char*> kModeNames[] = {
    {config::CommitModeRule::Mode::kCheckpoint, "checkpoint"},
    {config::CommitModeRule::Mode::kAuto, "auto"},
    {config::CommitModeRule::Mode::kExternal, "external"},
    {config::CommitModeRule::Mode::kNone, "none"}};

void AppendRules(std::string& out, const config::DiagnosisConfig& config) {
  out += ",\"lateness_targets\":[";
  for (std::size_t i = 0; i < config.lateness_targets.size(); ++i) {
    const config::LatenessTarget& target = config.lateness_targets[i];
    out += i > 0 ? ",{\"of\":" : "{\"of\":";
    out += target.of == config::LatenessTarget::Of::kJobs ? "\"jobs\"" : "\"groups\"";
    out += ",\"pattern\":";
    AppendPattern(out, target.pattern);
    AppendMilliseconds(out, "target", target.target);
    out += '}';
  }
  out += "],\"commit_modes\":[";
  for (std::size_t i = 0; i < config.commit_modes.size(); ++i) {
    const config::CommitModeRule& rule = config.commit_modes[i];
    out += i > 0 ? ",{\"job\":" : "{\"job\":";
    AppendPattern(out, rule.job);
    out += ",\"mode\":\"";
    for (const auto& [mode, name] : kModeNames) {
      if (mode == rule.mode) out += name;
    }
    out += "\"}";
  }
  out += ']';
}

config::CommitModeRule::Mode ReadMode(json::element e) {
  const std::string name = ReadString(e, "mode");
  for (const auto& [mode, mode_name] : kModeNames) {
    if (name == mode_name) return mode;
  }
  throw json::FormatError("mode: unknown \"" + name + "\"");
}

void ReadRules(json::object o, config::DiagnosisConfig& config) {
  for (const json::element item : ReadArray(Field(o, "lateness_targets"), "lateness_targets")) {
    const json::object target = json::ReadObject(item, "lateness_targets[]");
    const std::string of = ReadString(Field(target, "of"), "of");
    if (of != "jobs" && of != "groups") throw json::FormatError("of: expected jobs or groups");
    config.lateness_targets.push_back(
        {of == "jobs" ? config::LatenessTarget::Of::kJobs : config::LatenessTarget::Of::kGroups,
         ReadPattern(Field(target, "pattern"), "pattern"), ReadMilliseconds(target, "target")});
  }
  for (const json::element item : ReadArray(Field(o, "commit_modes"), "commit_modes")) {
    const json::object rule = json::ReadObject(item, "commit_modes[]");
    config.commit_modes.push_back(
        {ReadPattern(Field(rule, "job"), "job"), ReadMode(Field(rule, "mode"))});
  }
}

constexpr std::pair<const char*, double config::DiagnosisConfig::*> kRatios[] = {
    {"expiry_warning_ratio", &config::DiagnosisConfig::expiry_warning_ratio},
    {"checkpoint_stale_gaps", &config::DiagnosisConfig::checkpoint_stale_gaps},
    {"commit_failure_ratio", &config::DiagnosisConfig::commit_failure_ratio},
    {"stalled_commit_periods", &config::DiagnosisConfig::stalled_commit_periods}};

// A trace is input from anywhere: its config is held to the ranges the config file is
// (config.cpp), so that no setting the daemon could never run with reaches the analyzer.
void RequireInRange(std::string_view key, double value, double low, double high) {
  if (!(value >= low && value <= high)) {
    throw json::FormatError(fmt::format("{}: {} is outside {}..{}", key, value, low, high));
  }
}

void RequireValidRanges(const config::DiagnosisConfig& config) {
  const auto seconds = [](std::chrono::milliseconds duration) {
    return static_cast<double>(duration.count()) / 1000;
  };
  RequireInRange("window_ms", seconds(config.window), 5, 86400);
  RequireInRange("confirm_polls", config.confirm_polls, 1, 100);
  RequireInRange("lag_threshold_records", static_cast<double>(config.lag_threshold_records), 1,
                 2e9);
  RequireInRange("lag_threshold_ms", seconds(config.lag_threshold), 0, 86400);
  RequireInRange("expiry_warning_ratio", config.expiry_warning_ratio, 0, 1);
  RequireInRange("checkpoint_stale_gaps", config.checkpoint_stale_gaps, 1, 1000);
  RequireInRange("commit_failure_ratio", config.commit_failure_ratio, 0, 1);
  RequireInRange("stalled_commit_periods", config.stalled_commit_periods, 1, 1000);
  RequireInRange("restart_loop_restarts", config.restart_loop_restarts, 1, 10000);
  RequireInRange("job_gone_after_ms", seconds(config.job_gone_after), 1, 86400);
  RequireInRange("catch_up_target_ms", seconds(config.catch_up_target), 10, 7 * 86400);
  for (const config::LatenessTarget& target : config.lateness_targets) {
    RequireInRange("target_ms", seconds(target.target), 0, 1e9);
  }
}

}  // namespace

void AppendDiagnosisConfig(std::string& out, const config::DiagnosisConfig& config) {
  out += "{\"confirm_polls\":";
  AppendInt(out, config.confirm_polls);
  out += ",\"lag_threshold_records\":";
  AppendInt(out, config.lag_threshold_records);
  out += ",\"restart_loop_restarts\":";
  AppendInt(out, config.restart_loop_restarts);
  AppendMilliseconds(out, "window", config.window);
  AppendMilliseconds(out, "lag_threshold", config.lag_threshold);
  AppendMilliseconds(out, "job_gone_after", config.job_gone_after);
  AppendMilliseconds(out, "catch_up_target", config.catch_up_target);
  for (const auto& [key, member] : kRatios) {
    out += ",\"";
    out += key;
    out += "\":";
    json::AppendDouble(out, config.*member);
  }
  AppendRules(out, config);
  out += '}';
}

config::DiagnosisConfig ReadDiagnosisConfig(json::element e) {
  const json::object o = json::ReadObject(e, "diagnosis");
  config::DiagnosisConfig config;
  config.confirm_polls = json::ReadInt32(Field(o, "confirm_polls"), "confirm_polls");
  config.lag_threshold_records =
      json::ReadInt(Field(o, "lag_threshold_records"), "lag_threshold_records");
  config.restart_loop_restarts =
      json::ReadInt32(Field(o, "restart_loop_restarts"), "restart_loop_restarts");
  config.window = ReadMilliseconds(o, "window");
  config.lag_threshold = ReadMilliseconds(o, "lag_threshold");
  config.job_gone_after = ReadMilliseconds(o, "job_gone_after");
  // Absent from traces written before the catch-up target existed: its default.
  if (json::element target; !o["catch_up_target_ms"].get(target)) {
    config.catch_up_target = std::chrono::milliseconds(json::ReadInt(target, "catch_up_target"));
  }
  for (const auto& [key, member] : kRatios) {
    config.*member = json::ReadDouble(Field(o, key), key);
  }
  ReadRules(o, config);
  RequireValidRanges(config);
  return config;
}

void AppendFlinkClusterConfig(std::string& out, const config::FlinkClusterConfig& config) {
  out += "{\"name\":";
  AppendString(out, config.name);
  out += ",\"kafka_cluster\":";
  AppendString(out, config.kafka_cluster);
  out += ",\"groups\":[";
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    const config::FlinkGroupMapping& mapping = config.groups[i];
    out += i > 0 ? ",{\"job\":" : "{\"job\":";
    AppendPattern(out, mapping.job);
    out += ",\"group\":";
    AppendString(out, mapping.group);
    out += ",\"kafka_cluster\":";
    AppendString(out, mapping.kafka_cluster);
    out += ",\"source\":";
    json::AppendOptional(out, mapping.source, AppendPattern);
    out += '}';
  }
  out += "],\"read_committed_jobs\":[";
  for (std::size_t i = 0; i < config.read_committed_jobs.size(); ++i) {
    if (i > 0) out += ',';
    AppendPattern(out, config.read_committed_jobs[i]);
  }
  out += "]}";
}

config::FlinkClusterConfig ReadFlinkClusterConfig(json::element e) {
  const json::object o = json::ReadObject(e, "config");
  config::FlinkClusterConfig config;
  config.name = ReadString(Field(o, "name"), "name");
  config.kafka_cluster = ReadString(Field(o, "kafka_cluster"), "kafka_cluster");
  for (const json::element item : ReadArray(Field(o, "groups"), "groups")) {
    const json::object mapping = json::ReadObject(item, "groups[]");
    config.groups.push_back({ReadPattern(Field(mapping, "job"), "job"),
                             ReadString(Field(mapping, "group"), "group"),
                             ReadString(Field(mapping, "kafka_cluster"), "kafka_cluster"),
                             ReadOptionalPattern(Field(mapping, "source"), "source")});
  }
  for (const json::element item :
       ReadArray(Field(o, "read_committed_jobs"), "read_committed_jobs")) {
    config.read_committed_jobs.push_back(ReadPattern(item, "read_committed_jobs[]"));
  }
  return config;
}

}  // namespace lagsight::trace
