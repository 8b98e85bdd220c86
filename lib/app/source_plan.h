// app::PlanSources: the sources a validated configuration runs, each with its kind and name,
// whether a running source already runs it with the same settings, and how to create it. The
// one place that knows every kind of source: a new kind is a Source implementation and one more
// loop here.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/source.h"
#include "app/validated_config.h"

namespace lagsight::app {

struct PlannedSource {
  Source::Kind kind = Source::Kind::kKafka;
  std::string name;
  // Whether `running` (a source of the same kind and name) already runs these settings.
  std::function<bool(const Source& running)> unchanged;
  // Creates the source; takes the clients `validated` made for it. Called at most once.
  std::function<std::shared_ptr<Source>()> create;
};

// What the daemon's sources run on: the event loop, the worker pool for blocking calls and the
// thread that destroys retired clients.
struct SourceContext {
  boost::asio::io_context& io;
  boost::asio::thread_pool& workers;
  boost::asio::thread_pool& retirer;
};

// `validated` must outlive the plan's `create` calls.
std::vector<PlannedSource> PlanSources(ValidatedConfig& validated, const SourceContext& context);

// Whether `running` is the Kafka source of `cluster` with the same settings (for Validate's
// IsRunning: such a cluster needs no new client).
bool RunsKafkaCluster(const Source& running, const config::KafkaClusterConfig& cluster);

}  // namespace lagsight::app
