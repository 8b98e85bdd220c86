// SectionReader, the tool every section schema reads with: where its errors point and what its
// optional readers keep when a key is absent. The texts of whole configs are in config_test.
#include "config/section_reader.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace {

using lagsight::config::EnvLookup;
using lagsight::config::internal::ConfigProblem;
using lagsight::config::internal::SectionReader;

const EnvLookup kNoEnvironment = [](const std::string&) -> std::optional<std::string> {
  return std::nullopt;
};

// The message a read throws, or "" if it throws none.
template <typename Read>
std::string ProblemOf(const Read& read) {
  try {
    read();
  } catch (const ConfigProblem& problem) {
    return problem.message;
  }
  return "";
}

}  // namespace

TEST_CASE("section reader: errors name the source, the line and the key path", "[config]") {
  const SectionReader reader("test.yaml", kNoEnvironment);
  const YAML::Node node = YAML::Load("a: 1\nitem:\n  other: x\n");
  CHECK(ProblemOf([&] { reader.RequireKey(node["item"], "top.item", "name"); }) ==
        "test.yaml:3: top.item: missing required key \"name\"");
  CHECK(ProblemOf([&] { reader.Regex(node["item"]["other"], "top.item.other"); }).empty());
  // The pattern's own complaint follows the place, as for every other value.
  const YAML::Node bad_pattern = YAML::Load("x: \"(\"")["x"];
  const std::string problem = ProblemOf([&] { reader.Regex(bad_pattern, "x"); });
  CHECK(problem.rfind("test.yaml:1: x: ", 0) == 0);
  CHECK(problem.size() > std::string("test.yaml:1: x: ").size());
  CHECK(ProblemOf([&] { reader.Fail(node, "", "empty path"); }) == "test.yaml:1: empty path");
  CHECK(SectionReader::ItemPath("kafka", 2) == "kafka[2]");
  CHECK(SectionReader::Join("", "kafka") == "kafka");
  CHECK(SectionReader::Join("kafka[0]", "name") == "kafka[0].name");
}

TEST_CASE("section reader: optional values keep their default when absent", "[config]") {
  const SectionReader reader("test.yaml", kNoEnvironment);
  const YAML::Node node = YAML::Load("count: 7\nflag: true\nname: n\n");
  std::size_t count = 1;
  std::int64_t missing_count = 3;
  bool flag = false;
  bool missing_flag = true;
  std::string name = "default";
  std::string missing_name = "default";
  reader.OptionalInteger(node, "s", "count", 0, 10, count);
  reader.OptionalInteger(node, "s", "absent", 0, 10, missing_count);
  reader.OptionalBoolean(node, "s", "flag", flag);
  reader.OptionalBoolean(node, "s", "absent", missing_flag);
  reader.OptionalString(node, "s", "name", name);
  reader.OptionalString(node, "s", "absent", missing_name);
  CHECK(count == 7);
  CHECK(missing_count == 3);
  CHECK(flag);
  CHECK(missing_flag);
  CHECK(name == "n");
  CHECK(missing_name == "default");
  CHECK(ProblemOf([&] { reader.OptionalInteger(node, "s", "count", 0, 5, count); }) ==
        "test.yaml:1: s.count: must be a whole number from 0 to 5, got \"7\"");
}
