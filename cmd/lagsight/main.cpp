// lagsight: a Prometheus exporter that tells whether a Flink job reading Kafka is really
// behind, or only looks behind because of how Flink commits offsets.
//
// This file only turns flags into app::Options; everything else lives in lib/.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/allocator.h"
#include "app/app.h"
#include "app/logging.h"
#include "http/server_security.h"
#include "trace/replay.h"

namespace {

// --trace.record, --trace.max-bytes and `lagsight replay TRACE` (lib/trace).
CLI::App* AddTraceOptions(CLI::App& cli, lagsight::app::Options& options,
                          std::string& replay_trace) {
  cli.add_option("--trace.record", options.trace_record_file,
                 "Record what the analysis is handed to this file, for a bug report (off by "
                 "default; see docs/development.md#recording-a-trace-for-a-bug-report).");
  cli.add_option("--trace.max-bytes", options.trace_max_bytes,
                 "Size at which the trace file moves to <file>.1 and a new one begins.")
      ->capture_default_str();
  CLI::App* replay = cli.add_subcommand(
      "replay", "Replay a trace (--trace.record) through the analysis and print the diagnosis.");
  replay->add_option("TRACE", replay_trace, "The trace file.")->required();
  return replay;
}

// The host name --shard=auto reads a StatefulSet pod's ordinal from.
std::string HostName() {
  if (const char* from_env = std::getenv("HOSTNAME"); from_env != nullptr) return from_env;
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) == 0) return buffer;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  lagsight::app::UseOneMallocArena();  // before any thread starts
  CLI::App cli{"lagsight: Kafka and Flink consumer lag, joined, for Prometheus."};
  lagsight::app::Options options;
  bool check_only = false;
  bool print_version = false;
  std::string log_level = "info";
  std::string log_format = "logfmt";
  cli.add_option("--config.file", options.config_file, "Path to the YAML configuration file.");
  cli.add_option("--web.listen-address", options.listen_address,
                 "Address to serve /metrics on, [host]:port.")
      ->capture_default_str();
  cli.add_option("--web.config.file", options.web_config_file,
                 "Path to a web configuration file (TLS, basic auth) in the Prometheus "
                 "exporter-toolkit format.");
  cli.add_flag("--config.check", check_only, "Validate the configuration file and exit.");
  cli.add_option("--log.level", log_level, "debug, info, warn or error.")->capture_default_str();
  cli.add_option("--log.format", log_format, "logfmt or json.")->capture_default_str();
  cli.add_flag("--version", print_version, "Print the version and exit.");
  std::string shard;
  int total_shards = 1;
  cli.add_option("--shard", shard,
                 "This instance's shard, 0 to --total-shards - 1, or \"auto\": the ordinal ending "
                 "the host name (a StatefulSet pod's name, e.g. lagsight-2).");
  cli.add_option("--total-shards", total_shards,
                 "How many instances split the consumer groups and Flink jobs between them.")
      ->capture_default_str();
  std::string replay_trace;
  CLI::App* replay = AddTraceOptions(cli, options, replay_trace);
  CLI11_PARSE(cli, argc, argv);
  if (*replay) return lagsight::trace::RunReplayCommand(replay_trace, stdout, stderr);

  if (print_version) {
    std::printf("lagsight %s (revision %s)\n", lagsight::app::kVersion, lagsight::app::kRevision);
    return 0;
  }
  if (const auto error = lagsight::app::ConfigureLogging(log_level, log_format)) {
    std::fprintf(stderr, "lagsight: %s\n", error->message.c_str());
    return 2;
  }
  {
    auto resolved = lagsight::config::ResolveShard(shard, total_shards, HostName());
    if (!resolved) {
      std::fprintf(stderr, "lagsight: %s\n", resolved.error().message.c_str());
      return 2;
    }
    options.shard = *resolved;
  }
  if (options.config_file.empty()) {
    std::fprintf(stderr,
                 "lagsight: --config.file is required (see config/lagsight.example.yaml)\n");
    return 2;
  }
  if (check_only) {
    const auto config = lagsight::app::LoadAndValidateConfig(options.config_file);
    if (!config) {
      std::fprintf(stderr, "%s\n", config.error().message.c_str());
      return 1;
    }
    std::printf("%s: valid, %zu kafka cluster(s), %zu flink cluster(s)",
                options.config_file.c_str(), config->kafka.size(), config->flink.size());
    if (!config->positions.empty())
      std::printf(", %zu position store(s)", config->positions.size());
    std::printf("\n");
    if (!options.web_config_file.empty()) {
      const auto web_config = lagsight::http::WebConfigFile::Load(options.web_config_file);
      if (!web_config) {
        std::fprintf(stderr, "%s\n", web_config.error().message.c_str());
        return 1;
      }
      std::printf("%s: valid\n", options.web_config_file.c_str());
    }
    return 0;
  }
  return lagsight::app::Run(options);
}
