// trace::TraceReader: reads a trace file event by event, within bounds.
//
// A line longer than the reader's limit is refused with an error naming its line number, before
// it is held whole; a gzip-compressed file is read as the text it holds. A line that is not a
// valid event is an error naming its line number and what is wrong. Garbage, a truncated last
// line or a binary file give errors, never a crash. An empty line is skipped. Not thread-safe;
// one reader per file.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "trace/trace_event.h"

namespace lagsight::trace {

// The longest line a reader accepts by default: a Kafka snapshot of about a million
// group-partitions (~40 bytes each as a committed row, ~30 as a partition row).
inline constexpr std::size_t kDefaultMaxTraceLineBytes = 256 * 1024 * 1024;

class TraceReader {
 public:
  // The error names the file and why it cannot be read.
  static Result<TraceReader> Open(const std::string& path,
                                  std::size_t max_line_bytes = kDefaultMaxTraceLineBytes);

  // The next event; none at the end of the file. The error starts with "line N: ".
  Result<std::optional<TraceEvent>> Next();

  // The number of the line Next() read last (1-based).
  std::size_t line_number() const { return line_number_; }

 private:
  struct FileCloser {
    void operator()(gzFile file) const { gzclose(file); }
  };
  static constexpr unsigned kReadBufferBytes = 128 * 1024;  // zlib's own, for inflating
  TraceReader(std::unique_ptr<gzFile_s, FileCloser> file, std::size_t max_line_bytes)
      : file_(std::move(file)), max_line_bytes_(max_line_bytes) {}

  // The next line without its '\n' into line_; false at the end of the file.
  Result<bool> ReadLine();

  std::unique_ptr<gzFile_s, FileCloser> file_;
  std::size_t max_line_bytes_;
  std::size_t line_number_ = 0;
  std::string line_;
  std::vector<char> buffer_ = std::vector<char>(1024 * 1024);
  std::size_t buffer_begin_ = 0;  // the part of buffer_ not yet taken into a line
  std::size_t buffer_end_ = 0;
};

}  // namespace lagsight::trace
