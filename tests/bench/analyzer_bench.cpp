// How long one Kafka poll's analysis (history, findings, diagnosis) takes for N simple groups
// with P partitions each, on their own topic or on T topics they share
// (tests/bench/side_by_side.py: 1, as many groups reading one topic as Flink jobs reading a busy
// one). Prints the median over 20 polls after 40 warm-up polls (so the series are full).
// `lag_seconds` 1 gives every lagging position a record timestamp, as a cluster whose consumers
// move has them (groups commit 50 different positions per partition; side_by_side.py's live data
// set). Usage: analyzer_bench [groups] [partitions] [shared_topics] [lag_seconds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "metrics/findings_metrics.h"
#include "metrics/kafka_metrics.h"

using namespace lagsight;

int main(int argc, char** argv) {
  const int groups = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int partitions = argc > 2 ? std::atoi(argv[2]) : 8;
  const int shared_topics = argc > 3 ? std::atoi(argv[3]) : 0;  // 0: a topic per group
  const bool lag_seconds = argc > 4 && std::atoi(argv[4]) != 0;
  analysis::Analyzer analyzer{config::DiagnosisConfig{}};
  std::vector<double> millis;
  std::vector<double> render_millis;  // the cluster's and the findings' families, from the poll
  for (int poll = 0; poll < 60; ++poll) {
    kafka::KafkaSnapshot snapshot;
    snapshot.offsets_retention_seconds = 7 * 24 * 3600;
    for (int g = 0; g < groups; ++g) {
      // Zero-padded: KafkaSnapshot::groups is sorted by id, and the analysis relies on it.
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, "%07d", g);
      std::string topic = std::string("topic-") + suffix;
      if (shared_topics > 0) {
        char shared[16];
        std::snprintf(shared, sizeof shared, "%07d", g % shared_topics);
        topic = std::string("shared-") + shared;
      }
      if (snapshot.topic_partitions.emplace(topic, partitions).second) {
        snapshot.all_topics.push_back(topic);
      }
      kafka::ConsumerGroup group;
      group.id = std::string("group-") + suffix;
      group.state = "empty";
      group.kind = kafka::GroupKind::kSimple;
      group.members = 0;
      for (int p = 0; p < partitions; ++p) {
        snapshot.partitions[{topic, p}] = {0, 1000 + 10 * poll};
        const std::int64_t committed = 1000 + 8 * poll - g % 50;
        group.committed[{topic, p}] = committed;
        if (lag_seconds) {
          // A record written 2 s per offset before the log end, read by the producer's clock.
          const std::int64_t behind = 1000 + 10 * poll - committed;
          snapshot.record_timestamps[{{topic, p}, committed, false}] = {
              (1'000'000 + 15 * poll - 2 * behind) * 1000, false};
        }
      }
      snapshot.groups.push_back(std::move(group));
    }
    analysis::SourcesView view;
    view.kafka["prod"] = analysis::DeriveKafkaPoll(std::move(snapshot), {});
    const auto started = std::chrono::steady_clock::now();
    const auto findings = analyzer.ObserveKafka("prod", view, 1'000'000.0 + 15 * poll);
    const auto elapsed = std::chrono::steady_clock::now() - started;
    if (poll >= 40) millis.push_back(std::chrono::duration<double, std::milli>(elapsed).count());
    if (poll >= 55) {  // what the daemon renders after the analysis, at the default series
      const auto render_started = std::chrono::steady_clock::now();
      metrics::FamilyBuilder builder;
      const auto cluster_findings = findings->kafka.find("prod");
      metrics::AppendKafkaMetrics(
          "prod", {true, 1, 1, 1, 0}, view.kafka["prod"],
          cluster_findings == findings->kafka.end() ? nullptr : cluster_findings->second.get(),
          config::KafkaSeriesConfig{}, builder, 1);
      metrics::AppendFindingsMetrics(*findings, builder);
      const GzippedText gzipped = std::move(builder).RenderGzip();
      render_millis.push_back(std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - render_started)
                                  .count());
    }
    // A new group has no history to judge yet; after the warm-up every group has a finding.
    if (poll >= 40 && findings->diagnosis.size() != static_cast<std::size_t>(groups)) {
      std::fprintf(stderr, "poll %d: %zu diagnosis findings for %d groups\n", poll,
                   findings->diagnosis.size(), groups);
      return 1;
    }
  }
  std::sort(millis.begin(), millis.end());
  std::printf(
      "groups=%d partitions=%d shared_topics=%d lag_seconds=%d analysis per poll: median %.1f ms, "
      "min %.1f ms\n",
      groups, partitions, shared_topics, lag_seconds ? 1 : 0, millis[millis.size() / 2],
      millis.front());
  std::sort(render_millis.begin(), render_millis.end());
  std::printf("render (one thread, gzipped) per poll: median %.1f ms\n",
              render_millis[render_millis.size() / 2]);
  return 0;
}
