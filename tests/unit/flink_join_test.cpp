// The join of a Flink job's reader offsets with the Kafka half: topic names, association, and
// the arithmetic of Flink-side lag and checkpoint gap.
#include "analysis/flink_join.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace {

using namespace lagsight;

flink::FlinkSnapshot OneJob(std::map<flink::MetricTopicPartition, flink::SourceOffsets> partitions,
                            std::string job_name = "orders-enrichment") {
  flink::FlinkJob job;
  job.overview = {"jid1", std::move(job_name), "RUNNING", 0, {}, {}};
  flink::SourceReader reader;
  reader.vertex_id = "v1";
  reader.name = "Source: orders-source -> Map";
  reader.partitions = std::move(partitions);
  job.sources.push_back(reader);
  flink::FlinkSnapshot snapshot;
  snapshot.jobs.push_back(job);
  return snapshot;
}

kafka::KafkaSnapshot Kafka() {
  kafka::KafkaSnapshot snapshot;
  snapshot.all_topics = {"orders.v2", "audit"};
  snapshot.topic_partitions = {{"orders.v2", 2}};
  snapshot.partitions = {{{"orders.v2", 0}, {0, 1000}}, {{"orders.v2", 1}, {0, 500}}};
  kafka::ConsumerGroup flink_group;
  flink_group.id = "orders-enrichment";
  flink_group.committed = {{{"orders.v2", 0}, 900}, {{"orders.v2", 1}, 450}};
  kafka::ConsumerGroup other;
  other.id = "someone-else";
  other.committed = {{{"orders.v2", 0}, 10}, {{"orders.v2", 1}, 450}};
  snapshot.groups = {other, flink_group};
  return snapshot;
}

config::FlinkClusterConfig Config() {
  config::FlinkClusterConfig config;
  config.name = "f";
  config.kafka_cluster = "prod";
  return config;
}

}  // namespace

TEST_CASE("Flink-side lag and checkpoint gap per partition, with topic sums", "[analysis]") {
  const auto kafka = Kafka();
  const auto joins = analysis::JoinFlinkWithKafka(
      Config(), OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}}),
      {{"prod", &kafka}});
  REQUIRE(joins.size() == 1);
  const auto& join = joins[0];
  CHECK(join.source == "orders-source");
  CHECK(join.kafka_cluster == "prod");
  REQUIRE(join.partitions.size() == 2);
  CHECK(join.partitions[0].topic == "orders.v2");
  CHECK(*join.partitions[0].flink_lag == 1000 - 950);
  CHECK(*join.partitions[0].checkpoint_gap == 950 - 900);
  CHECK(*join.partitions[1].flink_lag == 0);
  CHECK(*join.partitions[1].checkpoint_gap == 50);
  REQUIRE(join.topics.size() == 1);
  CHECK(join.topics[0].flink_lag_sum == 50);
  CHECK(join.topics[0].checkpoint_gap_sum == 100);
}

TEST_CASE("partitions of a topic the source reads that no subtask reads are named, with backlog",
          "[analysis]") {
  auto kafka = Kafka();
  // The topic gained partitions 2 and 3; the job, with partition discovery off, reads 0 and 1.
  kafka.topic_partitions["orders.v2"] = 4;
  kafka.partitions[{"orders.v2", 2}] = {120, 370};
  kafka.partitions[{"orders.v2", 3}] = {{}, 80};  // log start not read: no backlog to tell
  auto flink = OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}});
  const auto joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  REQUIRE(joins.size() == 1);
  REQUIRE(joins[0].topics.size() == 1);
  CHECK(joins[0].topics[0].unread_partitions == 2);
  REQUIRE(joins[0].unread.size() == 2);
  CHECK(joins[0].unread[0].topic == "orders.v2");
  CHECK(joins[0].unread[0].partition == 2);
  CHECK(joins[0].unread[0].backlog == 250);
  CHECK(joins[0].unread[1].partition == 3);
  CHECK_FALSE(joins[0].unread[1].backlog);

  // Every partition read: 0, nothing named.
  kafka.topic_partitions["orders.v2"] = 2;
  const auto covered = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  CHECK(covered[0].topics[0].unread_partitions == 0);
  CHECK(covered[0].unread.empty());

  // The partition count not known: nothing is claimed either way.
  kafka.topic_partitions.clear();
  const auto unknown = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  CHECK_FALSE(unknown[0].topics[0].unread_partitions);
  CHECK(unknown[0].unread.empty());
}

