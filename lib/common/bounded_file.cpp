#include "common/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace lagsight {
namespace {

// Closes the descriptor on every way out of ReadBoundedFile.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

Error TooLarge(std::size_t max_bytes) {
  return Error{"larger than " + DescribeByteCount(max_bytes) + ", the most lagsight reads"};
}

}  // namespace

std::string DescribeByteCount(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024;
  if (bytes >= kKiB * kKiB && bytes % (kKiB * kKiB) == 0) {
    return std::to_string(bytes / (kKiB * kKiB)) + " MiB";
  }
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::optional<std::string> DescribeIfNotRegularFile(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return std::nullopt;
  return std::string("not a regular file (it is ") + KindOf(info.st_mode) + ")";
}

Result<std::string> ReadBoundedFile(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (file.get() < 0) return Error{std::strerror(errno)};
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) return Error{std::strerror(errno)};
  if (!S_ISREG(info.st_mode)) {
    return Error{std::string("not a regular file (it is ") + KindOf(info.st_mode) + ")"};
  }
  if (static_cast<std::size_t>(info.st_size) > max_bytes) return TooLarge(max_bytes);
  // The file may grow while it is read: read one byte past the cap to notice.
  std::string content(static_cast<std::size_t>(info.st_size) + 1, '\0');
  std::size_t used = 0;
  while (true) {
    if (used == content.size()) {
      if (content.size() > max_bytes) return TooLarge(max_bytes);
      content.resize(std::min(content.size() * 2, max_bytes + 1));
    }
    const ssize_t got = ::read(file.get(), content.data() + used, content.size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error{std::strerror(errno)};
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  if (used > max_bytes) return TooLarge(max_bytes);
  content.resize(used);
  return content;
}

}  // namespace lagsight
