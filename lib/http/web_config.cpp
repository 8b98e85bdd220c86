#include "http/web_config.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "common/bounded_file.h"
#include "config/strict_yaml.h"

namespace lagsight::http {
namespace {

// Thrown inside this file only and turned into an Error at the ParseWebConfig boundary.
struct WebConfigProblem {
  std::string message;
};

struct KeySet {
  std::initializer_list<std::string_view> supported;
  // exporter-toolkit keys that lagsight does not implement: named as such, not as typos.
  std::initializer_list<std::string_view> unsupported;
};

std::string List(std::initializer_list<std::string_view> keys) {
  std::string out;
  for (std::string_view key : keys) out += (out.empty() ? "" : ", ") + std::string(key);
  return out;
}

bool Contains(std::initializer_list<std::string_view> keys, std::string_view key) {
  for (std::string_view k : keys) {
    if (k == key) return true;
  }
  return false;
}

class Reader {
 public:
  Reader(std::string_view source, std::string_view base_directory)
      : source_(source), base_directory_(base_directory) {}

  [[noreturn]] void Fail(const YAML::Node& node, const std::string& path,
                         const std::string& what) const {
    throw WebConfigProblem{Where(node) + ": " + (path.empty() ? "" : path + ": ") + what};
  }

  std::string Where(const YAML::Node& node) const {
    std::string where(source_);
    if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
    return where;
  }

  // Checks every key of `map` (and that none repeats: YAML would keep only one of them).
  void RequireKeys(const YAML::Node& map, const std::string& path, const KeySet& keys) const {
    if (!map.IsMap()) Fail(map, path, "must be a mapping of keys to values");
    for (const auto& entry : map) {
      const std::string key = Scalar(entry.first, path);
      const std::string key_path = path.empty() ? key : path + "." + key;
      if (Contains(keys.unsupported, key)) {
        Fail(entry.first, key_path,
             "not supported by lagsight (supported keys: " + List(keys.supported) + ")");
      }
      if (!Contains(keys.supported, key)) {
        Fail(entry.first, key_path, "unknown key (known keys: " + List(keys.supported) + ")");
      }
    }
    if (const auto repeated = config::FirstRepeatedKey(map)) {
      const std::string key = repeated->Scalar();
      Fail(*repeated, path.empty() ? key : path + "." + key, "duplicate key");
    }
  }

  std::string Scalar(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) Fail(node, path, "must be a string");
    return node.Scalar();
  }

  ConfiguredFile File(const YAML::Node& node, const std::string& path) const {
    const std::string value = Scalar(node, path);
    if (value.empty()) Fail(node, path, "must name a file");
    std::filesystem::path file(value);
    if (file.is_relative() && !base_directory_.empty()) {
      file = std::filesystem::path(base_directory_) / file;
    }
    return ConfiguredFile{file.string(), node.Mark().line + 1};
  }

