// The scripted admin and cluster config the Collector tests share: a fixture that makes a
// Collector on a FakeKafkaAdmin with a steerable clock, the groups most tests poll (Script), and
// groups whose lagging positions the record-timestamp tests read (ScriptLaggingGroups).
#pragma once

#include <chrono>
#include <map>
#include <memory>

#include "fake_kafka_admin.h"
#include "kafka/collector.h"

namespace lagsight::testing {

using lagsight::config::KafkaClusterConfig;
using lagsight::config::NameFilter;
using lagsight::kafka::BootstrapIdentity;
using lagsight::kafka::ClusterMismatch;
using lagsight::kafka::Collector;
using lagsight::kafka::CommittedOffsets;
using lagsight::kafka::GroupKind;
using lagsight::kafka::RecordKey;

inline std::map<RecordKey, std::int64_t> Millis(
    const std::map<RecordKey, lagsight::kafka::RecordTimestamp>& timestamps) {
  std::map<RecordKey, std::int64_t> out;
  for (const auto& [key, timestamp] : timestamps) out[key] = timestamp.ms;
  return out;
}

struct Fixture {
  KafkaClusterConfig config;
  FakeKafkaAdmin* admin = nullptr;  // owned by the collector

  Fixture() {
    config.name = "test";
    config.bootstrap_servers = {"b:9092"};
  }

  Collector Make() {
    auto owned = std::make_unique<FakeKafkaAdmin>();
    admin = owned.get();
    return Collector(config, std::move(owned), [this] { return now; });
  }
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};  // what the collector reads

  void Script() {
    admin->listings = {{"flink-job", "empty", true},
                       {"app", "stable", false},
                       {"console-consumer-1", "stable", false},
                       {"kip848", "stable", false}};
    admin->descriptions["flink-job"] = {"flink-job", "empty", true, 0, false, std::nullopt, {}, {}};
    admin->descriptions["app"] = {"app", "stable", false, 2, false, std::nullopt, {}, {}};
    admin->descriptions["console-consumer-1"] = {"console-consumer-1", "stable", false, 1, false,
                                                 std::nullopt,         {},       {}};
    // What Kafka 4.1's classic DescribeGroups says of a KIP-848 group, as librdkafka 2.0.2 reads
    // it.
    admin->descriptions["kip848"] = {"kip848", "dead", true, 0, false, std::nullopt, {}, {}};
    admin->committed["flink-job"] = lagsight::kafka::CommittedOffsets{{{"orders", 0}, 5}};
    admin->committed["app"] =
        lagsight::kafka::CommittedOffsets{{{"orders", 1}, 7}, {{"__internal", 0}, 1}};
    admin->committed["kip848"] = lagsight::kafka::CommittedOffsets{{{"audit", 0}, 3}};
    admin->topics = {{"orders", 2}, {"audit", 1}, {"__internal", 1}, {"unrelated", 8}};
    admin->log_end = {
        {{"orders", 0}, 10}, {{"orders", 1}, 20}, {{"audit", 0}, 3}, {{"__internal", 0}, 1}};
    admin->log_start = {
        {{"orders", 0}, 0}, {{"orders", 1}, 0}, {{"audit", 0}, 0}, {{"__internal", 0}, 0}};
    admin->broker_configs["offsets.retention.minutes"] = "10080";
    admin->record_timestamps = {{{{"orders", 0}, 5}, 1'700'000'000'000},
                                {{{"orders", 1}, 7}, 1'700'000'001'000}};
  }
};

// Groups on one topic "t" whose lagging positions are, by lag: t/0@10 (90, two groups there),
// t/2@30 (log start above the commit at 0: lag 40), t/1@50 (10); t/3 is caught up.
inline void ScriptLaggingGroups(FakeKafkaAdmin& admin) {
  admin.listings = {{"g1", "empty", true},
                    {"g2", "empty", true},
                    {"g3", "empty", true},
                    {"g4", "empty", true},
                    {"g5", "empty", true}};
  admin.committed["g1"] = CommittedOffsets{{{"t", 0}, 10}};
  admin.committed["g2"] = CommittedOffsets{{{"t", 0}, 10}, {{"t", 3}, 7}};
  admin.committed["g3"] = CommittedOffsets{{{"t", 1}, 50}};
  admin.committed["g4"] = CommittedOffsets{{{"t", 2}, 0}};
  admin.committed["g5"] = CommittedOffsets{{{"t", 3}, 7}};
  admin.topics = {{"t", 4}};
  admin.log_end = {{{"t", 0}, 100}, {{"t", 1}, 60}, {{"t", 2}, 40}, {{"t", 3}, 7}};
  admin.log_start = {{{"t", 0}, 0}, {{"t", 1}, 0}, {{"t", 2}, 30}, {{"t", 3}, 0}};
  admin.broker_configs["offsets.retention.minutes"] = "10080";
  admin.record_timestamps = {{{{"t", 0}, 10}, 1000},
                             {{{"t", 0}, 20}, 2000},
                             {{{"t", 1}, 50}, 5000},
                             {{{"t", 2}, 30}, 3000}};
}

}  // namespace lagsight::testing
