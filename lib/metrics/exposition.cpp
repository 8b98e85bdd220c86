#include "metrics/exposition.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

namespace lagsight::metrics {
namespace {

const char* TypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Untyped:
      break;
  }
  return "untyped";
}

// Label values escape backslash, newline and the double quote, as the text format requires.
// HELP text escapes backslash and newline (prometheus-cpp 1.0.1 writes it as it is; lagsight's
// help texts hold neither, so the two agree).
void AppendEscaped(std::string_view text, bool quote, std::string& out) {
  // Runs without a character to escape are appended whole: nearly every value is one run. Found
  // by a plain loop: find_first_of calls memchr over the set for every character, and most
  // values (partition numbers) are a few characters long.
  const auto special = [quote](char c) { return c == '\\' || c == '\n' || (quote && c == '"'); };
  while (!text.empty()) {
    const std::size_t at =
        static_cast<std::size_t>(std::find_if(text.begin(), text.end(), special) - text.begin());
    if (at == text.size()) {
      out.append(text);
      return;
    }
    out.append(text.substr(0, at));
    out += text[at] == '\\' ? "\\\\" : text[at] == '\n' ? "\\n" : "\\\"";
    text.remove_prefix(at + 1);
  }
}

// `name="value"`, after a comma unless it is the first label of its series.
void AppendLabel(std::string_view name, std::string_view value, bool& first, std::string& out) {
  if (!first) out += ',';
  first = false;
  out += name;
  out += "=\"";
  AppendEscaped(value, true, out);
  out += '"';
}

// Room for any value's text: %.16g writes at most 23 characters (-1.234567890123456e-308).
constexpr std::size_t kValueChars = 32;

// Writes `value` at `at` as %.16g would when that is a number of milliseconds, k / 1000 (lag in
// seconds, rounded so by analysis/lag_seconds.h: a million of them at issue 14's S3), and returns
// the end; returns nullptr, writing nothing, for any other value. Measured on this machine over a
// million values of lag in seconds, appended: 26-30 ns a value, where std::to_chars with a
// precision took 76-84 (an integer: 20).
//
// %.16g rounds the exact binary value to 16 significant digits, then drops trailing zeros. A
// double near k / 1000 is often not k / 1000 to 16 digits (709.656 is 709.6559999999999), so the
// distance is checked: the text is k / 1000 only when the value lies within half a unit of the
// 16th digit of it. fma gives value * 1000 - k with a single rounding; the bound is taken at 0.45
// of a unit for that rounding, and at a tenth of it below a power of ten, where the digits
// below it are a decade finer. Whatever fails the check takes the general path.
char* WriteMilliseconds(double value, char* at) {
  constexpr double kLargest = 1e12;  // k below 10^15: 16 digits hold it, and %.16g no exponent
  const double magnitude = std::fabs(value);
  if (!(magnitude >= 0.001 && magnitude < kLargest)) return nullptr;
  // Rounded by adding a half (inline, where llround is a call); a value the sum rounds the wrong
  // way fails the check below.
  const auto thousandths = static_cast<std::int64_t>(magnitude * 1000 + 0.5);
  // Its digits, counted by comparison: a loop dividing by ten made this path slower than the
  // general one.
  static constexpr std::array<std::int64_t, 15> kPowerOfTen = [] {
    std::array<std::int64_t, 15> powers{};
    std::int64_t power = 1;
    for (std::int64_t& entry : powers) {
      entry = power;
      power *= 10;
    }
    return powers;
  }();
  std::size_t digits = 1;
  while (digits < kPowerOfTen.size() && thousandths >= kPowerOfTen[digits]) ++digits;
  // A unit of the 16th significant digit of k / 1000, in thousandths: 10^(digits - 16).
  static constexpr std::array<double, 15> kUnit = {1e-15, 1e-14, 1e-13, 1e-12, 1e-11,
                                                   1e-10, 1e-9,  1e-8,  1e-7,  1e-6,
                                                   1e-5,  1e-4,  1e-3,  1e-2,  1e-1};
  const double unit = kUnit[digits - 1];
  const bool decade = thousandths == kPowerOfTen[digits - 1];
  const double allowed = (decade ? 0.045 : 0.45) * unit;
  if (!(std::fabs(std::fma(magnitude, 1000.0, -static_cast<double>(thousandths))) < allowed)) {
    return nullptr;
  }
  if (value < 0) *at++ = '-';
  at = std::to_chars(at, at + kValueChars - 1, thousandths / 1000).ptr;
  if (int fraction = static_cast<int>(thousandths % 1000); fraction != 0) {
    *at++ = '.';
    *at++ = static_cast<char>('0' + fraction / 100);
    fraction %= 100;
    if (fraction != 0) {
      *at++ = static_cast<char>('0' + fraction / 10);
      if (fraction % 10 != 0) *at++ = static_cast<char>('0' + fraction % 10);
    }
  }
  return at;
}

