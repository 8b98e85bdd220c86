// WebConfig: the --web.config.file settings (TLS and basic auth), in the Prometheus
// exporter-toolkit format, so a file written for node_exporter works here unchanged:
//
//   tls_server_config:
//     cert_file: server.crt            # relative paths are relative to the web config file
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: clients-ca.crt
//     min_version: TLS12
//   basic_auth_users:
//     prometheus: $2b$10$...           # bcrypt hash ($2a$, $2b$ or $2y$)
//
// Parsing is strict and pure (no file is opened): an unknown key, a wrong value or a malformed
// bcrypt hash is an error naming the file, line and key. An empty (or comment-only) file is an
// error too: it would silently mean plain HTTP without authentication. Keys that exporter-toolkit
// has but lagsight does not implement are errors too ("not supported"), never silently ignored.
// Whether the certificate files load is checked when the TLS context is built (server_security.h).
// Plain data: copyable, comparable.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace lagsight::http {

// exporter-toolkit's (Go's) names for who must present a client certificate.
enum class ClientAuth {
  kNoClientCert,                // no certificate asked for
  kRequestClientCert,           // asked for, not required, not verified
  kRequireAnyClientCert,        // required, not verified
  kVerifyClientCertIfGiven,     // not required, verified against client_ca_file when sent
  kRequireAndVerifyClientCert,  // required and verified against client_ca_file
};

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

// A file named in the web config, with the line that names it (for errors found when loading).
struct ConfiguredFile {
  std::string path;  // absolute, or relative to the process's working directory
  int line = 0;

  friend bool operator==(const ConfiguredFile&, const ConfiguredFile&) = default;
};

struct TlsServerConfig {
  ConfiguredFile cert_file;  // PEM, the server certificate (chain)
  ConfiguredFile key_file;   // PEM, its private key
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  std::optional<ConfiguredFile> client_ca_file;  // PEM, CAs that client certificates must chain to
  TlsVersion min_version = TlsVersion::kTls12;
  std::optional<TlsVersion> max_version;

  friend bool operator==(const TlsServerConfig&, const TlsServerConfig&) = default;
};

struct WebConfig {
  std::optional<TlsServerConfig> tls;  // absent: plain HTTP
  // user -> bcrypt hash; empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;

  friend bool operator==(const WebConfig&, const WebConfig&) = default;
};

// `source_name` prefixes errors; relative file paths are resolved against `base_directory`
// (the web config file's directory, as exporter-toolkit does).
Result<WebConfig> ParseWebConfig(std::string_view yaml_text, std::string_view source_name,
                                 std::string_view base_directory);

// Reads (a regular file of at most kMaxConfigFileBytes) and parses the file at `path`.
Result<WebConfig> LoadWebConfigFile(const std::string& path);

}  // namespace lagsight::http
