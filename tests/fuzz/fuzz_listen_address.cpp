// libFuzzer target: --web.listen-address values, http::ParseListenAddress.
//
// Checked beyond "no crash": an accepted address has the port that was written after the last
// ':' (a wrapped port number would make the daemon listen somewhere else than asked).
//
// Host names that are not IP literals go to getaddrinfo. Real lookups would make every such
// input a DNS query (slow, not reproducible, traffic from CI), so this binary defines its own
// getaddrinfo that knows no name: the lookup-failure path is fuzzed, the resolver is not ours.
#include <netdb.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http/listen_address.h"

extern "C" int getaddrinfo(const char* /*node*/, const char* /*service*/, const addrinfo* /*hints*/,
                           addrinfo** result) {
  *result = nullptr;
  return EAI_NONAME;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto endpoint = lagsight::http::ParseListenAddress(text);
  if (!endpoint.ok()) return 0;
  const std::string_view port_text = text.substr(text.rfind(':') + 1);
  unsigned long port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() ||
      port != endpoint->port()) {
    std::abort();  // accepted, but not the port that was written
  }
  return 0;
}
