#include "http/server_security.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include "common/bounded_file.h"

namespace lagsight::http {
namespace {

namespace ssl = boost::asio::ssl;

int OpenSslVersion(TlsVersion version) {
  switch (version) {
    case TlsVersion::kTls10:
      return TLS1_VERSION;
    case TlsVersion::kTls11:
      return TLS1_1_VERSION;
    case TlsVersion::kTls12:
      return TLS1_2_VERSION;
    case TlsVersion::kTls13:
      return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

std::string Describe(std::string_view source, const ConfiguredFile& file, std::string_view key) {
  return std::string(source) + ":" + std::to_string(file.line) + ": tls_server_config." +
         std::string(key);
}

// Errors for a file that cannot be opened say so plainly; OpenSSL's own reason otherwise.
// Through the bounded reader: opening a FIFO with an ifstream blocked the server thread.
std::optional<Error> CheckReadable(std::string_view source, const ConfiguredFile& file,
                                   std::string_view key) {
  const auto content = ReadBoundedFile(file.path, kMaxConfigFileBytes);
  if (content) return std::nullopt;
  return Error{Describe(source, file, key) + ": cannot read \"" + file.path +
               "\": " + content.error().message};
}

Error KeyMismatch(std::string_view source, const TlsServerConfig& tls) {
  return Error{Describe(source, tls.key_file, "key_file") + ": the private key \"" +
               tls.key_file.path + "\" does not belong to the certificate \"" + tls.cert_file.path +
               "\""};
}

Result<std::shared_ptr<ssl::context>> BuildTlsContext(const TlsServerConfig& tls,
                                                      std::string_view source) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::single_dh_use);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, OpenSslVersion(tls.min_version));
  if (tls.max_version) SSL_CTX_set_max_proto_version(native, OpenSslVersion(*tls.max_version));

  boost::system::error_code error;
  if (auto unreadable = CheckReadable(source, tls.cert_file, "cert_file")) return *unreadable;
  context->use_certificate_chain_file(tls.cert_file.path, error);
  if (error) {
    return Error{Describe(source, tls.cert_file, "cert_file") + ": cannot load the certificate \"" +
                 tls.cert_file.path + "\": " + error.message()};
  }
  if (auto unreadable = CheckReadable(source, tls.key_file, "key_file")) return *unreadable;
  context->use_private_key_file(tls.key_file.path, ssl::context::pem, error);
  if (error && error.category() == boost::asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(error.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return KeyMismatch(source, tls);
  }
  if (error) {
    return Error{Describe(source, tls.key_file, "key_file") + ": cannot load the private key \"" +
                 tls.key_file.path + "\": " + error.message()};
  }
  if (SSL_CTX_check_private_key(native) != 1) return KeyMismatch(source, tls);

  if (tls.client_ca_file) {
    const ConfiguredFile& ca = *tls.client_ca_file;
    if (auto unreadable = CheckReadable(source, ca, "client_ca_file")) return *unreadable;
    context->load_verify_file(ca.path, error);
    if (error) {
      return Error{Describe(source, ca, "client_ca_file") + ": cannot load CA certificates \"" +
                   ca.path + "\": " + error.message()};
    }
    // Tells clients which CAs are accepted, so they pick the right certificate to send.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca.path.c_str())) {
      SSL_CTX_set_client_CA_list(native, names);
    }
  }
  const auto accept_any = [](bool, ssl::verify_context&) { return true; };
  switch (tls.client_auth) {
    case ClientAuth::kNoClientCert:
      context->set_verify_mode(ssl::verify_none);
      break;
    case ClientAuth::kRequestClientCert:
      context->set_verify_mode(ssl::verify_peer);
      context->set_verify_callback(accept_any);
      break;
    case ClientAuth::kRequireAnyClientCert:
      context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      context->set_verify_callback(accept_any);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      context->set_verify_mode(ssl::verify_peer);
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      break;
  }
  // OpenSSL refuses to resume sessions of a verifying server without a session id context.
  static constexpr unsigned char kSessionContext[] = "lagsight";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
  return context;
}

}  // namespace

Result<ServerSecurity> BuildServerSecurity(const WebConfig& config, std::string_view source_name) {
  ServerSecurity security;
  if (config.tls) {
    auto context = BuildTlsContext(*config.tls, source_name);
    if (!context) return context.error();
    security.tls = std::move(context).value();
  }
  if (!config.basic_auth_users.empty()) {
    security.auth = std::make_shared<const BasicAuth>(config.basic_auth_users);
  }
  return security;
}

