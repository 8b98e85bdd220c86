#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <memory>

namespace lagsight::http {
namespace {

std::optional<std::string> DecodeBase64(std::string_view in) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  unsigned bits = 0;
  int bit_count = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') {
      // Padding only at the end, at most two.
      if (i + 2 < in.size() || in.find_first_not_of('=', i) != std::string_view::npos) {
        return std::nullopt;
      }
      break;
    }
    const int v = value(in[i]);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<unsigned>(v);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      out.push_back(static_cast<char>((bits >> bit_count) & 0xFF));
    }
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::optional<BasicCredentials> ParseBasicAuthorization(std::string_view header_value) {
  // The scheme is case-insensitive (RFC 7617); one or more spaces follow it.
  constexpr std::string_view kScheme = "basic";
  if (header_value.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if ((header_value[i] | 0x20) != kScheme[i]) return std::nullopt;
  }
  std::string_view encoded = header_value.substr(kScheme.size());
  if (encoded.front() != ' ') return std::nullopt;
  encoded.remove_prefix(std::min(encoded.find_first_not_of(' '), encoded.size()));
  while (!encoded.empty() && encoded.back() == ' ') encoded.remove_suffix(1);
  const auto decoded = DecodeBase64(encoded);
  if (!decoded) return std::nullopt;
  const std::size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return BasicCredentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

bool BcryptMatches(const std::string& password, const std::string& hash) {
  // crypt_data is ~32 KiB: too large for the stack of a pool thread to take lightly.
  auto data = std::make_unique<crypt_data>();
  const char* computed =
      crypt_rn(password.c_str(), hash.c_str(), data.get(), static_cast<int>(sizeof(crypt_data)));
  // NUL bytes cannot be passed to crypt; such a password never matches.
  if (computed == nullptr || password.find('\0') != std::string::npos) return false;
  return ConstantTimeEquals(computed, hash);
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

BasicAuth::Digest BasicAuth::Key(const BasicCredentials& credentials,
                                 const std::string& hash) const {
  Digest digest{};
  unsigned int length = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free);
  const char separator = '\0';
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(context.get(), credentials.user.data(), credentials.user.size());
  EVP_DigestUpdate(context.get(), &separator, 1);
  EVP_DigestUpdate(context.get(), hash.data(), hash.size());
  EVP_DigestUpdate(context.get(), &separator, 1);
  EVP_DigestUpdate(context.get(), credentials.password.data(), credentials.password.size());
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  return digest;
}

bool BasicAuth::VerifiedBefore(const BasicCredentials& credentials) const {
  const auto user = users_.find(credentials.user);
  if (user == users_.end()) return false;
  const Digest key = Key(credentials, user->second);
  std::lock_guard lock(mutex_);
  return remembered_.contains(key);
}

bool BasicAuth::Verify(const BasicCredentials& credentials) const {
  const auto user = users_.find(credentials.user);
  if (user == users_.end()) {
    // Spend the same time as for a real user, then fail: no user enumeration by timing.
    BcryptMatches(credentials.password, users_.begin()->second);
    return false;
  }
  if (!BcryptMatches(credentials.password, user->second)) return false;
  const Digest key = Key(credentials, user->second);
  std::lock_guard lock(mutex_);
  if (remembered_.size() >= kMaxRemembered) remembered_.clear();
  remembered_.insert(key);
  return true;
}

}  // namespace lagsight::http
