// libFuzzer target: the --web.config.file parser, http::ParseWebConfig (TLS and basic auth).
//
// Pure parsing only (no file is opened): any text gives a WebConfig or an Error, never a crash
// or undefined behaviour. The bcrypt hash checks run here too; password verification does not.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)lagsight::http::ParseWebConfig(text, "web.yaml", "/etc/lagsight");
  return 0;
}
