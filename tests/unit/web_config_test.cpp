// --web.config.file: good files parse into the values they say; each bad file fails with exactly
// the text in its .error twin. Basic auth: header decoding, bcrypt verification against published
// test vectors (openwall's crypt_blowfish), and what is remembered after a success.
#include "http/web_config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "error_files.h"
#include "http/basic_auth.h"
#include "http/server_security.h"

using lagsight::testing::ReadText;

namespace {

using lagsight::http::BasicAuth;
using lagsight::http::BasicCredentials;
using lagsight::http::ClientAuth;
using lagsight::http::ParseBasicAuthorization;
using lagsight::http::ParseWebConfig;
using lagsight::http::TlsVersion;
using lagsight::http::WebConfig;
namespace fs = std::filesystem;

const fs::path kData = fs::path(LAGSIGHT_TEST_DATA) / "web_config";

// Published bcrypt vectors: "U*U" and "U*U*" at cost 5 with a salt of C's.
const std::string kHashOfUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
const std::string kHashOfUUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK";

lagsight::Result<WebConfig> ParseTestFile(const std::string& relative) {
  return ParseWebConfig(ReadText(kData / relative), relative, "/etc/lagsight");
}

}  // namespace

TEST_CASE("every bad web config fails with the exact message in its .error file", "[http]") {
  CHECK(lagsight::testing::CheckBadFiles(kData, ParseTestFile) >= 24);
}

TEST_CASE("a full web config carries every value, relative paths under the file's directory",
          "[http]") {
  const auto parsed = ParseTestFile("good/full.yaml");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->tls.has_value());
  const auto& tls = *parsed->tls;
  CHECK(tls.cert_file.path == "/etc/lagsight/certs/server.crt");
  CHECK(tls.cert_file.line == 3);
  CHECK(tls.key_file.path == "/etc/lagsight/server.key");
  CHECK(tls.client_auth == ClientAuth::kRequireAndVerifyClientCert);
  REQUIRE(tls.client_ca_file.has_value());
  CHECK(tls.client_ca_file->path == "/etc/lagsight/certs/clients-ca.crt");
  CHECK(tls.min_version == TlsVersion::kTls13);
  CHECK(tls.max_version == TlsVersion::kTls13);
  CHECK(parsed->basic_auth_users ==
        std::map<std::string, std::string>{
            {"prometheus", kHashOfUUU},
            {"grafana", "$2y$04$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"}});
}

TEST_CASE("web config defaults: TLS 1.2 and no client certificates; an empty section is plain HTTP",
          "[http]") {
  const auto tls_only = ParseTestFile("good/tls_only.yaml");
  REQUIRE(tls_only.ok());
  REQUIRE(tls_only->tls.has_value());
  CHECK(tls_only->tls->min_version == TlsVersion::kTls12);
  CHECK_FALSE(tls_only->tls->max_version.has_value());
  CHECK(tls_only->tls->client_auth == ClientAuth::kNoClientCert);
  CHECK(tls_only->basic_auth_users.empty());

  const auto empty_tls = ParseTestFile("good/empty_tls_section.yaml");
  REQUIRE(empty_tls.ok());
  CHECK_FALSE(empty_tls->tls.has_value());
  CHECK(empty_tls->basic_auth_users.size() == 1);
}

// An empty file meant plain HTTP without authentication: a save that truncated the web config of a
// running daemon turned TLS and basic auth off until the file was whole again.
TEST_CASE("an empty or comment-only web config is an error, never plain HTTP", "[http]") {
  for (const char* text : {"", "\n", "   \n\n", "# nothing\n", "---\n", "# a\n---\n# b\n"}) {
    INFO('"' << text << '"');
    const auto parsed = ParseWebConfig(text, "web.yml", "/etc/lagsight");
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message ==
          "web.yml: the web configuration is empty (or only comments); for plain HTTP without "
          "authentication, leave out --web.config.file");
  }
}