// Writes `value` at `at` (room for kValueChars) as prometheus-cpp 1.0.1 writes it, and returns
// the end: "Nan", "+Inf", "-Inf", else %.16g (max_digits10 - 1 significant digits; every offset
// below 2^53 is written exactly).
char* WriteValue(double value, char* at) {
  if (std::isnan(value)) return std::copy_n("Nan", 3, at);
  if (std::isinf(value)) return std::copy_n(value < 0 ? "-Inf" : "+Inf", 4, at);
  if (value == std::trunc(value) && std::fabs(value) <= 9007199254740992.0 &&
      !(value == 0 && std::signbit(value))) {
    // An integer of at most 2^53 (offsets, lags, counts, 0 and 1: two thirds of the series at a
    // million group-partitions) has at most 16 digits, all of which %.16g writes, without an
    // exponent: written as an integer, it is the same text, 5 ns against 37 ns a value on this
    // machine (2M values, std::to_chars of an int64_t against that of a double with precision).
    // -0 is integral too, and %.16g writes its sign: it takes the general path.
    return std::to_chars(at, at + kValueChars, static_cast<std::int64_t>(value)).ptr;
  }
  if (char* end = WriteMilliseconds(value, at)) return end;
  return std::to_chars(at, at + kValueChars, value, std::chars_format::general, 16).ptr;
}

}  // namespace

void AppendValue(double value, std::string& out) {
  std::array<char, kValueChars> buffer;
  out.append(buffer.data(), WriteValue(value, buffer.data()));
}

LabelText& LabelText::Add(std::string_view name, std::string_view value) {
  bool first = text_.empty();
  AppendLabel(name, value, first, text_);
  return *this;
}

SeriesPrefix::SeriesPrefix(const MetricDef& def, const LabelText& shared, std::string_view label)
    : def_(&def) {
  text_ += def.name;
  text_ += '{';
  text_ += shared.text();
  if (!shared.text().empty()) text_ += ',';
  text_ += label;
  text_ += "=\"";
}

FamilyBuilder::Family& FamilyBuilder::FamilyOf(const MetricDef& def) {
  // Fibonacci hashing of the address: the few definitions a render alternates between (a
  // partition's committed offset, lag and lag in seconds) land in different slots.
  const std::size_t slot =
      (reinterpret_cast<std::uintptr_t>(&def) * 0x9E3779B97F4A7C15ull) >> (64 - kRecentBits);
  RecentFamily& recent = recent_[slot];
  if (recent.def == &def) return *recent.family;
  Family*& cached = by_def_[&def];
  if (cached == nullptr) {
    cached = &families_[def.name];
    cached->def = &def;
    cached->name = def.name;
  }
  recent = {&def, cached};
  return *cached;
}

void FamilyBuilder::EndLine(Family& family, double value) {
  std::string& out = family.pending;
  // " value\n" in one append: a million lines each append three pieces fewer.
  std::array<char, kValueChars + 2> buffer;
  buffer[0] = ' ';
  char* end = WriteValue(value, buffer.data() + 1);
  *end++ = '\n';
  out.append(buffer.data(), end);
  ++series_;
  if (out.size() - family.dictionary >= kPieceBytes) Compress(family);
}

void FamilyBuilder::Add(const MetricDef& def, const Labels& labels, double value) {
  Family& family = FamilyOf(def);
  std::string& out = family.pending;
  out += family.name;  // its length known: def.name is a C string
  if (!labels.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [name, label_value] : labels) AppendLabel(name, label_value, first, out);
    out += '}';
  }
  EndLine(family, value);
}

void FamilyBuilder::Add(const MetricDef& def, const LabelText& shared,
                        std::initializer_list<std::pair<std::string_view, std::string_view>> more,
                        double value) {
  Family& family = FamilyOf(def);
  std::string& out = family.pending;
  out += family.name;  // its length known: def.name is a C string
  if (!shared.text().empty() || more.size() != 0) {
    out += '{';
    out += shared.text();
    bool first = shared.text().empty();
    for (const auto& [name, label_value] : more) AppendLabel(name, label_value, first, out);
    out += '}';
  }
  EndLine(family, value);
}

