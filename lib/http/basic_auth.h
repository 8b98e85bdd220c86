// BasicAuth: checks HTTP basic-auth credentials against the bcrypt hashes of --web.config.file.
//
// bcrypt is slow on purpose (about 70 ms per check at cost 10 on the CI machine), and Prometheus
// sends the same credentials with every scrape, so a pair that verified once is remembered: as
// a SHA-256 digest of user, hash and password (the password itself is never stored), and at
// most kMaxRemembered of them. A wrong password is verified in full every time, and an unknown
// user costs as much as a known one, so timing tells nothing about which users exist.
// Comparisons of secrets are constant-time. Thread-safe: Verify may run on any thread.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace lagsight::http {

struct BasicCredentials {
  std::string user;
  std::string password;
};

// Decodes an Authorization header value "Basic base64(user:password)"; nullopt when it is
// absent, another scheme, or malformed.
std::optional<BasicCredentials> ParseBasicAuthorization(std::string_view header_value);

class BasicAuth {
 public:
  static constexpr std::size_t kMaxRemembered = 1024;

  // user -> bcrypt hash ($2a$, $2b$, $2y$), as validated by ParseWebConfig; not empty.
  explicit BasicAuth(std::map<std::string, std::string> users);

  // True when the pair verified before: the cheap path every scrape after the first takes.
  bool VerifiedBefore(const BasicCredentials& credentials) const;
  // The full bcrypt check (slow); a success is remembered for VerifiedBefore.
  bool Verify(const BasicCredentials& credentials) const;

 private:
  using Digest = std::array<unsigned char, 32>;
  Digest Key(const BasicCredentials& credentials, const std::string& hash) const;

  std::map<std::string, std::string> users_;
  mutable std::mutex mutex_;
  mutable std::set<Digest> remembered_;
};

// bcrypt verification through libcrypt (libxcrypt): true when `password` hashes to `hash`.
bool BcryptMatches(const std::string& password, const std::string& hash);

}  // namespace lagsight::http
