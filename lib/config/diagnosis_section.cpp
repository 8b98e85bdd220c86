// The schema of the `diagnosis:` mapping: how the diagnosis judges each job<->group pair and each
// Kafka-only group, the lateness targets it exports and the commit modes operators state.
#include <exception>
#include <sstream>
#include <string>

#include "config/sections.h"

namespace lagsight::config::internal {
namespace {

// The range of the diagnosis window, documented with the other durations in
// docs/configuration.md#limits.
constexpr std::chrono::milliseconds kMinDiagnosisWindow = std::chrono::seconds(5);
constexpr std::chrono::milliseconds kMaxDiagnosisWindow = std::chrono::hours(24);

// A number in the range (`low`, `high`] (or (`low`, `high`) when `high_exclusive`), from a
// YAML scalar; anything else fails with the range in the message.
double ReadNumber(const SectionReader& reader, const YAML::Node& node, const std::string& path,
                  double low, double high, bool high_exclusive = false) {
  const std::string text = reader.String(node, path);
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool below_high = high_exclusive ? value < high : value <= high;
  if (used != text.size() || !(value > low && below_high)) {
    std::ostringstream message;
    if (high_exclusive) {
      message << "must be a number between " << low << " and " << high << " (exclusive)";
    } else {
      message << "must be a number above " << low << " and at most " << high;
    }
    message << ", got \"" << text << "\"";
    reader.Fail(node, path, message.str());
  }
  return value;
}

// The window, thresholds and counts the causes are judged by; each keeps its default if absent.
void ReadJudgementSettings(const SectionReader& reader, const YAML::Node& node,
                           const std::string& path, DiagnosisConfig& diagnosis) {
  if (node["window"]) {
    diagnosis.window =
        reader.Duration(node["window"], path + ".window", kMinDiagnosisWindow, kMaxDiagnosisWindow);
  }
  reader.OptionalInteger(node, path, "confirm_polls", 1, 100, diagnosis.confirm_polls);
  reader.OptionalInteger(node, path, "lag_threshold_records", 1, 2'000'000'000,
                         diagnosis.lag_threshold_records);
  if (node["lag_threshold"]) {
    diagnosis.lag_threshold = reader.Duration(node["lag_threshold"], path + ".lag_threshold",
                                              std::chrono::seconds(0), std::chrono::hours(24));
  }
  if (const YAML::Node ratio = node["expiry_warning_ratio"]) {
    diagnosis.expiry_warning_ratio =
        ReadNumber(reader, ratio, path + ".expiry_warning_ratio", 0, 1, /*high_exclusive=*/true);
  }
  if (const YAML::Node gaps = node["checkpoint_stale_gaps"]) {
    diagnosis.checkpoint_stale_gaps =
        ReadNumber(reader, gaps, path + ".checkpoint_stale_gaps", 1, 1000);
  }
  if (const YAML::Node ratio = node["commit_failure_ratio"]) {
    diagnosis.commit_failure_ratio =
        ReadNumber(reader, ratio, path + ".commit_failure_ratio", 0, 1);
  }
  if (const YAML::Node periods = node["stalled_commit_periods"]) {
    diagnosis.stalled_commit_periods =
        ReadNumber(reader, periods, path + ".stalled_commit_periods", 1, 1000);
  }
  reader.OptionalInteger(node, path, "restart_loop_restarts", 1, 10000,
                         diagnosis.restart_loop_restarts);
  if (node["job_gone_after"]) {
    diagnosis.job_gone_after = reader.Duration(node["job_gone_after"], path + ".job_gone_after",
                                               std::chrono::seconds(1), std::chrono::hours(24));
  }
  if (node["catch_up_target"]) {
    diagnosis.catch_up_target = reader.Duration(node["catch_up_target"], path + ".catch_up_target",
                                                std::chrono::seconds(10), std::chrono::days(7));
  }
}

// One `lateness_targets` item: the jobs or the groups it is for, and how late they may get.
LatenessTarget ReadLatenessTarget(const SectionReader& reader, const YAML::Node& item,
                                  const std::string& item_path) {
  reader.RequireMap(item, item_path);
  reader.RequireOnlyKeys(item, item_path, {"job", "group", "target"});
  if (item["job"].IsDefined() == item["group"].IsDefined()) {
    reader.Fail(item, item_path,
                "needs exactly one of \"job\" (a job name pattern) or "
                "\"group\" (a consumer group pattern)");
  }
  reader.RequireKey(item, item_path, "target");
  const bool of_jobs = item["job"].IsDefined();
  const std::string key = of_jobs ? "job" : "group";
  Pattern pattern = reader.Regex(item[key], item_path + "." + key);
  return {of_jobs ? LatenessTarget::Of::kJobs : LatenessTarget::Of::kGroups, std::move(pattern),
          reader.Duration(item["target"], item_path + ".target", std::chrono::seconds(1),
                          std::chrono::days(30))};
}

// One `commit_modes` item: the jobs it is for and how they keep their position.
CommitModeRule ReadCommitModeRule(const SectionReader& reader, const YAML::Node& item,
                                  const std::string& item_path) {
  reader.RequireMap(item, item_path);
  reader.RequireOnlyKeys(item, item_path, {"job", "mode"});
  for (const char* required : {"job", "mode"}) reader.RequireKey(item, item_path, required);
  Pattern job = reader.Regex(item["job"], item_path + ".job");
  const std::string mode = reader.String(item["mode"], item_path + ".mode");
  CommitModeRule rule{std::move(job), CommitModeRule::Mode::kCheckpoint};
  if (mode == "external") {
    rule.mode = CommitModeRule::Mode::kExternal;
  } else if (mode == "none") {
    rule.mode = CommitModeRule::Mode::kNone;
  } else if (mode == "auto") {
    rule.mode = CommitModeRule::Mode::kAuto;
  } else if (mode != "checkpoint") {
    reader.Fail(item["mode"], item_path + ".mode",
                "\"" + mode + "\" must be checkpoint, auto, external or none");
  }
  return rule;
}

}  // namespace

DiagnosisConfig ReadDiagnosis(const SectionReader& reader, const YAML::Node& node,
                              const std::string& path) {
  reader.RequireMap(node, path);
  reader.RequireOnlyKeys(node, path,
                         {"window", "confirm_polls", "lag_threshold_records", "lag_threshold",
                          "expiry_warning_ratio", "checkpoint_stale_gaps", "commit_failure_ratio",
                          "stalled_commit_periods", "restart_loop_restarts", "job_gone_after",
                          "catch_up_target", "lateness_targets", "commit_modes"});
  DiagnosisConfig diagnosis;
  ReadJudgementSettings(reader, node, path, diagnosis);
  if (const YAML::Node targets = node["lateness_targets"]; targets && !targets.IsNull()) {
    const std::string targets_path = path + ".lateness_targets";
    if (!targets.IsSequence()) {
      reader.Fail(targets, targets_path, "must be a list of {job or group, target}");
    }
    for (std::size_t i = 0; i < targets.size(); ++i) {
      diagnosis.lateness_targets.push_back(
          ReadLatenessTarget(reader, targets[i], SectionReader::ItemPath(targets_path, i)));
    }
  }
  if (const YAML::Node modes = node["commit_modes"]; modes && !modes.IsNull()) {
    const std::string modes_path = path + ".commit_modes";
    if (!modes.IsSequence()) reader.Fail(modes, modes_path, "must be a list of {job, mode}");
    for (std::size_t i = 0; i < modes.size(); ++i) {
      diagnosis.commit_modes.push_back(
          ReadCommitModeRule(reader, modes[i], SectionReader::ItemPath(modes_path, i)));
    }
  }
  return diagnosis;
}

}  // namespace lagsight::config::internal