TEST_CASE("the group whose commits equal the job's committedOffset is matched", "[analysis]") {
  const auto kafka = Kafka();
  const auto joins = analysis::JoinFlinkWithKafka(
      Config(), OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}}),
      {{"prod", &kafka}});
  CHECK(*joins[0].group == "orders-enrichment");
  CHECK(joins[0].association == "matched");
}

TEST_CASE("a group that committed again since Flink's last metric refresh still matches",
          "[analysis]") {
  // Flink reports committedOffset 800/400 and a position 850/420 taken up to a refresh ago;
  // the job has checkpointed and committed 900/450 since. Only the group's recent past, where
  // it held 800/400 exactly, says the offsets are the job's.
  const auto kafka = Kafka();
  const auto job = OneJob({{{"orders_v2", 0}, {849, 800}}, {{"orders_v2", 1}, {419, 400}}});
  CHECK_FALSE(analysis::JoinFlinkWithKafka(Config(), job, {{"prod", &kafka}})[0].group);

  using analysis::EarlierCommit;
  std::vector<std::string> asked;
  const analysis::CommittedEarlier earlier = [&](const std::string& cluster,
                                                 const std::string& group,
                                                 const kafka::TopicPartition& tp,
                                                 std::int64_t offset) {
    asked.push_back(cluster + "/" + group);
    if (group != "orders-enrichment") return EarlierCommit::kNo;
    const bool held = (tp.partition == 0 && offset == 800) || (tp.partition == 1 && offset == 400);
    return held ? EarlierCommit::kHeldExactly : EarlierCommit::kNo;
  };
  const auto joins = analysis::JoinFlinkWithKafka(Config(), job, {{"prod", &kafka}}, earlier);
  REQUIRE(joins[0].group);
  CHECK(*joins[0].group == "orders-enrichment");
  CHECK(joins[0].association == "matched");
  CHECK(joins[0].matched_by_history);
  CHECK(std::find(asked.begin(), asked.end(), "prod/orders-enrichment") != asked.end());

  // Held earlier but now behind the job's committedOffset: not the job's group.
  auto behind = Kafka();
  behind.groups[1].committed[{"orders.v2", 0}] = 700;
  CHECK_FALSE(analysis::JoinFlinkWithKafka(Config(), job, {{"prod", &behind}}, earlier)[0].group);
}

TEST_CASE("matching by a group's past: exact beats passed-through, current beats both, ties wait",
          "[analysis]") {
  using analysis::EarlierCommit;
  // The job reports committedOffset 800/400 (stale); both groups are ahead of its position now.
  auto kafka = Kafka();
  kafka.groups[0].committed = {{{"orders.v2", 0}, 905}, {{"orders.v2", 1}, 460}};
  const auto job = OneJob({{{"orders_v2", 0}, {849, 800}}, {{"orders_v2", 1}, {419, 400}}});
  const auto with = [&](std::map<std::string, EarlierCommit> past) {
    return analysis::JoinFlinkWithKafka(Config(), job, {{"prod", &kafka}},
                                        [past](const std::string&, const std::string& group,
                                               const kafka::TopicPartition&, std::int64_t) {
                                          const auto found = past.find(group);
                                          return found == past.end() ? EarlierCommit::kNo
                                                                     : found->second;
                                        })[0];
  };
  // Both passed through 800/400 since the last poll: no telling which one is the job's.
  auto tie = with({{"orders-enrichment", EarlierCommit::kPassedThrough},
                   {"someone-else", EarlierCommit::kPassedThrough}});
  CHECK_FALSE(tie.group);
  CHECK(tie.candidate_groups.size() == 2);
  // One held the job's offsets exactly: that is stronger.
  auto exact = with({{"orders-enrichment", EarlierCommit::kHeldExactly},
                     {"someone-else", EarlierCommit::kPassedThrough}});
  REQUIRE(exact.group);
  CHECK(*exact.group == "orders-enrichment");
  // Only one passed through (a Kafka poll slower than the job's commits): it is the match.
  auto passed = with({{"someone-else", EarlierCommit::kPassedThrough}});
  REQUIRE(passed.group);
  CHECK(*passed.group == "someone-else");
  CHECK(passed.matched_by_history);
  // A group whose current offsets fit wins over any past.
  kafka.groups[1].committed = {{{"orders.v2", 0}, 820}, {{"orders.v2", 1}, 410}};
  auto current = with({{"someone-else", EarlierCommit::kHeldExactly}});
  REQUIRE(current.group);
  CHECK(*current.group == "orders-enrichment");
  CHECK_FALSE(current.matched_by_history);
}