 private:
  std::string_view source_;
  std::string_view base_directory_;
};

ClientAuth ReadClientAuth(const Reader& reader, const YAML::Node& node, const std::string& path) {
  static constexpr std::pair<std::string_view, ClientAuth> kNames[] = {
      {"NoClientCert", ClientAuth::kNoClientCert},
      {"RequestClientCert", ClientAuth::kRequestClientCert},
      {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
      {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
      {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert},
  };
  const std::string value = reader.Scalar(node, path);
  std::string known;
  for (const auto& [name, auth] : kNames) {
    if (name == value) return auth;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  reader.Fail(node, path, "unknown client auth type \"" + value + "\" (one of: " + known + ")");
}

TlsVersion ReadTlsVersion(const Reader& reader, const YAML::Node& node, const std::string& path) {
  static constexpr std::pair<std::string_view, TlsVersion> kNames[] = {
      {"TLS10", TlsVersion::kTls10},
      {"TLS11", TlsVersion::kTls11},
      {"TLS12", TlsVersion::kTls12},
      {"TLS13", TlsVersion::kTls13},
  };
  const std::string value = reader.Scalar(node, path);
  for (const auto& [name, version] : kNames) {
    if (name == value) return version;
  }
  reader.Fail(node, path,
              "unknown TLS version \"" + value + "\" (one of: TLS10, TLS11, TLS12, TLS13)");
}

std::optional<TlsServerConfig> ReadTls(const Reader& reader, const YAML::Node& node) {
  const std::string path = "tls_server_config";
  // exporter-toolkit serves plain HTTP for an absent or empty section.
  if (node.IsNull() || (node.IsMap() && node.size() == 0)) return std::nullopt;
  reader.RequireKeys(
      node, path,
      {.supported = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
                     "max_version"},
       .unsupported = {"cert", "key", "client_ca", "cipher_suites", "curve_preferences",
                       "prefer_server_cipher_suites", "client_allowed_sans"}});
  TlsServerConfig tls;
  for (const char* required : {"cert_file", "key_file"}) {
    if (!node[required]) {
      reader.Fail(node, path, std::string("missing required key \"") + required + "\"");
    }
  }
  tls.cert_file = reader.File(node["cert_file"], path + ".cert_file");
  tls.key_file = reader.File(node["key_file"], path + ".key_file");
  if (node["client_auth_type"]) {
    tls.client_auth = ReadClientAuth(reader, node["client_auth_type"], path + ".client_auth_type");
  }
  if (node["client_ca_file"]) {
    tls.client_ca_file = reader.File(node["client_ca_file"], path + ".client_ca_file");
  }
  const bool verifies = tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                        tls.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  if (verifies && !tls.client_ca_file) {
    reader.Fail(node["client_auth_type"], path + ".client_auth_type",
                "\"" + node["client_auth_type"].Scalar() +
                    "\" verifies client certificates and needs client_ca_file");
  }
  if (!verifies && tls.client_ca_file) {
    // A CA that verifies nothing is a configuration mistake, as exporter-toolkit says too.
    reader.Fail(node["client_ca_file"], path + ".client_ca_file",
                "is only used with client_auth_type VerifyClientCertIfGiven or "
                "RequireAndVerifyClientCert");
  }
  if (node["min_version"]) {
    tls.min_version = ReadTlsVersion(reader, node["min_version"], path + ".min_version");
  }
  if (node["max_version"]) {
    tls.max_version = ReadTlsVersion(reader, node["max_version"], path + ".max_version");
    if (*tls.max_version < tls.min_version) {
      reader.Fail(node["max_version"], path + ".max_version", "is lower than min_version");
    }
  }
  return tls;
}

// Checks the modular-crypt shape of a bcrypt hash; whether it verifies is libcrypt's business.
bool LooksLikeBcrypt(const std::string& hash) {
  static const RE2 kBcrypt(R"(\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53})", RE2::Latin1);
  return RE2::FullMatch(hash, kBcrypt);
}

std::map<std::string, std::string> ReadUsers(const Reader& reader, const YAML::Node& node) {
  const std::string path = "basic_auth_users";
  if (node.IsNull()) return {};
  if (!node.IsMap()) reader.Fail(node, path, "must map user names to bcrypt hashes");
  std::map<std::string, std::string> users;
  for (const auto& entry : node) {
    const std::string user = reader.Scalar(entry.first, path);
    const std::string user_path = path + "." + user;
    if (user.empty()) reader.Fail(entry.first, path, "a user name must not be empty");
    // RFC 7617: the user-id cannot contain a colon, so such a user could never log in.
    if (user.find(':') != std::string::npos) {
      reader.Fail(entry.first, user_path, "a user name must not contain ':'");
    }
    const std::string hash = reader.Scalar(entry.second, user_path);
    if (!LooksLikeBcrypt(hash)) {
      reader.Fail(entry.second, user_path,
                  "not a bcrypt hash (want $2a$, $2b$ or $2y$, a cost from 04 to 31 and 53 "
                  "characters of salt and hash, e.g. from `htpasswd -nBC 10 USER`)");
    }
    if (!users.emplace(user, hash).second) {
      reader.Fail(entry.first, user_path, "duplicate user");
    }
  }
  return users;
}

}  // namespace

Result<WebConfig> ParseWebConfig(std::string_view yaml_text, std::string_view source_name,
                                 std::string_view base_directory) {
  const Reader reader(source_name, base_directory);
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    WebConfig config;
    // An empty file would turn TLS and basic auth off; while running, a save that truncates the
    // file first would open that window. Plain HTTP is asked for by leaving the flag out.
    if (root.IsNull()) {
      return Error{std::string(source_name) +
                   ": the web configuration is empty (or only comments); for plain HTTP "
                   "without authentication, leave out --web.config.file"};
    }
    reader.RequireKeys(root, "",
                       {.supported = {"tls_server_config", "basic_auth_users"},
                        .unsupported = {"http_server_config", "rate_limit"}});
    if (root["tls_server_config"]) config.tls = ReadTls(reader, root["tls_server_config"]);
    if (root["basic_auth_users"])
      config.basic_auth_users = ReadUsers(reader, root["basic_auth_users"]);
    return config;
  } catch (const WebConfigProblem& problem) {
    return Error{problem.message};
  } catch (const YAML::Exception& e) {
    std::string where(source_name);
    if (e.mark.line >= 0) where += ":" + std::to_string(e.mark.line + 1);
    return Error{where + ": invalid YAML: " + e.msg};
  }
}

Result<WebConfig> LoadWebConfigFile(const std::string& path) {
  auto text = ReadBoundedFile(path, kMaxConfigFileBytes);
  if (!text) {
    return Error{path + ": cannot read the web configuration file: " + text.error().message};
  }
  return ParseWebConfig(*text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace lagsight::http
