#include "metrics/exposition.h"

#include <array>
#include <charconv>
#include <cmath>
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
  for (const char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        out += quote ? "\\\"" : "\"";
        break;
      default:
        out += c;
    }
  }
}

}  // namespace

void AppendValue(double value, std::string& out) {
  if (std::isnan(value)) {
    out += "Nan";
  } else if (std::isinf(value)) {
    out += value < 0 ? "-Inf" : "+Inf";
  } else {
    // %.16g, as prometheus-cpp 1.0.1 writes it (max_digits10 - 1 significant digits): every
    // offset below 2^53 is written exactly.
    std::array<char, 64> buffer;
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                            std::chars_format::general, 16);
    out.append(buffer.data(), end);
  }
}

void FamilyBuilder::Add(const MetricDef& def, const Labels& labels, double value) {
  Family& family = families_[def.name];
  family.def = &def;
  std::string& out = family.pending;
  out += def.name;
  if (!labels.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [name, label_value] : labels) {
      if (!first) out += ',';
      first = false;
      out += name;
      out += "=\"";
      AppendEscaped(label_value, true, out);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  AppendValue(value, out);
  out += '\n';
  ++series_;
  if (out.size() - family.dictionary >= kPieceBytes) Compress(family);
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
  std::size_t size = 0;
  for (auto& [name, family] : families_) {
    Compress(family);
    std::string().swap(family.pending);
    size += family.compressed.bytes.size();
  }
  std::vector<DeflatedRun> headers;
  headers.reserve(families_.size());
  for (const auto& [name, family] : families_) {
    std::string header = "# HELP ";
    header += name;
    header += ' ';
    AppendEscaped(family.def->help, false, header);
    header += "\n# TYPE ";
    header += name;
    header += ' ';
    header += TypeName(family.def->type);
    header += '\n';
    deflater_.Append(header, {}, headers.emplace_back());
    size += headers.back().bytes.size();
  }
  // Sized exactly: the member is published and kept while scrapes read it.
  GzipJoiner joiner(size);
  auto header = headers.begin();
  for (auto& [name, family] : families_) {
    joiner.Add(*header++);
    joiner.Add(family.compressed);
    std::string().swap(family.compressed.bytes);  // each family's part is freed once joined
  }
  return std::move(joiner).Finish();
}

std::string FamilyBuilder::Render() && { return Gunzip(std::move(*this).RenderGzip().bytes); }

}  // namespace lagsight::metrics
