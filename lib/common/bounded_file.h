// ReadBoundedFile: the one way lagsight reads a file it is told to read (the configuration, the
// web configuration, password and token files).
//
// It reads only regular files, and only up to a size cap: a path such as /dev/zero, /dev/stdin,
// a FIFO or a directory, or a file far larger than any sane configuration, is a clear error at
// once instead of a read that blocks or eats memory until the process dies. A FIFO is opened
// without blocking, and the type is checked on the opened descriptor, so a path swapped between
// the check and the read cannot slip through. Pure apart from the read; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/result.h"

namespace lagsight {

// The configuration and the web configuration: far above any real file (thousands of clusters).
inline constexpr std::size_t kMaxConfigFileBytes = 16 * 1024 * 1024;
// A password or bearer token file: a secret is a line, a JWT a few KiB.
inline constexpr std::size_t kMaxSecretFileBytes = 1024 * 1024;

// The whole content of the regular file at `path`, at most `max_bytes` long. The error says why,
// without the path (callers say which file and which key named it), e.g.
// "not a regular file (it is a character device)".
Result<std::string> ReadBoundedFile(const std::string& path, std::size_t max_bytes);

// For files that a library opens by name (OpenSSL's certificates and CAs): when `path` names
// something that exists but is not a regular file, what it is ("a FIFO"); nullopt otherwise (a
// missing file is left to the library's own error). Does not open the path, so a FIFO cannot
// block it.
std::optional<std::string> DescribeIfNotRegularFile(const std::string& path);

// "16 MiB", "1 MiB", "512 KiB", "100 bytes": a limit as people write it.
std::string DescribeByteCount(std::size_t bytes);

}  // namespace lagsight
