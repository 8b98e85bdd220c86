#include "http/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

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

std::string Gzip(std::string_view text) {
  // zlib counts a call's input and output in 32 bits: larger texts go in 1 GiB steps.
  constexpr std::size_t kStep = std::size_t{1} << 30;
  struct Deflater {
    z_stream stream{};
    bool initialised = false;
    ~Deflater() {
      if (initialised) deflateEnd(&stream);
    }
  } deflater;
  z_stream& stream = deflater.stream;
  // 15 + 16: the largest window, with a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("gzip: deflateInit2 failed");
  }
  deflater.initialised = true;
  // The result is published and kept for as long as its exposition, so it must not hold more
  // than it uses: a buffer of deflateBound() (more than the input) resized down kept its
  // capacity, 113 MB for the 4.4 MB of a million series. An exposition compresses about 25
  // times; start at a sixteenth, double when full, and trim at the end.
  std::string out(text.size() / 16 + 1024, '\0');
  std::size_t consumed = 0;
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    if (stream.avail_in == 0 && consumed < text.size()) {
      const std::size_t step = std::min(kStep, text.size() - consumed);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + consumed));
      stream.avail_in = static_cast<uInt>(step);
      consumed += step;
    }
    const std::size_t produced = stream.total_out;
    if (produced == out.size()) out.resize(out.size() * 2 + 64);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min(kStep, out.size() - produced));
    result = deflate(&stream, consumed == text.size() ? Z_FINISH : Z_NO_FLUSH);
    if (result != Z_OK && result != Z_STREAM_END) {
      throw std::runtime_error("gzip: deflate failed");
    }
  }
  out.resize(stream.total_out);
  out.shrink_to_fit();
  return out;
}

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