void FamilyBuilder::Add(const SeriesPrefix& prefix, std::string_view label_value,
                        std::initializer_list<std::pair<std::string_view, std::string_view>> more,
                        double value) {
  Family& family = FamilyOf(*prefix.def_);
  std::string& out = family.pending;
  out += prefix.text_;
  AppendEscaped(label_value, true, out);
  if (more.size() == 0) {
    out.append("\"}", 2);
  } else {
    out += '"';
    bool first = false;
    for (const auto& [name, more_value] : more) AppendLabel(name, more_value, first, out);
    out += '}';
  }
  EndLine(family, value);
}

void FamilyBuilder::Append(FamilyBuilder&& other) {
  for (auto& [name, theirs] : other.families_) {
    Family& ours = FamilyOf(*theirs.def);
    if (theirs.compressed.text_size == 0) {
      // All their lines are pending: they follow ours as if added here.
      ours.pending += theirs.pending;
      if (ours.pending.size() - ours.dictionary >= kPieceBytes) Compress(ours);
      continue;
    }
    // Ours are compressed up to their last line, then theirs follow: their first piece refers
    // to nothing before it, as it was compressed not knowing what would precede it.
    Compress(ours);
    AppendRun(ours.compressed, theirs.compressed);
    ours.pending = std::move(theirs.pending);
    ours.dictionary = theirs.dictionary;
  }
  series_ += other.series_;
  other.families_.clear();
  other.by_def_.clear();
  other.recent_ = {};
  other.series_ = 0;
}

void FamilyBuilder::Compress(Family& family) {
  std::string& pending = family.pending;
  const std::string_view text(pending);
  deflater_.Append(text.substr(family.dictionary), text.substr(0, family.dictionary),
                   family.compressed);
  constexpr std::size_t kWindow = 32 * 1024;
  if (pending.size() > kWindow) pending.erase(0, pending.size() - kWindow);
  family.dictionary = pending.size();
}

GzippedText FamilyBuilder::RenderGzip() && {
  // In name order. Families whose lines are all still pending (most are a few lines) are
  // compressed together with their headers, in pieces of up to kPieceBytes that start from the
  // text before them: each piece is a deflate block with its own code tables and a flush, and
  // label names and values repeat from family to family. A piece per family compressed an
  // 18 KB exposition to 8.8 KB instead of 5.
  constexpr std::size_t kWindow = 32 * 1024;
  std::string preceding;  // the last kWindow bytes of the text so far
  std::string batch;      // text after `preceding` not compressed yet
  std::vector<DeflatedRun> runs;
  runs.reserve(2 * families_.size());
  const auto keep = [&](std::string_view text) {
    if (text.size() >= kWindow) {
      preceding.assign(text.substr(text.size() - kWindow));
    } else {
      preceding += text;
      if (preceding.size() > kWindow) preceding.erase(0, preceding.size() - kWindow);
    }
  };
  const auto compress_batch = [&] {
    if (batch.empty()) return;
    deflater_.Append(batch, preceding, runs.emplace_back());
    keep(batch);
    batch.clear();
  };
  for (auto& [name, family] : families_) {
    batch += "# HELP ";
    batch += name;
    batch += ' ';
    AppendEscaped(family.def->help, false, batch);
    batch += "\n# TYPE ";
    batch += name;
    batch += ' ';
    batch += TypeName(family.def->type);
    batch += '\n';
    if (family.compressed.bytes.empty()) {
      batch += family.pending;
      if (batch.size() >= kPieceBytes) compress_batch();
    } else {
      // Its first piece was compressed as it was added, not knowing what comes before it: it
      // refers to nothing there.
      compress_batch();
      Compress(family);
      keep(family.pending);
      runs.push_back(std::move(family.compressed));
    }
    std::string().swap(family.pending);
  }
  compress_batch();
  // Sized exactly: the member is published and kept while scrapes read it.
  std::size_t size = 0;
  for (const DeflatedRun& run : runs) size += run.bytes.size();
  GzipJoiner joiner(size);
  for (DeflatedRun& run : runs) {
    joiner.Add(run);
    std::string().swap(run.bytes);  // each piece is freed once joined
  }
  return std::move(joiner).Finish();
}

std::string FamilyBuilder::Render() && { return Gunzip(std::move(*this).RenderGzip().bytes); }

}  // namespace lagsight::metrics
