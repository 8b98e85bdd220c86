#include "trace/trace_reader.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/bounded_file.h"
#include "trace/trace_format.h"

namespace lagsight::trace {

Result<TraceReader> TraceReader::Open(const std::string& path, std::size_t max_line_bytes) {
  if (const auto not_regular = DescribeIfNotRegularFile(path)) {
    return Error{path + ": " + *not_regular};
  }
  // zlib reads a gzip-compressed trace (a bug report's, the suite's recordings: ~40x smaller)
  // and a plain one alike.
  std::unique_ptr<gzFile_s, FileCloser> file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) return Error{path + ": " + std::strerror(errno)};
  gzbuffer(file.get(), kReadBufferBytes);
  return TraceReader(std::move(file), max_line_bytes);
}

Result<bool> TraceReader::ReadLine() {
  line_.clear();
  ++line_number_;
  bool read_any = false;
  while (true) {
    if (buffer_begin_ == buffer_end_) {
      buffer_begin_ = 0;
      const int read = gzread(file_.get(), buffer_.data(), static_cast<unsigned>(buffer_.size()));
      if (read < 0) {
        int code = 0;
        const char* message = gzerror(file_.get(), &code);
        return Error{"line " + std::to_string(line_number_) + ": " +
                     (code == Z_ERRNO ? std::strerror(errno) : message)};
      }
      buffer_end_ = static_cast<std::size_t>(read);
      if (buffer_end_ == 0) break;
    }
    read_any = true;
    const char* begin = buffer_.data() + buffer_begin_;
    const std::size_t available = buffer_end_ - buffer_begin_;
    const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', available));
    const std::size_t taken = newline != nullptr ? newline - begin : available;
    line_.append(begin, taken);
    buffer_begin_ += newline != nullptr ? taken + 1 : taken;
    if (line_.size() > max_line_bytes_) {
      return Error{"line " + std::to_string(line_number_) + ": longer than the limit of " +
                   DescribeByteCount(max_line_bytes_)};
    }
    if (newline != nullptr) return true;
  }
  return read_any;  // a last line without '\n' is read as it is (and must still parse)
}

Result<std::optional<TraceEvent>> TraceReader::Next() {
  while (true) {
    auto more = ReadLine();
    if (!more) return more.error();
    if (!*more) return std::optional<TraceEvent>();
    if (line_.empty()) continue;
    auto event = ParseTraceEvent(line_);
    if (!event) return Error{"line " + std::to_string(line_number_) + ": " + event.error().message};
    return std::optional<TraceEvent>(std::move(event).value());
  }
}

}  // namespace lagsight::trace
