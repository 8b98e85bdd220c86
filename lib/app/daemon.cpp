#include "app/daemon.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "app/source.h"
#include "app/source_health.h"
#include "app/source_plan.h"
#include "common/gzip_stream.h"
#include "http/server.h"
#include "metrics/findings_metrics.h"
#include "metrics/process_metrics.h"
#include "status/status_page.h"
#include "trace/trace_recorder.h"

namespace lagsight::app {

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

status::SourceStatus::Kind StatusKind(Source::Kind kind) {
  switch (kind) {
    case Source::Kind::kKafka:
      return status::SourceStatus::Kind::kKafka;
    case Source::Kind::kFlink:
      return status::SourceStatus::Kind::kFlink;
    case Source::Kind::kStore:
      return status::SourceStatus::Kind::kStore;
  }
  return status::SourceStatus::Kind::kKafka;
}

class Daemon {
 public:
  Daemon(Options options, asio::ip::tcp::endpoint listen_endpoint)
      : options_(std::move(options)),
        listen_endpoint_(listen_endpoint),
        workers_(4),
        signals_(io_, SIGINT, SIGTERM, SIGHUP),
        server_(io_,
                http::Endpoints{[this] { return exposition_; }, [this] { return Readiness(); },
                                [this] { return Reload(); }, [this] { return status_page_; }},
                {}, options_.web_config_file) {}

