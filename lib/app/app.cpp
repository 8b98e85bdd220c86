#include "app/app.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/analyzer.h"
#include "analysis/flink_join.h"
#include "analysis/kafka_lag.h"
#include "analysis/offset_regressions.h"
#include "common/bounded_file.h"
#include "flink/collector.h"
#include "http/gzip.h"
#include "http/listen_address.h"
#include "http/server.h"
#include "kafka/collector.h"
#include "kafka/rdkafka_admin.h"
#include "metrics/findings_metrics.h"
#include "metrics/flink_metrics.h"
#include "metrics/kafka_metrics.h"
#include "metrics/process_metrics.h"
#include "status/status_page.h"

namespace lagsight::app {

const char* const kVersion = LAGSIGHT_VERSION;
const char* const kRevision = LAGSIGHT_REVISION;

namespace {

namespace asio = boost::asio;

// How long a shutdown may wait for polls in flight and for Kafka clients to close. A librdkafka
// call or rd_kafka_destroy() cannot be interrupted and can block far longer than this (a
// bootstrap list that mixes two clusters kept a client busy past a 10 s SIGTERM budget);
// Kubernetes sends SIGKILL after 30 s by default, so lagsight exits on its own terms first.
constexpr std::chrono::seconds kShutdownGrace{5};
using SteadyClock = std::chrono::steady_clock;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<std::string> ReadFile(const std::string& path) {
  auto text = ReadBoundedFile(path, kMaxConfigFileBytes);
  if (!text) return Error{path + ": cannot read the configuration file: " + text.error().message};
  return text;
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63],
            kAlphabet[n & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned n = static_cast<unsigned char>(in[i]) << 16;
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned n =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

// Parses the text and creates the client of every Kafka cluster `is_running` does not already
// run with the same settings; creating it is where librdkafka checks the properties. Returns the
// new clients so the reload that validated them uses them, instead of connecting twice.
struct ValidatedConfig {
  config::Config config;
  std::map<std::string, std::unique_ptr<kafka::RdKafkaAdmin>> admins;
};

flink::HttpClientOptions HttpOptions(const config::FlinkClusterConfig& cluster) {
  flink::HttpClientOptions options;
  options.base_url = cluster.rest_url;
  options.timeout = cluster.request_timeout;
  options.max_body_bytes = cluster.max_response_bytes;
  options.max_in_flight = cluster.max_concurrent_requests;
  options.ca_file = cluster.tls_ca_file;
  options.cert_file = cluster.tls_cert_file;
  options.key_file = cluster.tls_key_file;
  options.insecure_skip_verify = cluster.tls_insecure_skip_verify;
  if (!cluster.bearer_token.empty()) {
    options.authorization = "Bearer " + cluster.bearer_token;
  } else if (!cluster.username.empty()) {
    options.authorization = "Basic " + Base64(cluster.username + ":" + cluster.password);
  }
  return options;
}

using IsRunning = std::function<bool(const config::KafkaClusterConfig&)>;

Result<ValidatedConfig> Validate(
    const std::string& text, const std::string& path,
    const IsRunning& is_running = [](const auto&) { return false; }) {
  auto parsed = config::ParseConfig(text, path, config::ProcessEnvironment());
  if (!parsed) return parsed.error();
  ValidatedConfig validated{std::move(parsed).value(), {}};
  for (const config::KafkaClusterConfig& cluster : validated.config.kafka) {
    if (is_running(cluster)) continue;
    auto admin = kafka::RdKafkaAdmin::Create(cluster);
    if (!admin) return Error{path + ": " + admin.error().message};
    validated.admins[cluster.name] = std::move(admin).value();
  }
  // The TLS files are loaded here, so --config.check reports an unreadable CA or key.
  asio::io_context scratch;
  for (const config::FlinkClusterConfig& cluster : validated.config.flink) {
    auto client = flink::HttpClient::Create(scratch.get_executor(), HttpOptions(cluster));
    if (!client)
      return Error{path + ": flink cluster \"" + cluster.name + "\": " + client.error().message};
  }
  return validated;
}

// A source's polling state and health, and the one way they change after a poll.
struct SourceHealth {
  bool polling = false;
  bool polled_once = false;
  metrics::PollStatus status;
  std::string last_error;

  // Counts the poll and logs transitions: each new problem once at warn, its repetitions at
  // debug (the metrics show them), and the recovery at info.
  void Record(std::string_view kind, const std::string& name, const std::string* error,
              double seconds) {
    const bool was_up = status.up || !polled_once;
    polling = false;
    polled_once = true;
    status.polls_total++;
    status.last_duration_seconds = seconds;
    if (error == nullptr) {
      if (!status.up && status.polls_total > 1)
        spdlog::info("{} cluster \"{}\": polled successfully again", kind, name);
      status.up = true;
      status.last_success_unix_seconds = UnixNow();
      last_error.clear();
      return;
    }
    status.up = false;
    status.poll_failures_total++;
    spdlog::log(was_up || *error != last_error ? spdlog::level::warn : spdlog::level::debug,
                "{} cluster \"{}\": poll failed: {}", kind, name, *error);
    last_error = *error;
  }
};

class Daemon {
 public:
  Daemon(Options options, asio::ip::tcp::endpoint listen_endpoint)
      : options_(std::move(options)),
        listen_endpoint_(listen_endpoint),
        workers_(4),
        signals_(io_, SIGINT, SIGTERM, SIGHUP),
        server_(io_,
                http::Endpoints{[this] { return exposition_; }, [this] { return Readiness(); },
                                [this] { return Reload(); }, [this] { return status_page_; },
                                [this] { return exposition_gzip_; }},
                {}, options_.web_config_file) {}

  int Run(std::string config_text, ValidatedConfig initial) {
    if (const auto error = server_.Listen(listen_endpoint_)) {
      spdlog::error("{}", error->message);
      return 1;
    }
    const auto bound = server_.local_endpoint();
    spdlog::info("lagsight {} ({}) listening on {}:{}", kVersion, kRevision,
                 bound.address().to_string(), bound.port());
    Apply(std::move(config_text), std::move(initial));
    WaitForSignal();
    io_.run();
    spdlog::info("waiting for polls in flight to finish");
    workers_.join();
    retirer_.join();
    sources_.clear();
    spdlog::info("stopped");
    return 0;
  }

 private:
  struct KafkaSource {
    KafkaSource(asio::io_context& io, const config::KafkaClusterConfig& cluster_config,
                std::unique_ptr<kafka::RdKafkaAdmin> admin)
        : config(cluster_config),
          collector(std::make_shared<kafka::Collector>(cluster_config, std::move(admin))),
          timer(io) {}

    config::KafkaClusterConfig config;
    std::shared_ptr<kafka::Collector> collector;
    asio::steady_timer timer;
    SourceHealth health;
    std::size_t last_partial_errors = 0;
    // Kept across polls and reloads; entries of vanished groups or partitions are dropped.
    std::shared_ptr<const metrics::OffsetRegressionCounts> regressions =
        std::make_shared<const metrics::OffsetRegressionCounts>();
    std::shared_ptr<const kafka::KafkaSnapshot> snapshot;  // null while the cluster is down
    std::shared_ptr<const std::vector<analysis::GroupLag>> lags;
  };

  struct FlinkSource {
    FlinkSource(asio::io_context& io, const config::FlinkClusterConfig& cluster_config)
        : config(cluster_config),
          collector(std::make_shared<flink::Collector>(
              cluster_config,
              std::move(flink::HttpClient::Create(io.get_executor(), HttpOptions(cluster_config)))
                  .value())),
          timer(io) {}

    config::FlinkClusterConfig config;
    std::shared_ptr<flink::Collector> collector;
    asio::steady_timer timer;
    SourceHealth health;
    std::shared_ptr<const flink::FlinkSnapshot> snapshot;  // null while the REST API is down
  };

  void WaitForSignal() {
    signals_.async_wait([this](const boost::system::error_code& error, int signal) {
      if (error) return;
      if (signal == SIGHUP) {
        spdlog::info("SIGHUP: reloading {}", options_.config_file);
        Reload();
        WaitForSignal();
        return;
      }
      spdlog::info("signal {}: shutting down", signal);
      Shutdown();
    });
  }

  void Shutdown() {
    stopping_ = true;
    // Nothing lagsight holds needs saving: after the grace period the exit is as good as a
    // clean one, and it does not leave an orchestrator waiting to kill the process.
    // The logger is held by value: if exit() outlasts the grace, spdlog's registry may be gone.
    std::thread([logger = spdlog::default_logger()] {
      std::this_thread::sleep_for(kShutdownGrace);
      logger->warn("shutdown did not finish within {}s (a Kafka call still running); exiting now",
                   kShutdownGrace.count());
      logger->flush();
      std::_Exit(0);
    }).detach();
    server_.Stop();
    for (auto& [name, source] : sources_) source->timer.cancel();
    for (auto& [name, source] : flink_sources_) source->timer.cancel();
    io_.stop();
  }

  // Replaces the running sources with those of `validated`; a cluster whose settings did not
  // change keeps its client, connections and health counters.
  void Apply(std::string config_text, ValidatedConfig validated) {
    std::map<std::string, std::shared_ptr<KafkaSource>> next;
    for (const config::KafkaClusterConfig& cluster : validated.config.kafka) {
      const auto existing = sources_.find(cluster.name);
      if (existing != sources_.end() && existing->second->config == cluster) {
        next[cluster.name] = existing->second;
        continue;
      }
      auto source =
          std::make_shared<KafkaSource>(io_, cluster, std::move(validated.admins.at(cluster.name)));
      if (existing != sources_.end()) {
        // Changed settings: counters go on, and the last data is served until the new
        // settings' first poll replaces it, so a reload does not blank the cluster's series.
        source->health = existing->second->health;
        source->health.polling = false;
        source->snapshot = existing->second->snapshot;
        source->lags = existing->second->lags;
        source->regressions = existing->second->regressions;
      }
      next[cluster.name] = source;
      StartPoll(source);
    }
    for (auto& [name, source] : sources_) {
      if (next.contains(name) && next[name] == source) continue;
      source->timer.cancel();
      // Destroying a librdkafka client waits for its threads: off the event loop, and not
      // queued behind polls. A poll in flight holds the client and releases it when it ends.
      asio::post(retirer_, [retired = std::move(source->collector)] {});
    }
    sources_ = std::move(next);

    std::map<std::string, std::shared_ptr<FlinkSource>> next_flink;
    for (const config::FlinkClusterConfig& cluster : validated.config.flink) {
      const auto existing = flink_sources_.find(cluster.name);
      if (existing != flink_sources_.end() && existing->second->config == cluster) {
        next_flink[cluster.name] = existing->second;
        continue;
      }
      auto source = std::make_shared<FlinkSource>(io_, cluster);
      if (existing != flink_sources_.end()) {
        source->health = existing->second->health;
        source->health.polling = false;
        source->snapshot = existing->second->snapshot;
      }
      next_flink[cluster.name] = source;
      StartFlinkPoll(source);
    }
    for (auto& [name, source] : flink_sources_) {
      if (!next_flink.contains(name) || next_flink[name] != source) source->timer.cancel();
    }
    flink_sources_ = std::move(next_flink);
    analyzer_.SetConfig(validated.config.diagnosis);
    std::set<std::string> kafka_names;
    std::set<std::string> flink_names;
    for (const auto& [name, source] : sources_) kafka_names.insert(name);
    for (const auto& [name, source] : flink_sources_) flink_names.insert(name);
    analyzer_.Retain(kafka_names, flink_names);
    loaded_config_text_ = std::move(config_text);
    last_reload_successful_ = true;
    last_reload_success_time_ = UnixNow();
    RequestRender();
  }

  std::optional<std::string> Reload() {
    auto text = ReadFile(options_.config_file);
    std::optional<std::string> failure;
    if (!text) {
      failure = text.error().message;
    } else if (*text == loaded_config_text_) {
      spdlog::info("configuration unchanged; nothing to reload");
      return std::nullopt;
    } else if (auto validated = Validate(
                   *text, options_.config_file, [this](const config::KafkaClusterConfig& cluster) {
                     const auto running = sources_.find(cluster.name);
                     return running != sources_.end() && running->second->config == cluster;
                   })) {
      Apply(std::move(text).value(), std::move(validated).value());
      spdlog::info("configuration reloaded: {} kafka cluster(s)", sources_.size());
      return std::nullopt;
    } else {
      failure = validated.error().message;
    }
    spdlog::error("configuration reload failed, keeping the running configuration: {}", *failure);
    last_reload_successful_ = false;
    RequestRender();
    return failure;
  }

  void StartPoll(const std::shared_ptr<KafkaSource>& source) {
    if (stopping_) return;
    if (source->health.polling) {
      spdlog::warn("kafka cluster \"{}\": the previous poll is still running; skipping this one",
                   source->config.name);
      ScheduleNextPoll(source, SteadyClock::now() + source->config.poll_interval);
      return;
    }
    source->health.polling = true;
    const auto started = SteadyClock::now();
    // Only a weak reference while queued: a reload storm must not keep every replaced client
    // (threads, sockets) alive until its turn comes, just to poll a cluster no one reads.
    asio::post(workers_, [this, source, weak_collector = std::weak_ptr(source->collector), started,
                          flink_reads = FlinkReads(), previous = source->snapshot] {
      const auto collector = weak_collector.lock();
      if (!collector) return;  // replaced by a reload before its turn
      auto polled = collector->Poll(flink_reads);
      std::shared_ptr<const kafka::KafkaSnapshot> snapshot;
      std::shared_ptr<const std::vector<analysis::GroupLag>> lags;
      std::vector<analysis::OffsetRegression> regressions;
      std::string error;
      if (polled) {
        snapshot = std::make_shared<const kafka::KafkaSnapshot>(std::move(polled).value());
        lags = std::make_shared<const std::vector<analysis::GroupLag>>(
            analysis::ComputeGroupLags(*snapshot));
        if (previous) regressions = analysis::FindOffsetRegressions(*previous, *snapshot);
      } else {
        error = polled.error().message;
      }
      const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
      asio::post(io_, [this, source, snapshot, lags, regressions = std::move(regressions), error,
                       seconds, started] {
        OnPollDone(source, snapshot, lags, regressions, error, seconds, started);
      });
    });
  }

  void OnPollDone(const std::shared_ptr<KafkaSource>& source,
                  std::shared_ptr<const kafka::KafkaSnapshot> snapshot,
                  std::shared_ptr<const std::vector<analysis::GroupLag>> lags,
                  const std::vector<analysis::OffsetRegression>& regressions,
                  const std::string& error, double seconds, SteadyClock::time_point started) {
    const std::string& name = source->config.name;
    source->health.Record("kafka", name, snapshot ? nullptr : &error, seconds);
    if (snapshot) {
      if (snapshot->partial_errors.size() != source->last_partial_errors) {
        for (const std::string& partial : snapshot->partial_errors) {
          spdlog::warn("kafka cluster \"{}\": {}", name, partial);
        }
      }
      source->last_partial_errors = snapshot->partial_errors.size();
      spdlog::debug("kafka cluster \"{}\": polled {} groups in {:.3f}s", name,
                    snapshot->groups.size(), seconds);
      source->regressions = CountRegressions(*source->regressions, regressions, *snapshot);
    }
    source->snapshot = std::move(snapshot);
    source->lags = std::move(lags);
    const auto current = sources_.find(name);
    if (current == sources_.end() || current->second != source) return;  // removed by a reload
    findings_ = analyzer_.ObserveKafka(name, regressions, View(), UnixNow());
    ScheduleNextPoll(source, started + source->config.poll_interval);
    RequestRender();
  }

  static std::shared_ptr<const metrics::OffsetRegressionCounts> CountRegressions(
      const metrics::OffsetRegressionCounts& counted,
      const std::vector<analysis::OffsetRegression>& found, const kafka::KafkaSnapshot& current) {
    auto next = std::make_shared<metrics::OffsetRegressionCounts>();
    for (const kafka::ConsumerGroup& group : current.groups) {
      for (const auto& [tp, offset] : group.committed) {
        const auto existing = counted.find({group.id, tp});
        if (existing != counted.end()) next->emplace(existing->first, existing->second);
      }
    }
    for (const analysis::OffsetRegression& regression : found) {
      spdlog::info("kafka group \"{}\" {}/{}: committed offset went back from {} to {}",
                   regression.group, regression.partition.topic, regression.partition.partition,
                   regression.from, regression.to);
      ++(*next)[{regression.group, regression.partition}];
    }
    return next;
  }

  // The latest state of every source, for the analyzer (valid while the sources are).
  analysis::SourcesView View() const {
    analysis::SourcesView view;
    for (const auto& [name, source] : sources_) {
      view.kafka[name] = {source->snapshot.get(), source->lags.get()};
    }
    for (const auto& [name, source] : flink_sources_) {
      view.flink[name] = {&source->config, source->snapshot.get()};
    }
    return view;
  }

  // What the Flink jobs read, as their metric ids name it. Every Flink cluster's: a mapping may
  // send one job to another Kafka cluster than its Flink cluster's.
  kafka::FlinkReads FlinkReads() const {
    kafka::FlinkReads reads;
    for (const auto& [name, source] : flink_sources_) {
      if (!source->snapshot) continue;
      for (const flink::FlinkJob& job : source->snapshot->jobs) {
        for (const flink::SourceReader& reader : job.sources) {
          for (const auto& [tp, offsets] : reader.partitions) {
            reads.escaped_topics.insert(tp.escaped_topic);
            if (offsets.current && *offsets.current < std::numeric_limits<std::int64_t>::max()) {
              reads.positions.emplace(tp.escaped_topic, tp.partition, *offsets.current + 1);
            }
          }
        }
      }
    }
    return reads;
  }

  void StartFlinkPoll(const std::shared_ptr<FlinkSource>& source) {
    if (stopping_ || source->health.polling) return;
    source->health.polling = true;
    asio::co_spawn(
        io_,
        [this, source, collector = source->collector]() -> asio::awaitable<void> {
          const auto started = SteadyClock::now();
          auto polled = co_await collector->Poll();
          const double seconds =
              std::chrono::duration<double>(SteadyClock::now() - started).count();
          OnFlinkPollDone(source, std::move(polled), seconds, started);
        },
        asio::detached);
  }

  void OnFlinkPollDone(const std::shared_ptr<FlinkSource>& source,
                       Result<flink::FlinkSnapshot> polled, double seconds,
                       SteadyClock::time_point started) {
    const std::string& name = source->config.name;
    source->health.Record("flink", name, polled ? nullptr : &polled.error().message, seconds);
    if (polled) {
      for (const std::string& partial : polled->partial_errors) {
        spdlog::debug("flink cluster \"{}\": {}", name, partial);
      }
      source->snapshot = std::make_shared<const flink::FlinkSnapshot>(std::move(polled).value());
    } else {
      source->snapshot.reset();
    }
    const auto current = flink_sources_.find(name);
    if (stopping_ || current == flink_sources_.end() || current->second != source) return;
    findings_ = analyzer_.ObserveFlink(name, View(), UnixNow());
    source->timer.expires_at(std::max(started + source->config.poll_interval, SteadyClock::now()));
    source->timer.async_wait([this, source](const boost::system::error_code& error) {
      if (!error) StartFlinkPoll(source);
    });
    RequestRender();
  }

  void ScheduleNextPoll(const std::shared_ptr<KafkaSource>& source, SteadyClock::time_point when) {
    if (stopping_) return;
    source->timer.expires_at(std::max(when, SteadyClock::now()));
    source->timer.async_wait([this, source](const boost::system::error_code& error) {
      if (!error) StartPoll(source);
    });
  }

  // Renders the exposition on a worker from immutable inputs; a newer render always wins.
  void RequestRender() {
    struct Input {
      std::string name;
      metrics::PollStatus status;
      std::shared_ptr<const kafka::KafkaSnapshot> snapshot;
      std::shared_ptr<const std::vector<analysis::GroupLag>> lags;
      std::shared_ptr<const metrics::OffsetRegressionCounts> regressions;
    };
    struct FlinkInput {
      config::FlinkClusterConfig config;
      metrics::PollStatus status;
      std::shared_ptr<const flink::FlinkSnapshot> snapshot;
    };
    std::vector<Input> inputs;
    for (const auto& [name, source] : sources_) {
      if (!source->health.polled_once) continue;  // nothing known yet: /readyz says so
      inputs.push_back(
          {name, source->health.status, source->snapshot, source->lags, source->regressions});
    }
    std::vector<FlinkInput> flink_inputs;
    for (const auto& [name, source] : flink_sources_) {
      if (!source->health.polled_once) continue;
      flink_inputs.push_back({source->config, source->health.status, source->snapshot});
    }
    const std::uint64_t generation = ++render_generation_;
    asio::post(workers_, [this, inputs = std::move(inputs), flink_inputs = std::move(flink_inputs),
                          findings = findings_, now = UnixNow(), generation,
                          reload_ok = last_reload_successful_,
                          reload_time = last_reload_success_time_, sources = SourceStatuses(),
                          connections = server_.connection_counts()] {
      metrics::FamilyBuilder builder;
      metrics::AppendProcessMetrics(kVersion, kRevision, reload_ok, reload_time, builder);
      metrics::AppendHttpConnectionMetrics(connections.shed_for_same_client,
                                           connections.shed_for_any_client, connections.refused,
                                           builder);
      for (const Input& input : inputs) {
        metrics::AppendKafkaMetrics(input.name, input.status, input.snapshot.get(),
                                    input.lags.get(), input.regressions.get(), builder);
      }
      static const std::vector<analysis::FlinkSourceJoin> kNoJoins;
      for (const FlinkInput& input : flink_inputs) {
        const auto joined = findings->flink.find(input.config.name);
        const auto& joins =
            input.snapshot && joined != findings->flink.end() ? joined->second.joins : kNoJoins;
        metrics::AppendFlinkMetrics(input.config.name, input.status, input.snapshot.get(), joins,
                                    now, builder);
      }
      metrics::AppendFindingsMetrics(*findings, builder);
      auto text =
          std::make_shared<const std::string>(metrics::Serialize(std::move(builder).Build()));
      // Once per render, not per scrape: Prometheus asks for gzip every time. An exception
      // escaping a pool handler would end the process: without a compressed form the
      // scrape gets the text.
      std::shared_ptr<const std::string> gzipped;
      try {
        gzipped = std::make_shared<const std::string>(http::Gzip(*text));
      } catch (const std::exception& error) {
        spdlog::warn("gzip of the exposition failed, serving it uncompressed: {}", error.what());
      }
      auto page = std::make_shared<const std::string>(
          status::RenderStatusPage(*findings, sources, kVersion, now));
      asio::post(io_, [this, text = std::move(text), gzipped = std::move(gzipped),
                       page = std::move(page), generation] {
        if (generation < published_generation_) return;
        published_generation_ = generation;
        exposition_ = text;
        exposition_gzip_ = gzipped;
        status_page_ = page;
      });
    });
  }

  // Every configured source, polled or not, for the status page.
  std::vector<status::SourceStatus> SourceStatuses() const {
    std::vector<status::SourceStatus> out;
    const auto add = [&out](status::SourceStatus::Kind kind, const std::string& name,
                            const SourceHealth& health) {
      out.push_back({kind, name, health.polled_once, health.status.up,
                     health.status.last_success_unix_seconds, health.last_error});
    };
    for (const auto& [name, source] : sources_) {
      add(status::SourceStatus::Kind::kKafka, name, source->health);
    }
    for (const auto& [name, source] : flink_sources_) {
      add(status::SourceStatus::Kind::kFlink, name, source->health);
    }
    return out;
  }

  http::Readiness Readiness() const {
    std::string waiting;
    for (const auto& [name, source] : sources_) {
      if (!source->health.polled_once) waiting += (waiting.empty() ? "kafka " : ", kafka ") + name;
    }
    for (const auto& [name, source] : flink_sources_) {
      if (!source->health.polled_once) waiting += (waiting.empty() ? "flink " : ", flink ") + name;
    }
    if (sources_.empty()) return {false, "no sources configured"};
    if (!waiting.empty()) return {false, "waiting for the first poll of " + waiting};
    return {true, ""};
  }

  Options options_;
  asio::ip::tcp::endpoint listen_endpoint_;
  asio::io_context io_;
  asio::thread_pool workers_;     // joined in Run() before anything it uses is destroyed
  asio::thread_pool retirer_{1};  // destroys the clients of replaced sources
  asio::signal_set signals_;
  http::Server server_;
  std::map<std::string, std::shared_ptr<KafkaSource>> sources_;
  std::map<std::string, std::shared_ptr<FlinkSource>> flink_sources_;
  std::string loaded_config_text_;
  bool last_reload_successful_ = false;
  double last_reload_success_time_ = 0;
  bool stopping_ = false;
  std::uint64_t render_generation_ = 0;
  std::uint64_t published_generation_ = 0;
  std::shared_ptr<const std::string> exposition_ = std::make_shared<const std::string>();
  std::shared_ptr<const std::string> exposition_gzip_;  // null until the first render
  std::shared_ptr<const std::string> status_page_;      // null: the router serves its landing page
  // History and derived findings; touched only on the event loop thread, after each poll.
  analysis::Analyzer analyzer_{config::DiagnosisConfig{}};
  std::shared_ptr<const analysis::Findings> findings_ = std::make_shared<analysis::Findings>();
};

}  // namespace

Result<config::Config> LoadAndValidateConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return text.error();
  auto validated = Validate(*text, path);
  if (!validated) return validated.error();
  return std::move(validated).value().config;
}

int Run(const Options& options) {
  auto endpoint = http::ParseListenAddress(options.listen_address);
  if (!endpoint) {
    spdlog::error("--web.listen-address: {}", endpoint.error().message);
    return 2;
  }
  auto text = ReadFile(options.config_file);
  if (!text) {
    spdlog::error("{}", text.error().message);
    return 1;
  }
  auto validated = Validate(*text, options.config_file);
  if (!validated) {
    spdlog::error("invalid configuration: {}", validated.error().message);
    return 1;
  }
  Daemon daemon(options, *endpoint);
  return daemon.Run(std::move(text).value(), std::move(validated).value());
}

}  // namespace lagsight::app
