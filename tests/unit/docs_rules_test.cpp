// docs/diagnosis.md's "Diagnosis rules" tables against the code: the causes in precedence order,
// and every threshold key with its default (on the configuration page too); and every cause the
// code names has its evidence in docs/diagnosis.md and a runbook in docs/runbooks.md. The tables
// are what an operator reads at 3 a.m.; a rule order or a default that drifts from the code would
// send them the wrong way.
#include <algorithm>
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

// The default column of the row of `key` in `text`, without its backticks ("`5m`" -> "5m").
std::string DefaultOf(const std::string& text, const std::string& key) {
  const std::regex row("\\| `" + std::regex_replace(key, std::regex("\\."), "\\.") +
                       "` \\| ([^|]+) \\|");
  std::smatch match;
  if (!std::regex_search(text, match, row)) return "(missing)";
  std::string value = match[1];
  value.erase(std::remove(value.begin(), value.end(), '`'), value.end());
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

// Whether `doc` has a heading line that is exactly `heading`.
bool HasHeading(const std::string& doc, const std::string& heading) {
  return doc.find("\n" + heading + "\n") != std::string::npos;
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
  // The thresholds table of the diagnosis, and the `diagnosis.` rows of the configuration page.
  for (const auto& [text, prefix] :
       {std::pair{RulesSection(), std::string()},
        std::pair{ReadDoc("configuration.md"), std::string("diagnosis.")}}) {
    INFO(prefix);
    const auto default_of = [&](const std::string& key) { return DefaultOf(text, prefix + key); };
    const config::DiagnosisConfig defaults;
    CHECK(default_of("window") == config::FormatDuration(defaults.window));
    CHECK(default_of("confirm_polls") == std::to_string(defaults.confirm_polls));
    CHECK(default_of("lag_threshold_records") == std::to_string(defaults.lag_threshold_records));
    CHECK(default_of("lag_threshold") == config::FormatDuration(defaults.lag_threshold));
    CHECK(default_of("checkpoint_stale_gaps") == Number(defaults.checkpoint_stale_gaps));
    CHECK(default_of("commit_failure_ratio") == Number(defaults.commit_failure_ratio));
    CHECK(default_of("stalled_commit_periods") == Number(defaults.stalled_commit_periods));
    CHECK(default_of("restart_loop_restarts") == std::to_string(defaults.restart_loop_restarts));
    CHECK(default_of("job_gone_after") == config::FormatDuration(defaults.job_gone_after));
    CHECK(default_of("expiry_warning_ratio") == Number(defaults.expiry_warning_ratio));
  }
}

TEST_CASE("docs: every cause has its evidence in the diagnosis and its runbook", "[analysis]") {
  const std::string diagnosis = ReadDoc("diagnosis.md");
  const std::string runbooks = ReadDoc("runbooks.md");
  for (int i = 0; i < analysis::kCauseCount; ++i) {
    const std::string name = analysis::CauseName(static_cast<analysis::Cause>(i));
    INFO(name);
    CHECK(HasHeading(diagnosis, "### `" + name + "`"));
    // healthy needs no runbook.
    if (name != "healthy") CHECK(HasHeading(runbooks, "## Runbook: " + name));
  }
}
