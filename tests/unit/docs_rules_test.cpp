// docs/diagnosis.md's "Diagnosis rules" tables against the code: the causes in precedence order,
// and every threshold key with its default. The tables are what an operator reads at 3 a.m.; a
// rule order or a default that drifts from the code would send them the wrong way.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "analysis/diagnosis.h"
#include "config/config.h"
#include "config/duration.h"

using namespace lagsight;

namespace {

std::string ReadDoc(const std::string& page) {
  std::ifstream file(std::string(LAGSIGHT_DOCS) + "/" + page);
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string RulesSection() {
  const std::string doc = ReadDoc("diagnosis.md");
  const auto start = doc.find("\n## Diagnosis rules\n");
  REQUIRE(start != std::string::npos);
  const auto end = doc.find("\n## ", start + 1);
  return doc.substr(start, end == std::string::npos ? end : end - start);
}

// The `cause` column of the table whose header names `kind`, in order, healthy excluded.
std::vector<std::string> TableCauses(const std::string& section, const std::string& kind) {
  const auto header = section.find("| order | cause | rule (" + kind + ")");
  REQUIRE(header != std::string::npos);
  std::istringstream lines(section.substr(header));
  std::string line;
  std::vector<std::string> causes;
  std::getline(lines, line);  // header
  std::getline(lines, line);  // separator
  static const std::regex kRow(R"(^\| \d+ \| `([a-z_]+)` \|)");
  while (std::getline(lines, line) && line.rfind("|", 0) == 0) {
    std::smatch match;
    if (std::regex_search(line, match, kRow) && match[1] != "healthy") causes.push_back(match[1]);
  }
  return causes;
}

std::vector<std::string> Names(const std::vector<analysis::Cause>& causes) {
  std::vector<std::string> names;
  for (const analysis::Cause cause : causes) names.push_back(analysis::CauseName(cause));
  return names;
}

std::string DefaultOf(const std::string& section, const std::string& key) {
  const std::regex row("\\| `" + key + "` \\| ([^|]+) \\|");
  std::smatch match;
  if (!std::regex_search(section, match, row)) return "(missing)";
  std::string value = match[1];
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

std::string Number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

TEST_CASE("docs: the diagnosis tables list the causes in the code's precedence", "[analysis]") {
  const std::string section = RulesSection();
  CHECK(TableCauses(section, "job↔group pair") == Names(analysis::PairPrecedence()));
  CHECK(TableCauses(section, "Kafka-only group") == Names(analysis::GroupPrecedence()));
}

TEST_CASE("docs: every diagnosis threshold is listed with the code's default", "[analysis]") {
  const std::string section = RulesSection();
  const config::DiagnosisConfig defaults;
  CHECK(DefaultOf(section, "window") == config::FormatDuration(defaults.window));
  CHECK(DefaultOf(section, "confirm_polls") == std::to_string(defaults.confirm_polls));
  CHECK(DefaultOf(section, "lag_threshold_records") ==
        std::to_string(defaults.lag_threshold_records));
  CHECK(DefaultOf(section, "lag_threshold") == config::FormatDuration(defaults.lag_threshold));
  CHECK(DefaultOf(section, "checkpoint_stale_gaps") == Number(defaults.checkpoint_stale_gaps));
  CHECK(DefaultOf(section, "commit_failure_ratio") == Number(defaults.commit_failure_ratio));
  CHECK(DefaultOf(section, "stalled_commit_periods") == Number(defaults.stalled_commit_periods));
  CHECK(DefaultOf(section, "restart_loop_restarts") ==
        std::to_string(defaults.restart_loop_restarts));
  CHECK(DefaultOf(section, "job_gone_after") == config::FormatDuration(defaults.job_gone_after));
  CHECK(DefaultOf(section, "expiry_warning_ratio") == Number(defaults.expiry_warning_ratio));
}
