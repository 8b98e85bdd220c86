// OwnClientSecurity (client_connections.h): librdkafka's security properties as lagsight's own
// clients apply them.
#include <algorithm>
#include <cctype>
#include <map>

#include "kafka/client_connections.h"

namespace lagsight::kafka {
namespace {

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Result<TlsOptions> TlsOf(const std::map<std::string, std::string>& properties) {
  // The TLS settings it applies as librdkafka does; any other (a PKCS#12 keystore, cipher, curve
  // or signature lists, a CRL, an engine or provider) leaves the cluster to librdkafka. These
  // are taken as they are; the last three below are read.
  static const std::map<std::string, std::string TlsOptions::*> kTexts = {
      {"ssl.ca.pem", &TlsOptions::ca_pem},
      {"ssl.certificate.location", &TlsOptions::certificate_location},
      {"ssl.certificate.pem", &TlsOptions::certificate_pem},
      {"ssl.key.location", &TlsOptions::key_location},
      {"ssl.key.pem", &TlsOptions::key_pem},
      {"ssl.key.password", &TlsOptions::key_password}};
  TlsOptions tls;
  for (const auto& [key, value] : properties) {
    const bool tls_setting = key.rfind("ssl.", 0) == 0 || key.rfind("ssl_", 0) == 0 ||
                             key == "enable.ssl.certificate.verification";
    if (!tls_setting) continue;
    if (const auto text = kTexts.find(key); text != kTexts.end()) {
      tls.*(text->second) = value;
    } else if (key == "ssl.ca.location") {
      if (Lowercase(value) == "probe") return Error{"ssl.ca.location probe"};
      tls.ca_location = value;
    } else if (key == "enable.ssl.certificate.verification") {
      const std::string flag = Lowercase(value);
      if (flag != "true" && flag != "false") return Error{key + " " + value};
      tls.verify_certificate = flag == "true";
    } else if (key == "ssl.endpoint.identification.algorithm") {
      const std::string algorithm = Lowercase(value);
      if (algorithm != "https" && algorithm != "none") return Error{key + " " + value};
      tls.verify_host_name = algorithm == "https";
    } else {
      return Error{key + " (not applied by lagsight's own clients)"};
    }
  }
  return tls;
}

// SASL/PLAIN with its user name and password; any other mechanism (librdkafka's default is
// GSSAPI) is left to librdkafka. Other sasl.* settings belong to other mechanisms: librdkafka
// ignores them with PLAIN, and so do these clients.
Result<SaslPlainCredentials> SaslPlainOf(const std::map<std::string, std::string>& properties) {
  const auto setting = [&](const char* key) -> const std::string* {
    const auto found = properties.find(key);
    return found == properties.end() ? nullptr : &found->second;
  };
  const std::string* mechanism = setting("sasl.mechanisms");
  if (mechanism == nullptr) mechanism = setting("sasl.mechanism");
  const std::string name = mechanism == nullptr ? "GSSAPI" : *mechanism;
  if (Lowercase(name) != "plain") {
    return Error{"SASL mechanism " + name + " (lagsight's own clients speak PLAIN only)"};
  }
  const std::string* username = setting("sasl.username");
  const std::string* password = setting("sasl.password");
  if (username == nullptr || password == nullptr) {
    return Error{"SASL/PLAIN without sasl.username and sasl.password"};
  }
  return SaslPlainCredentials{*username, *password};
}

}  // namespace

Result<ClientSecurity> OwnClientSecurity(const std::map<std::string, std::string>& properties) {
  const auto protocol = properties.find("security.protocol");
  const std::string name = protocol == properties.end() ? "plaintext" : Lowercase(protocol->second);
  ClientSecurity security;
  if (name == "plaintext") return security;
  if (name != "ssl" && name != "sasl_plaintext" && name != "sasl_ssl") {
    return Error{"security.protocol " + protocol->second};
  }
  if (name == "ssl" || name == "sasl_ssl") {
    auto tls = TlsOf(properties);
    if (!tls) return tls.error();
    security.tls = std::move(tls).value();
  }
  if (name == "sasl_plaintext" || name == "sasl_ssl") {
    auto sasl = SaslPlainOf(properties);
    if (!sasl) return sasl.error();
    security.sasl_plain = std::move(sasl).value();
  }
  return security;
}

}  // namespace lagsight::kafka
