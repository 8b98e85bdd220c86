// app::App: the daemon. Owns the event loop, the sources, the published exposition and the
// HTTP server, and is the only place that reads the clock.
//
// One boost::asio::io_context thread runs timers, the HTTP server and all state changes; blocking
// collector calls and exposition rendering run on a small worker pool and post their results
// back. A scrape therefore only copies the latest rendered exposition and never waits on Kafka.
// SIGTERM/SIGINT stop it; SIGHUP and POST /-/reload re-read the configuration, keeping the old
// one running when the new one is invalid.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "config/config.h"

namespace lagsight::app {

struct Options {
  std::string config_file;
  std::string listen_address = ":9713";
  // exporter-toolkit web config (TLS, basic auth); empty: plain HTTP without authentication.
  std::string web_config_file;
};

extern const char* const kVersion;
extern const char* const kRevision;

// Loads the configuration and checks what only the clients can check (librdkafka properties).
Result<config::Config> LoadAndValidateConfig(const std::string& path);

// Runs until SIGTERM/SIGINT; returns the process exit code.
int Run(const Options& options);

}  // namespace lagsight::app
