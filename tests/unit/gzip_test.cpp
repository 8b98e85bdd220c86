// Gzip written in pieces (the exposition) and the Accept-Encoding reading that decides when to
// send it.
#include "http/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "common/gzip_stream.h"

namespace {

// What a client (Prometheus, curl --compressed) gets back from the bytes: inflated with zlib's
// gzip decoder, independent of how they were written.
std::string Gunzip(const std::string& gzipped) {
  z_stream stream{};
  REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK);
  std::string out;
  char buffer[4096];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzipped.data()));
  stream.avail_in = static_cast<uInt>(gzipped.size());
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    result = inflate(&stream, Z_NO_FLUSH);
    REQUIRE((result == Z_OK || result == Z_STREAM_END));
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  CHECK(stream.avail_in == 0);  // one member, nothing after it
  inflateEnd(&stream);
  return out;
}

}  // namespace

std::string Gzip(std::string_view text) { return lagsight::Gzip(text).bytes; }

std::string Exposition(int lines, int seed = 0) {
  std::string exposition;
  for (int i = 0; i < lines; ++i) {
    exposition += "lagsight_kafka_group_lag_records{kafka_cluster=\"prod\",group=\"g" +
                  std::to_string((i + seed) % 50) + "\",topic=\"orders\",partition=\"" +
                  std::to_string(i) + "\"} " + std::to_string((i + seed) * 7 % 1000) + "\n";
  }
  return exposition;
}

TEST_CASE("gzip: the bytes inflate back to the text, and an exposition shrinks", "[http]") {
  CHECK(Gunzip(Gzip("")).empty());
  CHECK(Gunzip(Gzip("lagsight_up 1\n")) == "lagsight_up 1\n");
  CHECK(lagsight::Gzip("lagsight_up 1\n").text_size == 14);
  const std::string exposition = Exposition(20000);
  const std::string gzipped = Gzip(exposition);
  CHECK(Gunzip(gzipped) == exposition);
  CHECK(gzipped.size() * 5 < exposition.size());
  CHECK(gzipped.substr(0, 2) == "\x1f\x8b");  // the gzip magic, not a zlib header
  // Published for as long as its exposition: it holds what it uses, not the input's size.
  CHECK(gzipped.capacity() < gzipped.size() + 64);
  // Incompressible input grows the buffer past its first guess, and still inflates back.
  std::string noise;
  std::uint32_t state = 12345;
  for (int i = 0; i < 300000; ++i) {
    state = state * 1664525u + 1013904223u;
    noise += static_cast<char>(state >> 24);
  }
  CHECK(Gunzip(Gzip(noise)) == noise);
  CHECK(lagsight::Gunzip(Gzip(noise)) == noise);
}

TEST_CASE("gzip: runs compressed apart and in another order join into one member", "[http]") {
  // As FamilyBuilder does: two texts compressed in pieces, interleaved, each piece starting from
  // the end of the piece before it; joined text by text, each after a header compressed last.
  const std::string first = Exposition(6000);
  const std::string second = Exposition(9000, 13);
  constexpr std::size_t kPiece = 20000;
  lagsight::RunDeflater deflater;
  lagsight::DeflatedRun first_run, second_run, first_header, second_header;
  for (std::size_t at = 0; at < std::max(first.size(), second.size()); at += kPiece) {
    for (auto [text, run] : {std::pair{&first, &first_run}, std::pair{&second, &second_run}}) {
      if (at >= text->size()) continue;
      const std::string_view all(*text);
      deflater.Append(all.substr(at, kPiece), all.substr(0, at), *run);
    }
  }
  deflater.Append("# HELP a\n", {}, first_header);
  deflater.Append("# HELP b\n", {}, second_header);
  lagsight::GzipJoiner joiner;
  for (const auto* run : {&first_header, &first_run, &second_header, &second_run}) joiner.Add(*run);
  const lagsight::GzippedText joined = std::move(joiner).Finish();

  const std::string expected = "# HELP a\n" + first + "# HELP b\n" + second;
  CHECK(Gunzip(joined.bytes) == expected);  // zlib's own reader: one member, nothing after it
  CHECK(lagsight::Gunzip(joined.bytes) == expected);
  CHECK(joined.text_size == expected.size());
  // The pieces refer back into the piece before them: about the size of one stream.
  const std::size_t one_stream = Gzip(expected).size();
  CHECK(joined.bytes.size() < one_stream * 11 / 10);
}

