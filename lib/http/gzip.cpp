#include "http/gzip.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace lagsight::http {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The q value of one Accept-Encoding element's parameters ("q=0.5"); 1 when absent, 0 when
// unreadable (a client that sends garbage gets what it surely reads: identity).
double Quality(std::string_view parameters) {
  while (!parameters.empty()) {
    const std::size_t end = parameters.find(';');
    const std::string_view parameter = Trim(parameters.substr(0, end));
    parameters = end == std::string_view::npos ? std::string_view() : parameters.substr(end + 1);
    const std::size_t equals = parameter.find('=');
    if (equals == std::string_view::npos) continue;
    if (!EqualsIgnoringCase(Trim(parameter.substr(0, equals)), "q")) continue;
    const std::string value(Trim(parameter.substr(equals + 1)));
    char* parsed_end = nullptr;
    const double q = std::strtod(value.c_str(), &parsed_end);
    if (value.empty() || parsed_end != value.c_str() + value.size() || !(q >= 0 && q <= 1)) {
      return 0;
    }
    return q;
  }
  return 1;
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  bool star = false;
  while (!accept_encoding.empty()) {
    const std::size_t end = accept_encoding.find(',');
    const std::string_view element = Trim(accept_encoding.substr(0, end));
    accept_encoding =
        end == std::string_view::npos ? std::string_view() : accept_encoding.substr(end + 1);
    const std::size_t semicolon = element.find(';');
    const std::string_view coding = Trim(element.substr(0, semicolon));
    const double q =
        semicolon == std::string_view::npos ? 1 : Quality(element.substr(semicolon + 1));
    if (EqualsIgnoringCase(coding, "gzip") || EqualsIgnoringCase(coding, "x-gzip")) return q > 0;
    if (coding == "*") star = q > 0;
  }
  return star;
}

}  // namespace lagsight::http
