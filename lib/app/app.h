// app: lagsight's entry points for cmd/: run the daemon (app/daemon.h) with the options of the
// command line, or only check a configuration file as the daemon would (--config.check).
#pragma once

#include <cstddef>
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
  // The groups and Flink jobs this instance owns (--shard, --total-shards); all by default.
  config::Shard shard;
  // --trace.record: a file to record what the analysis is handed to, for a bug report that
  // replays with `lagsight replay` (trace/trace_recorder.h); empty: no recording.
  std::string trace_record_file;
  std::size_t trace_max_bytes = 256 * 1024 * 1024;  // --trace.max-bytes, per file (two kept)
};

extern const char* const kVersion;
extern const char* const kRevision;

// Loads the configuration and checks what only the clients can check (librdkafka properties).
Result<config::Config> LoadAndValidateConfig(const std::string& path);

// Runs until SIGTERM/SIGINT; returns the process exit code.
int Run(const Options& options);

}  // namespace lagsight::app
