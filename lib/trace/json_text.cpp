#include "trace/json_text.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace lagsight::trace::json {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void AppendHexBytes(std::string& out, std::string_view text) {
  out += "{\"hex\":\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += kHexDigits[byte >> 4];
    out += kHexDigits[byte & 0xf];
  }
  out += "\"}";
}

std::string StringFromHex(std::string_view hex, std::string_view what) {
  const auto nibble = [what](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw FormatError(std::string(what) + ": not a hex digit in {\"hex\"}");
  };
  if (hex.size() % 2 != 0) throw FormatError(std::string(what) + ": odd length of {\"hex\"}");
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    bytes += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  }
  return bytes;
}

[[noreturn]] void Wrong(std::string_view what, std::string_view expected) {
  throw FormatError(std::string(what) + ": expected " + std::string(expected));
}

}  // namespace

void AppendString(std::string& out, std::string_view text) {
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    AppendHexBytes(out, text);
    return;
  }
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      out += "\\u00";
      out += kHexDigits[byte >> 4];
      out += kHexDigits[byte & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

void AppendDouble(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  const std::string_view text(buffer, end - buffer);
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void AppendInt(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void AppendUint(std::string& out, std::uint64_t value) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void AppendStrings(std::string& out, const std::vector<std::string>& strings) {
  out += '[';
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(out, strings[i]);
  }
  out += ']';
}

element Field(object o, std::string_view key) {
  element value;
  if (o[key].get(value)) throw FormatError("missing key \"" + std::string(key) + "\"");
  return value;
}

object ReadObject(element e, std::string_view what) {
  object o;
  if (e.get(o)) Wrong(what, "an object");
  return o;
}

array ReadArray(element e, std::string_view what) {
  array a;
  if (e.get(a)) Wrong(what, "an array");
  return a;
}

std::string ReadString(element e, std::string_view what) {
  if (std::string_view text; !e.get(text)) return std::string(text);
  object o;
  std::string_view hex;
  if (!e.get(o) && o.size() == 1 && !o["hex"].get(hex)) return StringFromHex(hex, what);
  Wrong(what, "a string");
}

std::vector<std::string> ReadStrings(element e, std::string_view what) {
  std::vector<std::string> strings;
  for (const element item : ReadArray(e, what)) strings.push_back(ReadString(item, what));
  return strings;
}

double ReadDouble(element e, std::string_view what) {
  if (double d; !e.get(d)) return d;
  if (std::int64_t i; !e.get(i)) return static_cast<double>(i);
  if (std::uint64_t u; !e.get(u)) return static_cast<double>(u);
  if (std::string_view s; !e.get(s)) {
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  Wrong(what, "a number");
}

std::int64_t ReadInt(element e, std::string_view what) {
  std::int64_t value = 0;
  if (e.get(value)) Wrong(what, "an integer (64 bit)");
  return value;
}

std::uint64_t ReadUint(element e, std::string_view what) {
  std::uint64_t value = 0;
  if (e.get(value)) Wrong(what, "an unsigned integer (64 bit)");
  return value;
}

int ReadInt32(element e, std::string_view what) {
  const std::int64_t value = ReadInt(e, what);
  if (value < std::numeric_limits<std::int32_t>::min() ||
      value > std::numeric_limits<std::int32_t>::max()) {
    Wrong(what, "an integer (32 bit)");
  }
  return static_cast<int>(value);
}

bool ReadBool(element e, std::string_view what) {
  bool value = false;
  if (e.get(value)) Wrong(what, "true or false");
  return value;
}

array ReadTuple(element e, std::size_t size, std::string_view what) {
  const array a = ReadArray(e, what);
  if (a.size() != size) Wrong(what, "an array of " + std::to_string(size));
  return a;
}

element At(array a, std::size_t index) {
  element value;
  if (a.at(index).get(value)) throw FormatError("index " + std::to_string(index) + " out of range");
  return value;
}

}  // namespace lagsight::trace::json
