#include "analysis/analyzer.h"

#include <utility>

#include "analysis/analysis_time.h"
#include "analysis/association.h"
#include "analysis/flink_findings.h"
#include "analysis/group_findings.h"
#include "analysis/job_history.h"
#include "analysis/judgement.h"
#include "analysis/kafka_history.h"
#include "analysis/stall_guard.h"

namespace lagsight::analysis {
namespace {

// What the analyzer publishes of one Kafka cluster until its next poll.
struct KafkaClusterFindings {
  bool up = false;
  // Shared with every Findings published until the next poll: copying it into each (once per
  // Kafka and per Flink poll) held the per-partition lag in seconds twice.
  std::shared_ptr<const KafkaFindings> findings = std::make_shared<const KafkaFindings>();
  std::vector<DiagnosisFinding> diagnosis;
};

}  // namespace

// The stages, in the order data flows; each reads only those above it.
struct Analyzer::State {
  config::DiagnosisConfig config;
  KafkaHistories kafka_history;                       // by Kafka cluster
  JobHistories jobs;                                  // by job id
  std::map<std::string, KafkaClusterFindings> kafka;  // by Kafka cluster
  Associations associations;
  FlinkClusters flink;  // its findings: joins associated and aligned
  Judgement judgement;
  StallGuard stall_guard;

  EarlierCommitsPolicy EarlierCommits() const {
    return {EarlierCommitsKeptFor(SlowestMetricsRefresh(flink)),
            [this](const std::string& topic) { return associations.ReadByFlink(topic); }};
  }

  // Every Flink cluster's joins read the Kafka clusters' offsets.
  void FindAllFlink(const SourcesView& sources, double now) {
    for (const auto& [name, flink_view] : sources.flink) {
      FindFlink(name, sources, flink, jobs, kafka_history, associations, config, now);
    }
  }

  std::shared_ptr<const Findings> Build() const {
    auto findings = std::make_shared<Findings>();
    for (const auto& [name, cluster] : kafka) {
      if (!cluster.up) continue;
      findings->kafka[name] = cluster.findings;
      findings->diagnosis.insert(findings->diagnosis.end(), cluster.diagnosis.begin(),
                                 cluster.diagnosis.end());
    }
    for (const auto& [name, cluster] : flink) {
      if (cluster.up) findings->flink[name] = cluster.findings;
    }
    return findings;
  }
};

Analyzer::Analyzer(config::DiagnosisConfig config) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
}

Analyzer::~Analyzer() = default;

void Analyzer::SetConfig(const config::DiagnosisConfig& config) { state_->config = config; }

std::shared_ptr<const Findings> Analyzer::ObserveKafka(const std::string& cluster,
                                                       const SourcesView& sources, double now) {
  State& s = *state_;
  s.stall_guard.NoteObservation('k', cluster, now, SlowestMetricsRefresh(s.flink));
  KafkaClusterFindings& state = s.kafka[cluster];
  KafkaHistory& history = s.kafka_history[cluster];
  const auto view = sources.kafka.find(cluster);
  if (view == sources.kafka.end() || view->second.snapshot == nullptr ||
      view->second.lags == nullptr) {
    state.up = false;
    state.findings = std::make_shared<const KafkaFindings>();
    state.diagnosis.clear();
  } else {
    const kafka::KafkaSnapshot& snapshot = *view->second.snapshot;
    const std::vector<GroupLag>& lags = *view->second.lags;
    history.Record(snapshot, lags, view->second.regressions, s.EarlierCommits(),
                   Seconds(s.config.window), now);
    state.findings =
        std::make_shared<const KafkaFindings>(FindKafka(history, snapshot, lags, s.config, now));
    state.up = true;
  }
  s.FindAllFlink(sources, now);
  if (state.up) {
    const auto& view_ok = sources.kafka.at(cluster);
    state.diagnosis =
        s.judgement.Judge(cluster, history, *state.findings, *view_ok.snapshot, *view_ok.lags,
                          s.flink, s.jobs, s.config, s.stall_guard.Settled(now), now);
  }
  return s.Build();
}

std::shared_ptr<const Findings> Analyzer::ObserveFlink(const std::string& cluster,
                                                       const SourcesView& sources, double now) {
  State& s = *state_;
  s.stall_guard.NoteObservation('f', cluster, now, SlowestMetricsRefresh(s.flink));
  const auto view = sources.flink.find(cluster);
  if (view != sources.flink.end() && view->second.snapshot != nullptr) {
    const double forget_after = ForgetJobAfter(s.config);
    RecordFlink(cluster, *view->second.snapshot, s.flink[cluster].timing, s.jobs, s.kafka_history,
                forget_after, now);
    s.associations.Forget(cluster, forget_after, now);
  }
  FindFlink(cluster, sources, s.flink, s.jobs, s.kafka_history, s.associations, s.config, now);
  return s.Build();
}

void Analyzer::Retain(const std::set<std::string>& kafka_clusters,
                      const std::set<std::string>& flink_clusters) {
  State& s = *state_;
  std::erase_if(s.kafka, [&](const auto& entry) { return !kafka_clusters.contains(entry.first); });
  std::erase_if(s.kafka_history,
                [&](const auto& entry) { return !kafka_clusters.contains(entry.first); });
  std::erase_if(s.flink, [&](const auto& entry) { return !flink_clusters.contains(entry.first); });
  std::erase_if(s.jobs, [&](const auto& entry) {
    return !flink_clusters.contains(entry.second.flink_cluster);
  });
  s.judgement.Retain(kafka_clusters);
  s.stall_guard.Retain(kafka_clusters, flink_clusters);
}

}  // namespace lagsight::analysis
