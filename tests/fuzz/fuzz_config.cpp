// libFuzzer target: the daemon's config file parser, config::ParseConfig.
//
// The environment is a fake, so runs are reproducible and `${VAR}` references take both paths:
// names starting with "SET" resolve (to a value with YAML-looking characters), all others are
// unset. Checked: any text gives a Config or an Error, never a crash or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const lagsight::config::EnvLookup fake_env =
      [](const std::string& name) -> std::optional<std::string> {
    if (name.rfind("SET", 0) == 0) return "value: ${" + name + "} #";
    return std::nullopt;
  };
  (void)lagsight::config::ParseConfig(text, "fuzz.yaml", fake_env);
  return 0;
}