TEST_CASE("two groups that fit equally are not guessed between", "[analysis]") {
  auto kafka = Kafka();
  kafka.groups[0].committed = kafka.groups[1].committed;
  const auto joins = analysis::JoinFlinkWithKafka(
      Config(), OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}}),
      {{"prod", &kafka}});
  CHECK_FALSE(joins[0].group.has_value());
}

TEST_CASE("a configured mapping wins over matching", "[analysis]") {
  auto config = Config();
  config.groups.push_back(
      {*config::Pattern::Compile("orders-.*"), "configured-group", "prod", std::nullopt});
  const auto kafka = Kafka();
  const auto joins = analysis::JoinFlinkWithKafka(config, OneJob({{{"orders_v2", 0}, {1, 2}}}),
                                                  {{"prod", &kafka}});
  CHECK(*joins[0].group == "configured-group");
  CHECK(joins[0].association == "configured");
}

TEST_CASE("a job without commits is associated with nothing, but its lag is known", "[analysis]") {
  const auto kafka = Kafka();
  const auto joins = analysis::JoinFlinkWithKafka(
      Config(), OneJob({{{"orders_v2", 0}, {99, std::nullopt}}}), {{"prod", &kafka}});
  CHECK_FALSE(joins[0].group.has_value());
  CHECK(*joins[0].partitions[0].flink_lag == 900);
  CHECK_FALSE(joins[0].partitions[0].checkpoint_gap.has_value());
}

TEST_CASE("an escaped topic name that fits two real topics is reported, not guessed",
          "[analysis]") {
  auto kafka = Kafka();
  kafka.all_topics = {"orders.v2", "orders_v2"};
  const auto joins = analysis::JoinFlinkWithKafka(Config(), OneJob({{{"orders_v2", 0}, {9, 5}}}),
                                                  {{"prod", &kafka}});
  REQUIRE(joins[0].unresolved.size() == 1);
  CHECK(joins[0].unresolved[0].escaped_topic == "orders_v2");
  CHECK(joins[0].unresolved[0].reason == "ambiguous");
  CHECK(joins[0].partitions.empty());
}

TEST_CASE("a topic the Kafka cluster does not have is reported as unknown", "[analysis]") {
  const auto kafka = Kafka();
  const auto joins =
      analysis::JoinFlinkWithKafka(Config(), OneJob({{{"gone", 0}, {9, 5}}}), {{"prod", &kafka}});
  REQUIRE(joins[0].unresolved.size() == 1);
  CHECK(joins[0].unresolved[0].reason == "unknown");
}

TEST_CASE("with the Kafka cluster down, offsets are still joined but no lag is invented",
          "[analysis]") {
  const auto joins =
      analysis::JoinFlinkWithKafka(Config(), OneJob({{{"orders_v2", 0}, {9, 5}}}), {});
  REQUIRE(joins.size() == 1);
  CHECK(joins[0].partitions.empty());  // without Kafka's topic list the name cannot be mapped
  CHECK(joins[0].unresolved.empty());  // ... and is not wrongly called unknown
}

