// Gzip of the exposition and the Accept-Encoding reading that decides when to send it.
#include "http/gzip.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

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

TEST_CASE("gzip: the bytes inflate back to the text, and an exposition shrinks", "[http]") {
  using lagsight::http::Gzip;
  CHECK(Gunzip(Gzip("")).empty());
  CHECK(Gunzip(Gzip("lagsight_up 1\n")) == "lagsight_up 1\n");
  std::string exposition;
  for (int i = 0; i < 20000; ++i) {
    exposition += "lagsight_kafka_group_lag_records{kafka_cluster=\"prod\",group=\"g" +
                  std::to_string(i % 50) + "\",topic=\"orders\",partition=\"" + std::to_string(i) +
                  "\"} " + std::to_string(i * 7 % 1000) + "\n";
  }
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
