// app::RunDaemon: the daemon's event loop around a validated configuration. Owns the sources,
// the published exposition and status page and the HTTP server, and is the only place that
// reads the clock.
//
// One boost::asio::io_context thread runs timers, the HTTP server and all state changes;
// blocking collector calls, the analysis (on a strand: one at a time, in poll order) and
// rendering run on a small worker pool and post their results back, so the loop only swaps
// published pointers and a scrape never waits on a source or an analysis. Every
// source is driven by the same loop (app::Source): poll, observe, render, next poll one interval
// after the last one started. SIGTERM/SIGINT stop it; SIGHUP and POST /-/reload re-read the
// configuration, keeping the old one running when the new one is invalid.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "app/app.h"
#include "app/validated_config.h"

namespace lagsight::app {

// Runs until SIGTERM/SIGINT; returns the process exit code. `config_text` is the text
// `initial` was validated from.
int RunDaemon(const Options& options, const boost::asio::ip::tcp::endpoint& listen_endpoint,
              std::string config_text, ValidatedConfig initial);

}  // namespace lagsight::app
