// How long the status page takes to render, and how large it is, for many job<->group pairs with
// full histories. Prints numbers; run by hand: status_page_bench [pairs=1000] [rounds=20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "status/status_page.h"

namespace {

using lagsight::analysis::Cause;

lagsight::analysis::Findings MakeFindings(int pairs, double now) {
  constexpr int kHistory = 64;  // the analyzer's series capacity
  constexpr Cause kCauses[] = {Cause::kHealthy,      Cause::kHealthy,
                               Cause::kHealthy,      Cause::kLongCheckpointInterval,
                               Cause::kReallyBehind, Cause::kOffsetsExpiring};
  lagsight::analysis::Findings findings;
  for (int i = 0; i < pairs; ++i) {
    lagsight::analysis::DiagnosisFinding finding;
    finding.kafka_cluster = "prod";
    finding.group = "consumer-group-" + std::to_string(i);
    const bool kafka_only = i % 4 == 3;
    if (!kafka_only) {
      finding.job_id = "a5c0f1e2d3b4a5c6d7e8f9a0b1c2d3e" + std::to_string(i % 10);
      finding.job_name = "enrichment-job-" + std::to_string(i);
      finding.checkpoint_age_seconds = 4.2;
      finding.checkpoint_interval_seconds = 10;
    }
    finding.cause = kCauses[i % 6];
    finding.since = now - 3600 - i;
    for (int t = 0; t < kHistory; ++t) {
      const std::int64_t kafka_lag = 1000 + (t % 10) * 15000 + i;  // a checkpoint sawtooth
      const std::optional<std::int64_t> flink_lag =
          kafka_only ? std::nullopt : std::optional<std::int64_t>(50 + t % 7);
      finding.history.push_back({now - (kHistory - t) * 5.0, kafka_lag, flink_lag});
    }
    finding.kafka_lag = finding.history.back().kafka_lag;
    finding.flink_lag = finding.history.back().flink_lag;
    finding.max_lag_seconds = 12.5;
    findings.diagnosis.push_back(std::move(finding));
  }
  return findings;
}

}  // namespace

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  const double now = 1'800'000'000;
  const auto findings = MakeFindings(pairs, now);
  const std::vector<lagsight::status::SourceStatus> sources = {
      {lagsight::status::SourceStatus::Kind::kKafka, "prod", true, true, now - 1, ""},
      {lagsight::status::SourceStatus::Kind::kFlink, "flink", true, true, now - 2, ""}};

  std::vector<double> millis;
  std::size_t bytes = 0;
  for (int round = 0; round < rounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    const std::string page = lagsight::status::RenderStatusPage(findings, sources, "bench", now);
    millis.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    bytes = page.size();
  }
  std::sort(millis.begin(), millis.end());
  std::printf("pairs=%d history=64 rounds=%d page=%zu bytes (%.1f KiB/pair)\n", pairs, rounds,
              bytes, static_cast<double>(bytes) / 1024 / std::max(pairs, 1));
  std::printf("render ms: min %.2f  median %.2f  max %.2f\n", millis.front(),
              millis[millis.size() / 2], millis.back());
  return 0;
}
