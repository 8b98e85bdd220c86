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
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) return Error{path + ": " + std::strerror(errno)};
  return TraceReader(std::move(file), max_line_bytes);
}

Result<bool> TraceReader::ReadLine() {
  line_.clear();
  ++line_number_;
  bool read_any = false;
  while (true) {
    if (buffer_begin_ == buffer_end_) {
      buffer_begin_ = 0;
      buffer_end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_.get());
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
  if (std::ferror(file_.get())) {
    return Error{"line " + std::to_string(line_number_) + ": " + std::strerror(errno)};
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