bool WebConfigFile::FileStatus::operator==(const FileStatus& other) const {
  return exists == other.exists && device == other.device && inode == other.inode &&
         size == other.size && modified.tv_sec == other.modified.tv_sec &&
         modified.tv_nsec == other.modified.tv_nsec;
}

std::vector<WebConfigFile::FileStatus> WebConfigFile::StatusOf(
    const std::vector<std::string>& files) {
  std::vector<FileStatus> out;
  for (const std::string& file : files) {
    struct stat info {};
    FileStatus status;
    // stat() follows symbolic links: a Kubernetes Secret volume swaps a link on update.
    if (::stat(file.c_str(), &info) == 0) {
      status = {true, info.st_dev, info.st_ino, info.st_size, info.st_mtim};
    }
    out.push_back(status);
  }
  return out;
}

namespace {

std::vector<std::string> FilesNamedBy(const std::string& path, const WebConfig& config) {
  std::vector<std::string> files{path};
  if (config.tls) {
    files.push_back(config.tls->cert_file.path);
    files.push_back(config.tls->key_file.path);
    if (config.tls->client_ca_file) files.push_back(config.tls->client_ca_file->path);
  }
  return files;
}

}  // namespace

Result<WebConfigFile> WebConfigFile::Load(const std::string& path,
                                          std::chrono::milliseconds weakening_settle) {
  // Status first: a file changed while it is read is then read again on the next check.
  const auto web_config_status = StatusOf({path});
  auto config = LoadWebConfigFile(path);
  if (!config) return config.error();
  WebConfigFile file;
  file.path_ = path;
  file.weakening_settle_ = weakening_settle;
  file.tls_settings_ = config->tls;
  file.watched_files_ = FilesNamedBy(path, *config);
  file.loaded_status_ = StatusOf(file.watched_files_);
  file.loaded_status_.front() = web_config_status.front();
  auto security = BuildServerSecurity(*config, path);
  if (!security) return security.error();
  file.current_ = std::move(security).value();
  return file;
}

namespace {

// How much a client certificate is asked of: 0 none, 1 checked when given or required
// unchecked, 2 required and checked.
int ClientCertStrength(ClientAuth auth) {
  switch (auth) {
    case ClientAuth::kNoClientCert:
    case ClientAuth::kRequestClientCert:
      return 0;
    case ClientAuth::kVerifyClientCertIfGiven:
    case ClientAuth::kRequireAnyClientCert:
      return 1;
    case ClientAuth::kRequireAndVerifyClientCert:
      return 2;
  }
  return 0;
}

}  // namespace

std::string WebConfigFile::Weakened(const WebConfigFile& next) const {
  std::vector<std::string> what;
  if (current_.tls && !next.current_.tls) what.push_back("TLS (off)");
  if (current_.auth && !next.current_.auth) what.push_back("basic auth (off)");
  if (tls_settings_ && next.tls_settings_) {
    if (ClientCertStrength(next.tls_settings_->client_auth) <
        ClientCertStrength(tls_settings_->client_auth)) {
      what.push_back("client certificate checks");
    }
    if (next.tls_settings_->min_version < tls_settings_->min_version) {
      what.push_back("the minimum TLS version");
    }
  }
  std::string joined;
  for (const std::string& item : what) joined += (joined.empty() ? "" : ", ") + item;
  return joined;
}

const ServerSecurity& WebConfigFile::Current() {
  const auto status = StatusOf(watched_files_);
  if (status == loaded_status_ || status == failed_status_) return current_;
  auto reloaded = Load(path_, weakening_settle_);
  if (!reloaded) {
    spdlog::error("web config: keeping the running TLS and authentication settings: {}",
                  reloaded.error().message);
    failed_status_ = status;
    return current_;
  }
  const std::string weakened = Weakened(*reloaded);
  if (!weakened.empty()) {
    const auto now = std::chrono::steady_clock::now();
    if (held_status_ != status) {  // a new change, or the file moved on: its clock starts now
      held_status_ = status;
      held_since_ = now;
      spdlog::warn(
          "web config: {} weakens {}; applying it once the file has stood unchanged for {} ms",
          path_, weakened, weakening_settle_.count());
      return current_;
    }
    if (now - held_since_ < weakening_settle_) return current_;
  }
  spdlog::info("web config: re-read {} (TLS {}, basic auth {})", path_,
               reloaded->current_.tls ? "on" : "off", reloaded->current_.auth ? "on" : "off");
  *this = std::move(reloaded).value();
  return current_;
}

}  // namespace lagsight::http