TEST_CASE("Authorization headers decode to user and password", "[http]") {
  // "alice:open sesame" and "bob:" (an empty password) and "carol:a:b" (colons in the password).
  auto alice = ParseBasicAuthorization("Basic YWxpY2U6b3BlbiBzZXNhbWU=");
  REQUIRE(alice.has_value());
  CHECK(alice->user == "alice");
  CHECK(alice->password == "open sesame");
  auto bob = ParseBasicAuthorization("basic   Ym9iOg==");
  REQUIRE(bob.has_value());
  CHECK(bob->user == "bob");
  CHECK(bob->password.empty());
  auto carol = ParseBasicAuthorization("BASIC Y2Fyb2w6YTpi");
  REQUIRE(carol.has_value());
  CHECK(carol->password == "a:b");

  CHECK_FALSE(ParseBasicAuthorization("").has_value());
  CHECK_FALSE(ParseBasicAuthorization("Basic").has_value());
  CHECK_FALSE(ParseBasicAuthorization("Bearer YWxpY2U6eA==").has_value());
  CHECK_FALSE(ParseBasicAuthorization("BasicYWxpY2U6eA==").has_value());
  CHECK_FALSE(ParseBasicAuthorization("Basic YWxpY2U").has_value());       // not a multiple of 4
  CHECK_FALSE(ParseBasicAuthorization("Basic YWxp*2U6").has_value());      // not base64
  CHECK_FALSE(ParseBasicAuthorization("Basic YW=pY2U6eA==").has_value());  // padding inside
  CHECK_FALSE(ParseBasicAuthorization("Basic YWxpY2U=").has_value());      // "alice": no colon
}

TEST_CASE("bcrypt verification matches the published vectors for $2a$, $2b$ and $2y$", "[http]") {
  CHECK(lagsight::http::BcryptMatches("U*U", kHashOfUU));
  CHECK(lagsight::http::BcryptMatches("U*U*", kHashOfUUU));
  CHECK_FALSE(lagsight::http::BcryptMatches("U*U", kHashOfUUU));
  CHECK_FALSE(lagsight::http::BcryptMatches("", kHashOfUU));
  for (const char* prefix : {"$2b$", "$2y$"}) {
    CHECK(lagsight::http::BcryptMatches("U*U", prefix + kHashOfUU.substr(4)));
  }
  CHECK_FALSE(lagsight::http::BcryptMatches(std::string("U*U\0x", 5), kHashOfUU));
  CHECK_FALSE(lagsight::http::BcryptMatches("U*U", "not a hash"));
}

TEST_CASE("basic auth remembers verified pairs only", "[http]") {
  const BasicAuth auth({{"alice", kHashOfUU}, {"bob", kHashOfUUU}});
  const BasicCredentials alice{"alice", "U*U"};
  CHECK_FALSE(auth.VerifiedBefore(alice));
  CHECK(auth.Verify(alice));
  CHECK(auth.VerifiedBefore(alice));

  const BasicCredentials wrong{"alice", "U*U*"};
  CHECK_FALSE(auth.Verify(wrong));
  CHECK_FALSE(auth.VerifiedBefore(wrong));
  // bob's password is not alice's: the pair, not the password, is what verified.
  CHECK_FALSE(auth.Verify({"bob", "U*U"}));
  CHECK_FALSE(auth.VerifiedBefore({"bob", "U*U"}));
  CHECK(auth.Verify({"bob", "U*U*"}));
  CHECK_FALSE(auth.Verify({"mallory", "U*U"}));
  CHECK_FALSE(auth.VerifiedBefore({"mallory", "U*U"}));
}

TEST_CASE("a web config change that turns basic auth off applies only once the file settles",
          "[http]") {
  using std::chrono::milliseconds;
  const fs::path dir =
      fs::temp_directory_path() / ("lagsight-web-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "web.yml";
  const auto write = [&](const std::string& text) { std::ofstream(file, std::ios::trunc) << text; };
  const std::string with_auth = "basic_auth_users:\n  alice: " + kHashOfUUU + "\n";
  write(with_auth);
  // A settle time far above the test's own pauses, so a slow machine cannot flip the checks.
  auto loaded = lagsight::http::WebConfigFile::Load(file.string(), milliseconds(1000));
  REQUIRE(loaded.ok());
  CHECK(loaded->Current().auth);

  // A save caught halfway (truncated, rewritten in place): valid, and without users.
  write("tls_server_config: {}\n");
  CHECK(loaded->Current().auth);
  std::this_thread::sleep_for(milliseconds(100));
  CHECK(loaded->Current().auth);
  // The save completes: authentication stays on throughout.
  write(with_auth + "# saved again\n");
  CHECK(loaded->Current().auth);

  // Meant: no authentication, once the file has stood unchanged for the settle time.
  write("tls_server_config: {}\n");
  CHECK(loaded->Current().auth);
  std::this_thread::sleep_for(milliseconds(1100));
  CHECK_FALSE(loaded->Current().auth);
  // Turning it on again applies at once.
  write(with_auth);
  CHECK(loaded->Current().auth);
  fs::remove_all(dir);
}
