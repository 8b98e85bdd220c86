#include "common/gzip_stream.h"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace lagsight {
namespace {

// zlib counts a call's input and output in 32 bits: larger texts go in 1 GiB steps.
constexpr std::size_t kStep = std::size_t{1} << 30;
// The deflate window: how far back a piece may refer.
constexpr std::size_t kWindow = 32 * 1024;

Bytef* Bytes(const char* data) { return reinterpret_cast<Bytef*>(const_cast<char*>(data)); }

std::uint32_t Crc32(std::uint32_t crc, std::string_view text) {
  while (!text.empty()) {
    const std::size_t step = std::min(kStep, text.size());
    crc = static_cast<std::uint32_t>(crc32(crc, Bytes(text.data()), static_cast<uInt>(step)));
    text.remove_prefix(step);
  }
  return crc;
}

void AppendLittleEndian32(std::uint32_t value, std::string& out) {
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((value >> shift) & 0xff);
}

}  // namespace

RunDeflater::RunDeflater() : stream_(new z_stream{}) {
  // Negative window bits: raw deflate, no zlib or gzip wrapper (GzipJoiner writes the gzip one).
  if (deflateInit2(stream_, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    delete stream_;
    throw std::runtime_error("gzip: deflateInit2 failed");
  }
}

RunDeflater::~RunDeflater() {
  deflateEnd(stream_);
  delete stream_;
}

void RunDeflater::Append(std::string_view text, std::string_view preceding, DeflatedRun& run) {
  if (text.empty()) return;
  if (deflateReset(stream_) != Z_OK) throw std::runtime_error("gzip: deflateReset failed");
  if (preceding.size() > kWindow) preceding.remove_prefix(preceding.size() - kWindow);
  if (!preceding.empty() && deflateSetDictionary(stream_, Bytes(preceding.data()),
                                                 static_cast<uInt>(preceding.size())) != Z_OK) {
    throw std::runtime_error("gzip: deflateSetDictionary failed");
  }
  run.crc32 = Crc32(run.crc32, text);
  run.text_size += text.size();
  std::string& out = run.bytes;
  std::size_t used = out.size();
  while (!text.empty()) {
    const std::size_t step = std::min(kStep, text.size());
    stream_->next_in = Bytes(text.data());
    stream_->avail_in = static_cast<uInt>(step);
    text.remove_prefix(step);
    // Z_SYNC_FLUSH after every step: the output ends on a byte boundary with no final block, and
    // it is complete once deflate returns with output space left over.
    do {
      if (out.size() - used < 4096) out.resize(used + std::max<std::size_t>(4096, step / 4));
      stream_->next_out = reinterpret_cast<Bytef*>(out.data() + used);
      stream_->avail_out = static_cast<uInt>(std::min(kStep, out.size() - used));
      const std::size_t room = stream_->avail_out;
      const int result = deflate(stream_, Z_SYNC_FLUSH);
      if (result != Z_OK && result != Z_BUF_ERROR) throw std::runtime_error("gzip: deflate failed");
      used += room - stream_->avail_out;
    } while (stream_->avail_out == 0);
  }
  out.resize(used);
}

void AppendRun(DeflatedRun& run, const DeflatedRun& more) {
  run.bytes += more.bytes;
  run.crc32 = static_cast<std::uint32_t>(
      crc32_combine(run.crc32, more.crc32, static_cast<z_off_t>(more.text_size)));
  run.text_size += more.text_size;
}

GzipJoiner::GzipJoiner(std::size_t expected_bytes) {
  // 10 bytes of header (no name, no time; XFL 4: fastest level; OS 3: Unix), 2 of final block,
  // 8 of trailer.
  joined_.bytes.reserve(expected_bytes + 20);
  joined_.bytes.assign("\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03", 10);
}

void GzipJoiner::Add(const DeflatedRun& run) { AppendRun(joined_, run); }

GzippedText GzipJoiner::Finish() && {
  // The final block: fixed Huffman codes (BFINAL 1, BTYPE 01) holding only the end-of-block
  // code (seven 0 bits), RFC 1951 3.2.6.
  std::string& out = joined_.bytes;
  out.append("\x03\x00", 2);
  AppendLittleEndian32(joined_.crc32, out);
  AppendLittleEndian32(static_cast<std::uint32_t>(joined_.text_size & 0xffffffffu), out);
  return {std::move(out), joined_.text_size};
}

GzipReader::GzipReader(std::string_view gzip) : stream_(new z_stream{}) {
  // 15 + 16: the largest window, expecting a gzip header and trailer.
  if (inflateInit2(stream_, 15 + 16) != Z_OK) {
    delete stream_;
    throw std::runtime_error("gunzip: inflateInit2 failed");
  }
  stream_->next_in = Bytes(gzip.data());
  stream_->avail_in = static_cast<uInt>(std::min(kStep, gzip.size()));
  if (gzip.size() > kStep) {
    inflateEnd(stream_);
    delete stream_;
    throw std::runtime_error("gunzip: input larger than 1 GiB");
  }
}

GzipReader::~GzipReader() {
  inflateEnd(stream_);
  delete stream_;
}

std::size_t GzipReader::Read(char* out, std::size_t capacity) {
  if (done_ || capacity == 0) return 0;
  stream_->next_out = reinterpret_cast<Bytef*>(out);
  stream_->avail_out = static_cast<uInt>(std::min(kStep, capacity));
  const std::size_t room = stream_->avail_out;
  const int result = inflate(stream_, Z_NO_FLUSH);
  if (result == Z_STREAM_END) {
    done_ = true;
  } else if (result != Z_OK) {
    throw std::runtime_error("gunzip: corrupt or truncated gzip");
  }
  const std::size_t written = room - stream_->avail_out;
  if (written == 0 && !done_) throw std::runtime_error("gunzip: truncated gzip");
  return written;
}

void GzipWriter::CompressIfFull() {
  constexpr std::size_t kPieceBytes = 64 * 1024;
  if (pending_.size() >= kPieceBytes) Compress();
}

void GzipWriter::Compress() {
  constexpr std::size_t kWindow = 32 * 1024;
  deflater_.Append(pending_, preceding_, run_);
  const std::string_view written(pending_);
  if (written.size() >= kWindow) {
    preceding_.assign(written.substr(written.size() - kWindow));
  } else {
    preceding_ += written;
    if (preceding_.size() > kWindow) preceding_.erase(0, preceding_.size() - kWindow);
  }
  pending_.clear();
}

GzippedText GzipWriter::Finish() && {
  if (!pending_.empty()) Compress();
  GzipJoiner joiner(run_.bytes.size());
  joiner.Add(run_);
  return std::move(joiner).Finish();
}

GzippedText Gzip(std::string_view text) {
  DeflatedRun run;
  RunDeflater().Append(text, {}, run);
  GzipJoiner joiner(run.bytes.size());
  joiner.Add(run);
  return std::move(joiner).Finish();
}

std::string Gunzip(std::string_view gzip) {
  GzipReader reader(gzip);
  std::string text;
  std::size_t used = 0;
  while (!reader.done()) {
    if (text.size() - used < 65536) text.resize(used + std::max<std::size_t>(65536, used));
    used += reader.Read(text.data() + used, text.size() - used);
  }
  text.resize(used);
  return text;
}

}  // namespace lagsight
