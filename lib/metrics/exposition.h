// Building and rendering one scrape's worth of metrics in the Prometheus text format.
//
// FamilyBuilder collects samples from all sources under one family per metric name (the text
// format allows each name once, with one HELP and TYPE) and writes each sample's line as it is
// added; RenderGzip() joins the families, sorted by name. Rendering happens after a poll, off the
// scrape path, so a scrape only sends an already rendered exposition.
//
// Written by hand rather than through prometheus-cpp's data model and TextSerializer, for a
// measured reason (tests/bench/exposition_bench, 996,509 series, 113 MB of text, 2 cores): the
// data model and serializer took 1.27 s and peaked at 708 MB (one ClientMetric with its label
// vector per sample, then the text beside them); writing each line as it is added takes 0.46 s
// and peaks at 299 MB. The text is byte for byte what TextSerializer writes (a unit test
// compares the two over awkward values and labels), so `promtool check metrics` and the golden
// files hold.
//
// The text is never whole: each family is compressed (gzip's deflate, common/gzip_stream.h) in
// pieces of kPieceBytes as its lines are written, and the exposition is published as one gzip
// member. Heaptrack at 100,000 group-partitions (39.5 MB of text) found the families being built
// (53 MB), the text joined from them and the text still published (79 MB) to be two thirds of
// the daemon's 201 MB heap peak.
// Not thread-safe; build on one thread, then publish the result.
#pragma once

#include <prometheus/metric_type.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/gzip_stream.h"

namespace lagsight::metrics {

struct MetricDef {
  const char* name;
  const char* help;
  prometheus::MetricType type;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

// Labels that many series share (a topic's partitions), escaped once: `name="value",...`.
// Building a Labels vector per series copied and escaped the same group and topic for each of
// its partitions (tests/bench/exposition_bench, see FamilyBuilder::Add).
class LabelText {
 public:
  LabelText& Add(std::string_view name, std::string_view value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The start of a family's lines that differ only from one label on (a topic's partitions):
// `name{shared,label="`, written once, so that each line adds only its own value. Issue 14's S3
// writes 3M such lines; with a prefix a line is four appends instead of a dozen.
class SeriesPrefix {
 public:
  SeriesPrefix(const MetricDef& def, const LabelText& shared, std::string_view label);

 private:
  friend class FamilyBuilder;
  const MetricDef* def_;
  std::string text_;
};

class FamilyBuilder {
 public:
  void Add(const MetricDef& def, const Labels& labels, double value);
  // The shared labels, then `more` (written in that order), then the value.
  void Add(const MetricDef& def, const LabelText& shared,
           std::initializer_list<std::pair<std::string_view, std::string_view>> more, double value);

  // The prefix's line, `label` set to `label_value`, then `more`, then the value.
  void Add(const SeriesPrefix& prefix, std::string_view label_value,
           std::initializer_list<std::pair<std::string_view, std::string_view>> more, double value);

  // Series added so far, over all families.
  std::size_t series() const { return series_; }

  // Adds `other`'s samples after this builder's, family by family: the exposition is the one
  // this builder would have made had other's samples been added to it after its own. Builders
  // filled on several threads, one each, join this way (see AppendKafkaMetrics).
  void Append(FamilyBuilder&& other);

  // The exposition as one gzip member: families sorted by name, each with its HELP and TYPE,
  // samples in the order they were added. Throws std::runtime_error when the deflater fails.
  GzippedText RenderGzip() &&;

  // The same exposition as text (tests and tools).
  std::string Render() &&;

  // Lines a family gathers before they are compressed. Small enough that the families' pending
  // text stays a few MB, large enough that the dictionary each piece starts from (the 32 KiB
  // before it) keeps the ratio of one stream and costs little: the deflater hashes a dictionary as
  // it hashes text, and with 64 KiB pieces that was half as much again (deflateSetDictionary took
  // 8 % of exposition_bench).
  static constexpr std::size_t kPieceBytes = 256 * 1024;

 private:
  struct Family {
    const MetricDef* def = nullptr;
    std::string_view name;  // def->name
    // Lines not yet compressed, after the first `dictionary` bytes: the end of what was, which
    // the next piece may refer back to.
    std::string pending;
    std::size_t dictionary = 0;
    DeflatedRun compressed;
  };
  void Compress(Family& family);
  Family& FamilyOf(const MetricDef& def);
  void EndLine(Family& family, double value);

  std::map<std::string_view, Family> families_;
  // Each definition's family, found by address: looking the name up in families_ for every
  // series compared strings (memcmp was 7 % of exposition_bench).
  std::unordered_map<const MetricDef*, Family*> by_def_;
  // In front of by_def_, the families used last, one slot per address hash: a million series
  // look their family up a million times.
  static constexpr int kRecentBits = 5;
  struct RecentFamily {
    const MetricDef* def = nullptr;
    Family* family = nullptr;
  };
  std::array<RecentFamily, std::size_t{1} << kRecentBits> recent_{};
  std::size_t series_ = 0;
  RunDeflater deflater_;
};

// How the text format writes a sample value, as prometheus-cpp 1.0.1 does: "Nan", "+Inf", "-Inf",
// else 16 significant digits (%.16g).
void AppendValue(double value, std::string& out);

}  // namespace lagsight::metrics
