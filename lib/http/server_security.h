// ServerSecurity: what --web.config.file turns into for the HTTP server — a TLS context (or
// none: plain HTTP) and the basic-auth users (or none) — and WebConfigFile, which keeps it
// current with the files on disk.
//
// Like exporter-toolkit, which reads its web config and certificates anew for each connection,
// lagsight picks up a changed web config file or certificate without a restart (e.g. a
// certificate renewed by cert-manager or certbot): each new connection first checks, by file
// status, whether the web config file or a file it names changed, and only then re-reads them.
// A change that does not load (bad YAML, a key that does not match its certificate) is logged
// once and the running settings stay: a typo must not take the exporter off the air.
// A change that weakens security (TLS or basic auth off, weaker client certificate checks, a
// lower minimum TLS version) applies only once the web config file has stood
// unchanged for a settle time: a save that truncates and rewrites the file in place (no atomic
// rename) shows a valid but partial file for a moment, and one cut before `basic_auth_users`
// would otherwise serve that moment without authentication.
// A connection keeps the settings it started with. Use on the server's thread only.
#pragma once

#include <sys/stat.h>

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "http/basic_auth.h"
#include "http/web_config.h"

namespace lagsight::http {

struct ServerSecurity {
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP
  std::shared_ptr<const BasicAuth> auth;           // null: no authentication
};

// Loads the certificates and keys `config` names; errors start with `source_name`.
Result<ServerSecurity> BuildServerSecurity(const WebConfig& config, std::string_view source_name);

class WebConfigFile {
 public:
  static constexpr std::chrono::milliseconds kWeakeningSettle{2000};

  // Reads, parses and builds; the error is what a user must fix before lagsight can start.
  // `weakening_settle`: how long a change that turns TLS or auth off must stand before it applies.
  static Result<WebConfigFile> Load(const std::string& path,
                                    std::chrono::milliseconds weakening_settle = kWeakeningSettle);

  // The settings for a new connection, re-read first when a file changed since the last check.
  const ServerSecurity& Current();

 private:
  // Status of each file (the web config first): device, inode, size, modification time.
  struct FileStatus {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};
    bool operator==(const FileStatus& other) const;
  };
  static std::vector<FileStatus> StatusOf(const std::vector<std::string>& files);
  // What `next` would weaken compared with the running settings ("" when nothing).
  std::string Weakened(const WebConfigFile& next) const;

  std::string path_;
  std::vector<std::string> watched_files_;
  std::vector<FileStatus> loaded_status_;  // of the files the running settings came from
  std::vector<FileStatus> failed_status_;  // of the last change that failed to load
  std::chrono::milliseconds weakening_settle_{kWeakeningSettle};
  std::optional<TlsServerConfig> tls_settings_;  // as parsed, for comparing with a change
  std::vector<FileStatus> held_status_;          // of a change that weakens, waiting to settle
  std::chrono::steady_clock::time_point held_since_;
  ServerSecurity current_;
};

}  // namespace lagsight::http
