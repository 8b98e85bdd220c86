// kafka::Collector: one poll of one Kafka cluster, turned into a KafkaSnapshot.
//
// A poll lists every consumer group (simple and empty ones included), keeps those the group
// filter accepts, describes them, reads the committed offsets of all their partitions (bounded
// concurrency), and reads log-start and log-end offsets of every partition of every topic they
// committed on (after the topic filter). Every call is bounded by request_timeout and the
// whole poll by poll_timeout. Poll() blocks: run it on a worker thread, one at a time.
#pragma once

#include <memory>
#include <set>

#include "config/config.h"
#include "kafka/admin.h"
#include "kafka/snapshot.h"

namespace lagsight::kafka {

class Collector {
 public:
  Collector(config::KafkaClusterConfig cluster, std::unique_ptr<KafkaAdmin> admin);

  // Fails as a whole when the cluster cannot be listed or its metadata read; failures of single
  // groups or partitions are recorded in KafkaSnapshot::partial_errors instead.
  // `flink_topics` are topics as Flink's metric ids name them (dots as '_'): the log offsets of
  // every real topic with that escaped name are read too, so Flink-side lag is known even for a
  // job that commits nothing.
  Result<KafkaSnapshot> Poll(const std::set<std::string>& flink_topics = {});

  const config::KafkaClusterConfig& cluster() const { return cluster_; }

 private:
  config::KafkaClusterConfig cluster_;
  std::unique_ptr<KafkaAdmin> admin_;
};

}  // namespace lagsight::kafka
