// The JSON text of traces, both ways: appending values to a line being written, and reading
// them back from simdjson's DOM with an error that names the field.
//
// Written by hand: Debian 12's Boost 1.74 has no Boost.JSON, and a trace line is a few flat
// shapes. Every value reads back exactly: doubles are written shortest-round-trip (std::to_chars)
// and always with a '.' or an exponent, so they never read back as integers nor overflow one;
// infinities and NaN, which JSON lacks, as the strings "Infinity", "-Infinity" and "NaN"; a
// string that is not valid UTF-8 (JSON's strings must be) as {"hex":"..."} of its bytes.
// Reading throws FormatError, which the parser (trace_format.cpp) turns into an Error value.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lagsight::trace::json {

// Appending to a line. Keys are literals of the callers, so they need no escaping.
void AppendString(std::string& out, std::string_view text);
void AppendDouble(std::string& out, double value);
void AppendInt(std::string& out, std::int64_t value);
void AppendUint(std::string& out, std::uint64_t value);
inline void AppendBool(std::string& out, bool value) { out += value ? "true" : "false"; }
void AppendStrings(std::string& out, const std::vector<std::string>& strings);

// `value` appended with `append`, or null.
template <typename T, typename Append>
void AppendOptional(std::string& out, const std::optional<T>& value, Append append) {
  if (value) {
    append(out, *value);
  } else {
    out += "null";
  }
}

// What reading a trace line throws: the message names the field and what is wrong with it.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// `what` names the value in the error ("groups[].id" style, as the caller knows it).
element Field(object o, std::string_view key);
std::vector<std::string> ReadStrings(element e, std::string_view what);
object ReadObject(element e, std::string_view what);
array ReadArray(element e, std::string_view what);
std::string ReadString(element e, std::string_view what);
double ReadDouble(element e, std::string_view what);
std::int64_t ReadInt(element e, std::string_view what);
std::uint64_t ReadUint(element e, std::string_view what);
int ReadInt32(element e, std::string_view what);
bool ReadBool(element e, std::string_view what);
// The array's elements, exactly `size` of them (the rows of the compact tables).
array ReadTuple(element e, std::size_t size, std::string_view what);
// Element `index` of an array known to be long enough (ReadTuple).
element At(array a, std::size_t index);

// None for null, else what `read` makes of the value.
template <typename Read>
auto ReadOptional(element e, std::string_view what, Read read)
    -> std::optional<decltype(read(e, what))> {
  if (e.is_null()) return std::nullopt;
  return read(e, what);
}

}  // namespace lagsight::trace::json