TEST_CASE("subtasks of a source that hold no split are counted as idle readers", "[analysis]") {
  const auto kafka = Kafka();
  auto flink = OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}});
  flink::FlinkJob& job = flink.jobs[0];
  // Parallelism 3 on a 2-partition topic: subtasks 0 and 1 hold a split, subtask 2 none. Index
  // 5 is a metric left from before a rescale down: not one of the vertex's subtasks now.
  job.vertices = {{"v1", "Source: orders-source -> Map", 3}, {"v2", "Sink", 1}};
  job.sources[0].subtasks_with_splits = {0, 1, 5};
  auto joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  REQUIRE(joins.size() == 1);
  CHECK(joins[0].parallelism == 3);
  CHECK(joins[0].idle_subtasks == 1);

  // Every subtask holds a split: none idle.
  job.vertices[0].parallelism = 2;
  joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  CHECK(joins[0].idle_subtasks == 0);

  // No subtask reports a partition yet (metrics not fetched yet): nothing is claimed.
  job.sources[0].subtasks_with_splits.clear();
  joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  CHECK(joins[0].parallelism == 2);
  CHECK_FALSE(joins[0].idle_subtasks);

  // The source's vertex is not in the job's vertex list: neither is known.
  job.vertices.clear();
  job.sources[0].subtasks_with_splits = {0};
  joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  CHECK_FALSE(joins[0].parallelism);
  CHECK_FALSE(joins[0].idle_subtasks);
}

namespace {

// A job with two sources: orders-source reads orders.v2 (on "prod"), clicks-source reads clicks
// (on "edge"), each committing to its own group.
flink::FlinkSnapshot TwoSourceJob() {
  auto snapshot = OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}});
  flink::SourceReader clicks;
  clicks.vertex_id = "v2";
  clicks.name = "Source: clicks-source";
  clicks.partitions = {{{"clicks", 0}, {69, 70}}};
  snapshot.jobs[0].sources.push_back(clicks);
  return snapshot;
}

kafka::KafkaSnapshot Edge() {
  kafka::KafkaSnapshot snapshot;
  snapshot.all_topics = {"clicks"};
  snapshot.topic_partitions = {{"clicks", 1}};
  snapshot.partitions = {{{"clicks", 0}, {0, 100}}};
  kafka::ConsumerGroup group;
  group.id = "clicks-reader";
  group.committed = {{{"clicks", 0}, 70}};
  snapshot.groups = {group};
  return snapshot;
}

}  // namespace

TEST_CASE("two sources of one job reading two clusters are joined each with its own cluster",
          "[analysis]") {
  const auto prod = Kafka();
  const auto edge = Edge();
  auto config = Config();
  config.kafka_cluster.clear();  // nothing configured: each source's topics and offsets decide
  const auto joins =
      analysis::JoinFlinkWithKafka(config, TwoSourceJob(), {{"prod", &prod}, {"edge", &edge}});
  REQUIRE(joins.size() == 2);
  CHECK(joins[0].source == "orders-source");
  CHECK(joins[0].kafka_cluster == "prod");
  CHECK(joins[0].group == "orders-enrichment");
  CHECK(joins[0].topics.at(0).flink_lag_sum == 50);
  CHECK(joins[1].source == "clicks-source");
  CHECK(joins[1].kafka_cluster == "edge");
  CHECK(joins[1].group == "clicks-reader");
  CHECK(joins[1].partitions.at(0).flink_lag == 30);  // edge's log end 100 - (69 + 1)
  CHECK(joins[1].unresolved.empty());
}