TEST_CASE("gzip: a text written row by row is compressed a piece at a time", "[http]") {
  // As the status page is written: rows appended, CompressIfFull between them.
  const std::string text = Exposition(30000);  // ~2.6 MB: about 40 pieces
  lagsight::GzipWriter writer;
  std::size_t largest_pending = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at) + 1, text.size());
    writer.text().append(text, at, end - at);
    at = end;
    largest_pending = std::max(largest_pending, writer.text().size());
    writer.CompressIfFull();
  }
  const lagsight::GzippedText gzipped = std::move(writer).Finish();
  CHECK(Gunzip(gzipped.bytes) == text);
  CHECK(gzipped.text_size == text.size());
  // Never more than a piece and a row uncompressed, and about the size of one stream.
  CHECK(largest_pending < 64 * 1024 + 200);
  CHECK(gzipped.bytes.size() < Gzip(text).size() * 11 / 10);
  // Nothing written: an empty member, still valid gzip.
  CHECK(Gunzip(lagsight::GzipWriter().Finish().bytes).empty());
}

TEST_CASE("gzip: a corrupt or cut member is an error, never garbage or a hang", "[http]") {
  const std::string gzipped = Gzip(Exposition(3000));
  CHECK_THROWS_AS(lagsight::Gunzip(gzipped.substr(0, gzipped.size() / 2)), std::runtime_error);
  CHECK_THROWS_AS(lagsight::Gunzip(gzipped.substr(0, gzipped.size() - 4)), std::runtime_error);
  std::string flipped = gzipped;
  flipped[gzipped.size() / 2] = static_cast<char>(flipped[gzipped.size() / 2] ^ 0x55);
  CHECK_THROWS_AS(lagsight::Gunzip(flipped), std::runtime_error);
  CHECK_THROWS_AS(lagsight::Gunzip("not gzip at all"), std::runtime_error);
  CHECK_THROWS_AS(lagsight::Gunzip(""), std::runtime_error);
}

TEST_CASE("gzip: Accept-Encoding admits gzip when listed without q=0", "[http]") {
  using lagsight::http::AcceptsGzip;
  CHECK(AcceptsGzip("gzip"));
  CHECK(AcceptsGzip("GZIP"));
  CHECK(AcceptsGzip("identity, gzip"));
  CHECK(AcceptsGzip("gzip;q=0.5, identity;q=1"));
  CHECK(AcceptsGzip("deflate, gzip ; q=1.0"));
  CHECK(AcceptsGzip("x-gzip"));
  CHECK(AcceptsGzip("*"));
  CHECK_FALSE(AcceptsGzip(""));
  CHECK_FALSE(AcceptsGzip("identity"));
  CHECK_FALSE(AcceptsGzip("br, deflate"));
  CHECK_FALSE(AcceptsGzip("gzip;q=0"));
  CHECK_FALSE(AcceptsGzip("gzip; q=0.000"));
  CHECK_FALSE(AcceptsGzip("*, gzip;q=0"));  // named beats the wildcard
  CHECK_FALSE(AcceptsGzip("*;q=0"));
  CHECK_FALSE(AcceptsGzip("gzip;q=abc"));  // unreadable: identity, which every client reads
  CHECK_FALSE(AcceptsGzip("gzip;q=2"));
  CHECK_FALSE(AcceptsGzip("gzipx"));
}
