// Gzip written in pieces and read back in pieces, so that a large text is never whole in memory.
//
// The exposition at a million group-partitions is ~400 MB of text and ~15 MB gzipped. Holding the
// text, even only until it was compressed, set lagsight's resident size (heaptrack at 100,000
// group-partitions: 79 MB of the 201 MB heap peak were the published text and the next one). So
// each metric family is compressed while its samples are written (RunDeflater into a
// DeflatedRun), the runs are joined into one gzip member (GzipJoiner), and a client that cannot
// take gzip gets it inflated a buffer at a time as it is sent (GzipReader).
//
// Why runs can be joined: each is raw deflate ending with a sync flush (an empty stored block, so
// it ends on a byte boundary) and holds no final block; deflate blocks simply follow each other,
// so runs laid end to end are one deflate stream of their texts laid end to end (pigz joins its
// pieces this way). Compressed and checksummed with Intel's ISA-L (Debian 12's libisal 2.30);
// read back, for a client that cannot take gzip, with zlib (1.2.13). Not thread-safe; each object
// belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct isal_zstream;
struct z_stream_s;

namespace lagsight {

// Compressed text that other runs may follow: raw deflate blocks, none final, ending on a byte
// boundary, with the CRC-32 and length of the text they hold.
struct DeflatedRun {
  std::string bytes;
  std::uint32_t crc32 = 0;  // of the text so far (gzip's CRC-32, 0 for none)
  std::uint64_t text_size = 0;
};

// Lays `more` after `run`: one run of the two texts, in that order.
void AppendRun(DeflatedRun& run, const DeflatedRun& more);

// One gzip member and the length of the text it holds (what Content-Length is when it is sent
// inflated).
struct GzippedText {
  std::string bytes;
  std::uint64_t text_size = 0;
};

// A raw deflater at ISA-L's level 1, the fastest that finds repeated strings across a 32 KiB
// window (a render is on the poll's path). Measured on this machine over the 243 MB exposition of
// 20,000 groups x 50 partitions, in 256 KiB pieces each starting from the 32 KiB before it, as
// FamilyBuilder compresses it (one thread): zlib level 1 deflated it in 0.376 s to 9.38 MB, ISA-L
// level 1 in 0.101 s to 9.10 MB (its level 0: as fast, 15.0 MB; level 3: 0.41 s, 9.04 MB). At a
// million group-partitions deflate and CRC had been two thirds of the render. Owns its stream and
// level buffer (~0.4 MB).
class RunDeflater {
 public:
  RunDeflater();
  ~RunDeflater();
  RunDeflater(const RunDeflater&) = delete;
  RunDeflater& operator=(const RunDeflater&) = delete;
  // Moved from, it may only be destroyed or assigned to (a FamilyBuilder returned by a thread).
  RunDeflater(RunDeflater&&) noexcept;
  RunDeflater& operator=(RunDeflater&&) noexcept;

  // Appends `text` to `run`, compressed. `preceding` is the text that comes right before `text`
  // in the joined stream (only its last 32 KiB count): the new blocks may refer back into it, so
  // a text compressed in pieces compresses about as well as in one go. Pass nothing when what
  // precedes is unknown. Throws std::runtime_error when the deflater fails.
  void Append(std::string_view text, std::string_view preceding, DeflatedRun& run);

 private:
  std::unique_ptr<isal_zstream> stream_;
  std::vector<std::uint8_t> level_buffer_;
};

// Joins runs, in the order added, into one gzip member (RFC 1952).
class GzipJoiner {
 public:
  // `expected_bytes`: the sum of the runs' sizes, reserved at once so that the member published
  // holds no spare capacity.
  explicit GzipJoiner(std::size_t expected_bytes = 0);
  void Add(const DeflatedRun& run);
  GzippedText Finish() &&;

 private:
  // The header, then the runs laid end to end (AppendRun), with their CRC-32 and length.
  DeflatedRun joined_;
};

// Reads one gzip member a buffer at a time. Owns its z_stream (~40 KiB); the bytes must outlive
// it.
class GzipReader {
 public:
  explicit GzipReader(std::string_view gzip);  // throws std::runtime_error (out of memory)
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Inflates up to `capacity` bytes into `out`: how many were written, 0 once the member ended.
  // Throws std::runtime_error on corrupt or truncated input.
  std::size_t Read(char* out, std::size_t capacity);
  bool done() const { return done_; }

 private:
  z_stream_s* stream_;
  bool done_ = false;
};

// One gzip member from a text written a piece at a time: the writer appends to text(), and calls
// CompressIfFull() now and then (between rows, say), which compresses what has gathered once it
// is a piece (64 KiB). A long text (the status page at 20,000 groups: 52 MB of HTML, its whole
// size at the peak of a render) is then never whole in memory.
class GzipWriter {
 public:
  std::string& text() { return pending_; }
  void CompressIfFull();    // throws std::runtime_error when the deflater fails
  GzippedText Finish() &&;  // likewise

 private:
  void Compress();

  RunDeflater deflater_;
  DeflatedRun run_;
  std::string pending_;    // written, not compressed yet
  std::string preceding_;  // the last 32 KiB compressed: the next piece refers back into it
};

// `text` as one gzip member.
GzippedText Gzip(std::string_view text);

// The text of a gzip member, whole (for tests and tools; the daemon streams with GzipReader).
std::string Gunzip(std::string_view gzip);

}  // namespace lagsight
