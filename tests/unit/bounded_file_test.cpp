// ReadBoundedFile and the loaders built on it: a device, a FIFO, a directory or an oversize file
// is a clear error at once. Before, /dev/zero as a password_file (or as --config.file) was read
// until memory ran out, and a FIFO blocked the daemon forever.
#include "common/bounded_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "http/web_config.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using lagsight::kMaxConfigFileBytes;
using lagsight::kMaxSecretFileBytes;
using lagsight::ReadBoundedFile;

fs::path WriteFile(const fs::path& path, std::size_t bytes, char fill = 'x') {
  std::ofstream(path, std::ios::binary) << std::string(bytes, fill);
  return path;
}

}  // namespace

TEST_CASE("a regular file is read whole, up to and including the limit", "[common]") {
  TempDir dir;
  CHECK(*ReadBoundedFile(WriteFile(dir.path() / "empty", 0), 10) == "");
  CHECK(*ReadBoundedFile(WriteFile(dir.path() / "ten", 10, 'a'), 10) == "aaaaaaaaaa");
  const auto over = ReadBoundedFile(WriteFile(dir.path() / "eleven", 11), 10);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message == "larger than 10 bytes, the most lagsight reads");
}

TEST_CASE("devices, FIFOs and directories are refused without reading or blocking", "[common]") {
  const auto zero = ReadBoundedFile("/dev/zero", kMaxSecretFileBytes);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "not a regular file (it is a character device)");

  TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto from_fifo = ReadBoundedFile(fifo, kMaxSecretFileBytes);  // no writer: must not wait
  REQUIRE_FALSE(from_fifo.ok());
  CHECK(from_fifo.error().message == "not a regular file (it is a FIFO)");

  const auto directory = ReadBoundedFile(dir.path(), kMaxSecretFileBytes);
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.error().message == "not a regular file (it is a directory)");

  const auto absent = ReadBoundedFile(dir.path() / "absent", kMaxSecretFileBytes);
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().message == "No such file or directory");
}

TEST_CASE("files opened by name elsewhere are checked without being opened", "[common]") {
  using lagsight::DescribeIfNotRegularFile;
  TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(DescribeIfNotRegularFile(fifo) == "not a regular file (it is a FIFO)");
  CHECK(DescribeIfNotRegularFile("/dev/zero") == "not a regular file (it is a character device)");
  CHECK_FALSE(DescribeIfNotRegularFile(WriteFile(dir.path() / "ca.pem", 10)).has_value());
  CHECK_FALSE(DescribeIfNotRegularFile(dir.path() / "absent").has_value());  // the library's to say
}

TEST_CASE("the configuration and web configuration refuse /dev/zero and oversize files",
          "[common]") {
  const auto config = lagsight::config::ReadConfigFile("/dev/zero");
  REQUIRE_FALSE(config.ok());
  CHECK(config.error().message ==
        "/dev/zero: cannot read the configuration file: not a regular file (it is a character "
        "device)");
  const auto web = lagsight::http::LoadWebConfigFile("/dev/zero");
  REQUIRE_FALSE(web.ok());
  CHECK(web.error().message ==
        "/dev/zero: cannot read the web configuration file: not a regular file (it is a "
        "character device)");

  TempDir dir;
  // A YAML comment just over the limit: only its size is wrong.
  const fs::path huge = WriteFile(dir.path() / "huge.yaml", kMaxConfigFileBytes + 1, '#');
  const auto huge_config = lagsight::config::ReadConfigFile(huge);
  REQUIRE_FALSE(huge_config.ok());
  CHECK(huge_config.error().message ==
        huge.string() +
            ": cannot read the configuration file: larger than 16 MiB, the most "
            "lagsight reads");
  const auto huge_web = lagsight::http::LoadWebConfigFile(huge);
  REQUIRE_FALSE(huge_web.ok());
  CHECK(huge_web.error().message ==
        huge.string() +
            ": cannot read the web configuration file: larger than 16 MiB, the "
            "most lagsight reads");
}

TEST_CASE("a password_file over 1 MiB is a config error naming the key", "[common]") {
  TempDir dir;
  const fs::path secret = WriteFile(dir.path() / "password", kMaxSecretFileBytes + 1);
  const std::string yaml =
      "kafka:\n  - name: a\n    bootstrap_servers: b:9092\nflink:\n  - name: f\n"
      "    rest_url: http://jm:8081\n    auth:\n      username: u\n      password_file: " +
      secret.string() + "\n";
  const auto parsed =
      lagsight::config::ParseConfig(yaml, "lagsight.yaml", lagsight::config::ProcessEnvironment());
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().message == "lagsight.yaml:9: flink[0].auth.password_file: cannot read \"" +
                                      secret.string() +
                                      "\": larger than 1 MiB, the most lagsight reads");

  WriteFile(secret, kMaxSecretFileBytes, 'p');  // exactly the limit: read
  const auto at_limit =
      lagsight::config::ParseConfig(yaml, "lagsight.yaml", lagsight::config::ProcessEnvironment());
  REQUIRE(at_limit.ok());
  CHECK(at_limit->flink[0].password.size() == kMaxSecretFileBytes);
}
