// The golden-error check shared by the config and web-config tests: every `bad/*.yaml` under a
// directory must fail to parse with exactly the text of its `.error` file.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "common/result.h"

namespace lagsight::testing {

inline std::string ReadText(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// `parse` takes "bad/<name>.yaml" and returns whether parsing succeeded and its error text.
// Returns how many files were checked, so a test can insist the directory was not empty.
template <typename Parse>
int CheckBadFiles(const std::filesystem::path& data_dir, Parse parse) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir / "bad")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string relative = "bad/" + entry.path().filename().string();
    INFO(relative);
    const auto parsed = parse(relative);
    REQUIRE_FALSE(parsed.ok());
    std::filesystem::path expected_path = entry.path();
    expected_path.replace_extension(".error");
    REQUIRE(std::filesystem::exists(expected_path));
    std::string expected = ReadText(expected_path);
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    CHECK(parsed.error().message == expected);
    ++checked;
  }
  return checked;
}

}  // namespace lagsight::testing