TEST_CASE("a mapping may name the source: one job, two groups on two clusters", "[analysis]") {
  const auto prod = Kafka();
  const auto edge = Edge();
  auto config = Config();  // the Flink cluster's default is prod
  config.groups.push_back({*config::Pattern::Compile("orders-.*"), "clicks-mapped", "edge",
                           *config::Pattern::Compile("clicks-.*")});
  config.groups.push_back(
      {*config::Pattern::Compile("orders-.*"), "orders-mapped", "prod", std::nullopt});
  const auto joins =
      analysis::JoinFlinkWithKafka(config, TwoSourceJob(), {{"prod", &prod}, {"edge", &edge}});
  REQUIRE(joins.size() == 2);
  CHECK(joins[0].kafka_cluster == "prod");
  CHECK(joins[0].group == "orders-mapped");
  CHECK(joins[1].kafka_cluster == "edge");
  CHECK(joins[1].group == "clicks-mapped");
  CHECK(joins[1].association == "configured");
}

TEST_CASE("a topic on two clusters is not guessed between unless one group holds the offsets",
          "[analysis]") {
  auto prod = Kafka();
  auto mirror = Kafka();  // the same topic mirrored, without the job's group
  mirror.groups.clear();
  auto config = Config();
  config.kafka_cluster.clear();
  auto flink = OneJob({{{"orders_v2", 0}, {949, 900}}, {{"orders_v2", 1}, {499, 450}}});
  auto joins = analysis::JoinFlinkWithKafka(config, flink, {{"prod", &prod}, {"mirror", &mirror}});
  CHECK(joins.at(0).kafka_cluster == "prod");  // its group is there
  // A job that commits nothing: nothing tells the two apart.
  flink.jobs[0].sources[0].partitions = {{{"orders_v2", 0}, {949, std::nullopt}}};
  joins = analysis::JoinFlinkWithKafka(config, flink, {{"prod", &prod}, {"mirror", &mirror}});
  CHECK(joins.at(0).kafka_cluster.empty());
  CHECK(joins.at(0).partitions.empty());
}

TEST_CASE("a job that read every record before a transaction marker has no Flink-side lag",
          "[analysis]") {
  auto kafka = Kafka();
  // Partition 0: log end 1000, the job read up to 998, and offset 999 is a commit marker.
  kafka.markers_only = {{{{"orders.v2", 0}, 999}, 1000}};
  const auto joins = analysis::JoinFlinkWithKafka(
      Config(), OneJob({{{"orders_v2", 0}, {998, 999}}, {{"orders_v2", 1}, {489, 450}}}),
      {{"prod", &kafka}});
  REQUIRE(joins.at(0).partitions.size() == 2);
  CHECK(joins[0].partitions[0].flink_lag == 0);
  CHECK(joins[0].partitions[1].flink_lag == 10);  // no marker found there: real records wait
}

TEST_CASE("a read_committed job's Flink-side lag ends at the last stable offset", "[analysis]") {
  auto kafka = Kafka();
  // Partition 0: log end 1000, an open transaction from 980: last stable offset 980; the job
  // read up to 969 and 970 is a commit marker (the record reader, read_committed, found only
  // it up to 980). Partition 1: no transaction open, last stable offset = log end 500.
  kafka.partitions[{"orders.v2", 0}].last_stable = 980;
  kafka.partitions[{"orders.v2", 1}].last_stable = 500;
  kafka.markers_only = {{{{"orders.v2", 0}, 970, true}, 980}};
  auto flink = OneJob({{{"orders_v2", 0}, {969, 950}}, {{"orders_v2", 1}, {489, 450}}});
  flink.jobs[0].read_committed = true;
  auto joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  REQUIRE(joins.at(0).partitions.size() == 2);
  CHECK(joins[0].read_committed);
  CHECK(joins[0].partitions[0].flink_lag == 0);
  CHECK(joins[0].partitions[1].flink_lag == 10);
  // The same positions read read_uncommitted: the open transaction's records are lag, and the
  // read_committed reader's finding is not this reader's.
  flink.jobs[0].read_committed = false;
  joins = analysis::JoinFlinkWithKafka(Config(), flink, {{"prod", &kafka}});
  CHECK(joins[0].partitions[0].flink_lag == 30);
  CHECK(joins[0].partitions[1].flink_lag == 10);
}
