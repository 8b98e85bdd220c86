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

}  // namespace

void AppendValue(double value, std::string& out) {
  if (std::isnan(value)) {
    out += "Nan";
  } else if (std::isinf(value)) {
    out += value < 0 ? "-Inf" : "+Inf";
  } else if (value == std::trunc(value) && std::fabs(value) <= 9007199254740992.0 &&
             !(value == 0 && std::signbit(value))) {
    // An integer of at most 2^53 (offsets, lags, counts, 0 and 1: two thirds of the series at a
    // million group-partitions) has at most 16 digits, all of which %.16g writes, without an
    // exponent: written as an integer, it is the same text, 5 ns against 37 ns a value on this
    // machine (2M values, std::to_chars of an int64_t against that of a double with precision).
    // -0 is integral too, and %.16g writes its sign: it takes the general path.
    std::array<char, 24> buffer;
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                            static_cast<std::int64_t>(value));
    out.append(buffer.data(), end);
  } else {
    // %.16g, as prometheus-cpp 1.0.1 writes it (max_digits10 - 1 significant digits): every
    // offset below 2^53 is written exactly.
    std::array<char, 64> buffer;
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                            std::chars_format::general, 16);
    out.append(buffer.data(), end);
  }
}

LabelText& LabelText::Add(std::string_view name, std::string_view value) {
  bool first = text_.empty();
  AppendLabel(name, value, first, text_);
  return *this;
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
  out += ' ';
  AppendValue(value, out);
  out += '\n';
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