  int Run(std::string config_text, ValidatedConfig initial) {
    if (!options_.trace_record_file.empty()) {
      auto recorder =
          trace::TraceRecorder::Open(options_.trace_record_file, options_.trace_max_bytes);
      if (!recorder) {
        spdlog::error("--trace.record: {}", recorder.error().message);
        return 1;
      }
      recorder_ = std::move(recorder).value();
      spdlog::info("recording what the analysis is handed to {} (at most {} bytes a file)",
                   options_.trace_record_file, options_.trace_max_bytes);
    }
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
  using Key = std::pair<Source::Kind, std::string>;

  // How long a source a reload replaced waits at most for its predecessor's poll to end.
  static constexpr std::chrono::seconds kPredecessorWait{10};

  // A configured source and what the daemon keeps about it: its health and its poll timer.
  struct Running {
    Running(asio::io_context& io, std::shared_ptr<Source> polled)
        : source(std::move(polled)), timer(io) {}
    std::shared_ptr<Source> source;
    SourceHealth health;
    asio::steady_timer timer;
    // Set on a source a reload replaced mid-poll: the replacement's first poll starts when this
    // poll ends (or after kPredecessorWait, whichever is first), so that two
    // polls of one cluster never build their snapshots side by side (at a million
    // group-partitions a reload raised the peak RSS by ~75 MB).
    std::optional<Key> predecessor_of;  // set while a replacement waits for this poll
    bool awaiting_predecessor = false;
    std::uint64_t schedule = 0;  // which scheduled poll the timer's handler may start
    bool observing = false;      // its poll's analysis runs
    bool poll_again = false;     // another source's poll wants one more at once (WantsEarlyPoll)
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
    for (auto& [key, running] : sources_) running->timer.cancel();
    io_.stop();
  }

  // Replaces the running sources with those of `validated`; a source whose settings did not
  // change keeps its client, connections and health counters.
  void Apply(std::string config_text, ValidatedConfig validated) {
    std::map<Key, std::shared_ptr<Running>> next;
    std::vector<std::shared_ptr<Running>> to_start;
    for (PlannedSource& planned : PlanSources(validated, {io_, workers_, retirer_})) {
      Key key{planned.kind, planned.name};
      const auto existing = sources_.find(key);
      if (existing != sources_.end() && planned.unchanged(*existing->second->source)) {
        next[key] = existing->second;
        continue;
      }
      auto running = std::make_shared<Running>(io_, planned.create());
      if (existing != sources_.end()) {
        // Changed settings: counters go on, and the last data is served until the new
        // settings' first poll replaces it, so a reload does not blank the source's series.
        running->health = existing->second->health;
        running->health.polling = false;
        running->source->TakeOver(*existing->second->source);
        // Waiting too when the replaced source itself still waits: a second reload within one
        // poll must not start a poll beside the one in flight either.
        if (existing->second->health.polling || existing->second->awaiting_predecessor) {
          if (existing->second->health.polling) existing->second->predecessor_of = key;
          running->awaiting_predecessor = true;
          ScheduleNextPoll(running, SteadyClock::now() + kPredecessorWait);
          next[key] = running;
          continue;
        }
      }
      next[key] = running;
      to_start.push_back(running);
    }
    for (auto& [key, running] : sources_) {
      const auto kept = next.find(key);
      if (kept != next.end() && kept->second == running) continue;
      running->timer.cancel();
      running->source->Retire();
    }
    sources_ = std::move(next);
    for (const auto& running : to_start) StartPoll(running);

    std::set<std::string> kafka_names;
    std::set<std::string> flink_names;
    for (const auto& [key, running] : sources_) {
      if (key.first == Source::Kind::kKafka) kafka_names.insert(key.second);
      if (key.first == Source::Kind::kFlink) flink_names.insert(key.second);
    }
    // Before any analysis of the polls started above: they are queued behind it.
    asio::post(analysis_,
               [this, diagnosis = validated.config.diagnosis, kafka_names = std::move(kafka_names),
                flink_names = std::move(flink_names)] {
                 analyzer_.SetConfig(diagnosis);
                 analyzer_.Retain(kafka_names, flink_names);
                 RecordConfig(diagnosis, kafka_names, flink_names);
               });
    loaded_config_text_ = std::move(config_text);
    last_reload_successful_ = true;
    last_reload_success_time_ = UnixNow();
    RequestRender();
  }

  std::optional<std::string> Reload() {
    auto text = config::ReadConfigFile(options_.config_file);
    std::optional<std::string> failure;
    if (!text) {
      failure = text.error().message;
    } else if (*text == loaded_config_text_) {
      spdlog::info("configuration unchanged; nothing to reload");
      return std::nullopt;
    } else if (auto validated = Validate(
                   *text, options_.config_file, options_.shard,
                   [this](const config::KafkaClusterConfig& cluster) {
                     const auto running = sources_.find({Source::Kind::kKafka, cluster.name});
                     return running != sources_.end() &&
                            RunsKafkaCluster(*running->second->source, cluster);
                   })) {
      const std::size_t kafka_clusters = validated->config.kafka.size();
      Apply(std::move(text).value(), std::move(validated).value());
      spdlog::info("configuration reloaded: {} kafka cluster(s)", kafka_clusters);
      return std::nullopt;
    } else {
      failure = validated.error().message;
    }
    spdlog::error("configuration reload failed, keeping the running configuration: {}", *failure);
    last_reload_successful_ = false;
    RequestRender();
    return failure;
  }

  void StartPoll(const std::shared_ptr<Running>& running) {
    if (stopping_) return;
    running->awaiting_predecessor = false;
    const Source& source = *running->source;
    if (running->health.polling) {
      spdlog::warn("{} cluster \"{}\": the previous poll is still running; skipping this one",
                   KindName(source.kind()), source.name());
      ScheduleNextPoll(running, SteadyClock::now() + source.poll_interval());
      return;
    }
    running->health.polling = true;
    const auto started = SteadyClock::now();
    running->source->Poll(View(), [this, running, started](std::optional<std::string> error) {
      OnPollDone(running, error, started);
    });
  }

  // Starts now the next poll of each other source that wants it after what `polled` read (see
  // Source::WantsEarlyPoll); its schedule continues from there.
  void StartEarlyPolls(const Running& polled) {
    std::vector<std::shared_ptr<Running>> early;
    const analysis::SourcesView view = View();
    for (const auto& [key, running] : sources_) {
      if (running.get() == &polled || running->awaiting_predecessor) continue;
      if (!running->source->WantsEarlyPoll(view)) continue;
      // A poll in flight (or its analysis) began before what `polled` read: one more follows
      // it at once (at the default polls, which start together, a Kafka poll reading record
      // timestamps was often still running when the Flink poll that named a topic ended).
      if (running->health.polling || running->observing) {
        running->poll_again = true;
      } else {
        early.push_back(running);
      }
    }
    for (const auto& running : early) {
      spdlog::debug("{} cluster \"{}\": polling early for what {} cluster \"{}\" read",
                    KindName(running->source->kind()), running->source->name(),
                    KindName(polled.source->kind()), polled.source->name());
      ++running->schedule;  // a timer that expired meanwhile does not start a second poll
      running->timer.cancel();
      StartPoll(running);
    }
  }

  void OnPollDone(const std::shared_ptr<Running>& running, const std::optional<std::string>& error,
                  SteadyClock::time_point started) {
    Source& source = *running->source;
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
    running->health.Record(KindName(source.kind()), source.name(), error, seconds, UnixNow());
    if (stopping_) return;
    // The source that replaced this one now, looked up by name: a later reload may have
    // replaced the first replacement too (that one is retired and must not poll).
    if (const auto key = std::exchange(running->predecessor_of, std::nullopt)) {
      const auto replacement = sources_.find(*key);
      if (replacement != sources_.end() && replacement->second->awaiting_predecessor) {
        ++replacement->second->schedule;  // its timer's handler does not start another poll
        replacement->second->timer.cancel();
        StartPoll(replacement->second);
      }
    }
    const auto current = sources_.find({source.kind(), source.name()});
    if (current == sources_.end() || current->second != running) return;  // removed by a reload
    if (!error) StartEarlyPolls(*running);
    running->observing = true;
    // The analysis takes 0.1 s at 32,000 group-partitions and 0.5 s at 160,000
    // (tests/bench/analyzer_bench): on the event loop, every scrape and /healthz in that time
    // would wait for it. On the analysis strand, one analysis runs at a time and in the order
    // of the polls; its findings come back here, where the render that needs them starts.
    // The next poll is scheduled only then: each queued analysis holds the snapshots of its
    // moment, so polls faster than their analysis would pile them up, and at a million
    // group-partitions a poll overlapping the previous one's analysis and render held a third
    // snapshot at the peak.
    asio::post(analysis_, [this, running, started, view = View(), now = UnixNow()]() mutable {
      auto findings = running->source->Observe(analyzer_, view, now);
      Record(*running->source, view, now);
      // The source goes back with the findings: if a reload dropped it meanwhile, it is
      // destroyed on the event loop, whose objects (timers, HTTP clients) it may own.
      asio::post(
          io_, [this, running = std::move(running), started, findings = std::move(findings)] {
            if (stopping_) return;
            if (findings) findings_ = findings;
            const auto still = sources_.find({running->source->kind(), running->source->name()});
            running->observing = false;
            if (still != sources_.end() && still->second == running) {
              ScheduleNextPoll(running, std::exchange(running->poll_again, false)
                                            ? SteadyClock::now()
                                            : started + running->source->poll_interval());
            }
            RequestRender();
          });
    });
  }

  // With --trace.record, writes what the analyzer was handed to the trace. On the analysis
  // strand, as the analyzer: a poll's JSON, beside an analysis that takes longer.
  void RecordConfig(const config::DiagnosisConfig& diagnosis,
                    const std::set<std::string>& kafka_names,
                    const std::set<std::string>& flink_names) {
    if (!recorder_) return;
    recorder_->RecordConfig(diagnosis);
    recorder_->RecordRetain(kafka_names, flink_names);
  }
  void Record(const Source& source, const analysis::SourcesView& view, double now) {
    if (!recorder_) return;
    if (source.kind() == Source::Kind::kKafka) {
      recorder_->RecordKafkaObservation(source.name(), view, now);
    } else if (source.kind() == Source::Kind::kFlink) {
      recorder_->RecordFlinkObservation(source.name(), view, now);
    } else if (source.kind() == Source::Kind::kStore) {
      recorder_->RecordStoreReading(source.name(), view, now);
    }
  }

  void ScheduleNextPoll(const std::shared_ptr<Running>& running, SteadyClock::time_point when) {
    if (stopping_) return;
    running->timer.expires_at(std::max(when, SteadyClock::now()));
    running->timer.async_wait(
        [this, running, ticket = ++running->schedule](const boost::system::error_code& error) {
          if (!error && ticket == running->schedule) StartPoll(running);
        });
  }

  // The latest state of every source, shared and immutable.
  analysis::SourcesView View() const {
    analysis::SourcesView view;
    for (const auto& [key, running] : sources_) running->source->AddTo(view);
    return view;
  }

  // Renders the exposition and the status page on a worker from immutable inputs, one render
  // at a time: a request while one runs is served by one more render when it ends, from the
  // state of then. Every render holds its samples, gzip and page until it is published; several
  // at once on the pool (a poll of each source ending together) multiplied the peak (heaptrack,
  // 100,000 group-partitions, before the text was compressed as it was built: 157 MB of texts at
  // the peak, ~35 MB each).
  void RequestRender() {
    if (render_running_) {
      render_pending_ = true;
      return;
    }
    render_running_ = true;
    std::vector<Source::Render> renders;
    const analysis::SourcesView view = View();
    for (const auto& [key, running] : sources_) {
      if (!running->health.polled_once) continue;  // nothing known yet: /readyz says so
      renders.push_back(running->source->Renderer(running->health.status, view));
    }
    asio::post(workers_,
               [this, renders = std::move(renders), findings = findings_, now = UnixNow(),
                reload_ok = last_reload_successful_, reload_time = last_reload_success_time_,
                sources = SourceStatuses(), connections = server_.connection_counts()] {
                 Render(renders, *findings, now, reload_ok, reload_time, sources, connections);
                 // The render's families were freed just now, into the malloc arena, which
                 // glibc keeps for later instead of returning it: the resident size then
                 // stayed at the render's peak between renders. Measured with
                 // tests/bench/side_by_side.py at 100,000 group-partitions: RSS 296 -> 177 MB,
                 // peak 424 -> 309 MB, CPU unchanged (docs/benchmarks.md#measured).
                 malloc_trim(0);
               });
  }

  void Render(const std::vector<Source::Render>& renders, const analysis::Findings& findings,
              double now, bool reload_ok, double reload_time,
              std::vector<status::SourceStatus> sources, http::ConnectionCounts connections) {
    // Compressed while it is built, once per render rather than per scrape (Prometheus asks for
    // gzip every time). The deflater fails only without memory, as a growing string or map does
    // (bad_alloc): that render is skipped, and the last exposition stays published. An exception
    // escaping a pool handler would end the process.
    std::shared_ptr<const GzippedText> exposition;
    const auto render_started = SteadyClock::now();
    try {
      // The findings' families (45 ms at issue 14's S3, where the render's goal is 0.4 s) are
      // built on a thread of their own while the sources render, then follow them as if added
      // after them (FamilyBuilder::Append). An exception below waits for the thread: a future
      // of std::async waits when destroyed.
      const auto build_findings = [&findings] {
        metrics::FamilyBuilder families;
        metrics::AppendFindingsMetrics(findings, families);
        return families;
      };
      std::future<metrics::FamilyBuilder> findings_families;
      try {
        findings_families = std::async(std::launch::async, build_findings);
      } catch (const std::system_error&) {  // no thread to be had: built here, when asked for
        findings_families = std::async(std::launch::deferred, build_findings);
      }
      metrics::FamilyBuilder builder;
      if (previous_render_seconds_) {
        metrics::AppendRenderMetrics(*previous_render_seconds_, builder);
      }
      metrics::AppendProcessMetrics(kVersion, kRevision, reload_ok, reload_time, builder);
      metrics::AppendShardMetrics(options_.shard.index, options_.shard.total, builder);
      metrics::AppendHttpConnectionMetrics(connections.shed_for_same_client,
                                           connections.shed_for_any_client, connections.refused,
                                           builder);
      for (const Source::Render& render : renders) render(findings, now, builder);
      builder.Append(findings_families.get());
      exposition = std::make_shared<const GzippedText>(std::move(builder).RenderGzip());
      previous_render_seconds_ =
          std::chrono::duration<double>(SteadyClock::now() - render_started).count();
      spdlog::debug("rendered the exposition in {:.3f} s: {} bytes of text, {} gzipped",
                    *previous_render_seconds_, exposition->text_size, exposition->bytes.size());
    } catch (const std::exception& error) {
      spdlog::warn("rendering the exposition failed, the previous one stays published: {}",
                   error.what());
    }
    // Published before the status page is rendered: scrapers should not wait for HTML. The page
    // took 0.39 s at 20,000 groups (tests/bench/status_page_bench 20000), a fifth of a million
    // group-partitions' time from poll to fresh /metrics.
    if (exposition) {
      asio::post(io_, [this, exposition = std::move(exposition)]() mutable {
        exposition_ = std::move(exposition);
      });
    }
    // Kept gzipped, as the exposition, and compressed while it is written: 5.2 MB of HTML at
    // 2,000 groups.
    std::shared_ptr<const GzippedText> page;
    try {
      page = std::make_shared<const GzippedText>(
          status::RenderStatusPageGzip(findings, sources, kVersion, now));
    } catch (const std::exception& error) {
      spdlog::warn("rendering the status page failed, the previous one stays published: {}",
                   error.what());
    }
    asio::post(io_, [this, page = std::move(page)]() mutable {
      if (page) status_page_ = std::move(page);
      render_running_ = false;
      if (std::exchange(render_pending_, false) && !stopping_) RequestRender();
    });
  }

  // Every configured source, polled or not, for the status page.
  std::vector<status::SourceStatus> SourceStatuses() const {
    std::vector<status::SourceStatus> out;
    for (const auto& [key, running] : sources_) {
      const SourceHealth& health = running->health;
      out.push_back({StatusKind(key.first), key.second, health.polled_once, health.status.up,
                     health.status.last_success_unix_seconds, health.last_error});
    }
    return out;
  }

  http::Readiness Readiness() const {
    std::string waiting;
    for (const auto& [key, running] : sources_) {
      if (running->health.polled_once) continue;
      waiting += waiting.empty() ? "" : ", ";
      waiting += std::string(KindName(key.first)) + " " + key.second;
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
  // Runs every use of analyzer_, one at a time, in the order posted (after workers_: it is
  // made from it).
  asio::strand<asio::thread_pool::executor_type> analysis_{asio::make_strand(workers_)};
  asio::signal_set signals_;
  http::Server server_;
  std::map<Key, std::shared_ptr<Running>> sources_;
  std::string loaded_config_text_;
  bool last_reload_successful_ = false;
  double last_reload_success_time_ = 0;
  bool stopping_ = false;
  bool render_running_ = false;  // a render is on the pool
  bool render_pending_ = false;  // ... and another was asked for meanwhile
  // How long the render of the published exposition took (a failed render leaves it). Written
  // and read only by Render(), one at a time: each render is posted after the last one ended
  // (render_running_), so the posts order them.
  std::optional<double> previous_render_seconds_;
  std::shared_ptr<const GzippedText> exposition_;   // null until the first render
  std::shared_ptr<const GzippedText> status_page_;  // null: the router serves its landing page
  // History and derived findings: analyzer_ is used only on analysis_; findings_, its latest
  // answer, only on the event loop.
  analysis::Analyzer analyzer_{config::DiagnosisConfig{}};
  std::unique_ptr<trace::TraceRecorder> recorder_;  // --trace.record; used only on analysis_
  std::shared_ptr<const analysis::Findings> findings_ = std::make_shared<analysis::Findings>();
};

}  // namespace

int RunDaemon(const Options& options, const boost::asio::ip::tcp::endpoint& listen_endpoint,
              std::string config_text, ValidatedConfig initial) {
  Daemon daemon(options, listen_endpoint);
  return daemon.Run(std::move(config_text), std::move(initial));
}

}  // namespace lagsight::app
