// The diagnosis of share groups (KIP-932) over synthetic polls at lagsight's defaults: a 15 s
// poll and the default diagnosis settings (5 min window, two polls to confirm). A share group's
// start offsets stand for a consumer group's commits: moving, it progresses; standing while
// records arrive, it is stalled. That a real broker's share consumers read so is
// tests/integration/test_share_groups.py.
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "analysis/analyzer.h"

using namespace lagsight;
using analysis::Cause;

namespace {

constexpr const char* kCluster = "prod";
constexpr const char* kGroup = "jobs-workers";
constexpr double kPollSeconds = 15;  // lagsight's default poll interval

// One Kafka cluster whose topic "jobs" (2 partitions) one share group reads, polled every 15 s.
class ShareWorld {
 public:
  ShareWorld() : analyzer_(config::DiagnosisConfig{}) {}

  std::map<int, std::int64_t> log_end{{0, 1000}, {1, 1000}};
  std::map<int, std::int64_t> start{{0, 1000}, {1, 1000}};
  bool coordinator_lag = false;         // Kafka 4.3+: the coordinator counts the lag
  bool offsets_read = true;             // false: DescribeShareGroupOffsets failed this poll
  std::int64_t acknowledged_ahead = 0;  // acknowledged records past each start offset
  double now = 1'000'000;

  std::shared_ptr<const analysis::Findings> Poll() {
    now += kPollSeconds;
    kafka::KafkaSnapshot snapshot;
    snapshot.all_topics = {"jobs"};
    snapshot.topic_partitions["jobs"] = 2;
    kafka::ShareGroup group;
    group.id = kGroup;
    group.state = "stable";
    group.members = 2;
    group.member_list = {{"m-a", "worker-a", "/10.0.0.1", "", {{"jobs", 0}, {"jobs", 1}}},
                         {"m-b", "worker-b", "/10.0.0.2", "", {{"jobs", 1}}}};
    for (const auto& [partition, end] : log_end) {
      snapshot.partitions[{"jobs", partition}] = {0, end};
      kafka::SharePartition share{{"jobs", partition}, start.at(partition), std::nullopt};
      if (coordinator_lag) share.lag = end - start.at(partition) - acknowledged_ahead;
      if (offsets_read) group.partitions.push_back(share);
    }
    group.offsets_known = offsets_read;
    snapshot.share_groups.push_back(group);
    poll_ = analysis::DeriveKafkaPoll(std::move(snapshot), poll_);
    analysis::SourcesView view;
    view.kafka[kCluster] = poll_;
    return analyzer_.ObserveKafka(kCluster, view, now);
  }

  // Polls `polls` times, calling `step` before each; returns every active cause seen.
  template <typename Step>
  std::set<Cause> Run(int polls, Step step) {
    std::set<Cause> seen;
    for (int i = 0; i < polls; ++i) {
      step(i);
      last = Poll();
      if (const analysis::DiagnosisFinding* finding = Finding()) seen.insert(finding->cause);
    }
    return seen;
  }

  const analysis::DiagnosisFinding* Finding() const {
    for (const analysis::DiagnosisFinding& finding : last->diagnosis) {
      if (finding.group == kGroup && finding.job_id.empty()) return &finding;
    }
    return nullptr;
  }

  std::shared_ptr<const analysis::Findings> last;

 private:
  analysis::Analyzer analyzer_;
  analysis::KafkaPoll poll_;
};

// 10 records/s arrive on each partition; `acked` of them are acknowledged each second.
void Second(ShareWorld& world, int seconds, std::int64_t acked_per_second) {
  for (auto& [partition, end] : world.log_end) {
    end += 10 * seconds;
    world.start[partition] += acked_per_second * seconds;
  }
}

}  // namespace

TEST_CASE("Share group: acknowledging slower than production is really behind, at defaults",
          "[analysis][share]") {
  ShareWorld world;
  const auto seen = world.Run(30, [&](int) { Second(world, 15, 4); });
  REQUIRE(world.Finding() != nullptr);
  CHECK(world.Finding()->cause == Cause::kReallyBehind);
  CHECK_FALSE(seen.contains(Cause::kStalled));
  // The lag judged is the one exported: log end - start offset without the coordinator's count.
  const std::int64_t upper_bound = (world.log_end[0] - world.start[0]) * 2;
  CHECK(world.Finding()->kafka_lag == upper_bound);
  CHECK(world.Finding()->largest_lag == upper_bound / 2);
}

TEST_CASE("Share group: start offsets that stand while records arrive are stalled after a window",
          "[analysis][share]") {
  ShareWorld world;
  world.Run(12, [&](int) { Second(world, 15, 10); });  // keeping up
  REQUIRE(world.Finding() != nullptr);
  CHECK(world.Finding()->cause == Cause::kHealthy);
  // Every consumer stops: nothing is acknowledged, records still arrive.
  int stalled_at = -1;
  world.Run(40, [&](int poll) {
    if (stalled_at < 0 && world.Finding() != nullptr && world.Finding()->cause == Cause::kStalled) {
      stalled_at = poll;
    }
    Second(world, 15, 0);
  });
  CHECK(world.Finding()->cause == Cause::kStalled);
  // Not before a whole window (5 min, 20 polls) of standing start offsets, and within two
  // polls of confirmation after it.
  CHECK(stalled_at >= 20);
  CHECK(stalled_at <= 24);
  // The holders of the most lagging partition are named for the status page.
  CHECK_FALSE(world.Finding()->holders.empty());
}

TEST_CASE("Share group: the coordinator's lag is what is judged where the broker counts it",
          "[analysis][share]") {
  ShareWorld world;
  world.coordinator_lag = true;
  world.acknowledged_ahead = 7;  // records past each start offset already acknowledged
  world.Run(12, [&](int) { Second(world, 15, 10); });
  REQUIRE(world.Finding() != nullptr);
  CHECK(world.Finding()->kafka_lag == (world.log_end[0] - world.start[0] - 7) * 2);
}

TEST_CASE("Share group: an idle topic with a backlog is healthy, never stalled",
          "[analysis][share]") {
  ShareWorld world;
  world.start = {{0, 900}, {1, 900}};  // 100 records each not acknowledged, nothing arrives
  const auto seen = world.Run(60, [](int) {});
  CHECK(seen == std::set<Cause>{Cause::kHealthy});
}

TEST_CASE("Share group: one partition whose start offset stands while the other moves is stuck",
          "[analysis][share]") {
  ShareWorld world;
  world.Run(40, [&](int poll) {
    world.log_end[0] += 150;
    world.log_end[1] += 150;
    world.start[0] += 150;
    if (poll < 4) world.start[1] += 150;  // then partition 1's records wait unacknowledged
  });
  const analysis::DiagnosisFinding* finding = world.Finding();
  REQUIRE(finding != nullptr);
  CHECK(std::find(finding->evidence.begin(), finding->evidence.end(), Cause::kPartitionStuck) !=
        finding->evidence.end());
  CHECK(finding->stuck_partitions == std::vector<kafka::TopicPartition>{{"jobs", 1}});
  // Both members are assigned partition 1: records are shared, both are named.
  std::set<std::string> holders;
  for (const analysis::PartitionHolder& holder : finding->holders) {
    if (holder.partition == kafka::TopicPartition{"jobs", 1}) holders.insert(holder.client_id);
  }
  CHECK(holders == std::set<std::string>{"worker-a", "worker-b"});
}

TEST_CASE("Share group: start offsets reset backwards are rewinding", "[analysis][share]") {
  ShareWorld world;
  world.Run(12, [&](int) { Second(world, 15, 10); });
  world.Run(1, [&](int) {
    Second(world, 15, 10);
    world.start[0] -= 500;  // kafka-share-groups --reset-offsets to an earlier offset
  });
  world.Run(2, [&](int) { Second(world, 15, 10); });
  REQUIRE(world.Finding() != nullptr);
  CHECK(std::find(world.Finding()->evidence.begin(), world.Finding()->evidence.end(),
                  Cause::kRewinding) != world.Finding()->evidence.end());
}

TEST_CASE("Share group: while its progress cannot be read, its last verdict stands",
          "[analysis][share]") {
  ShareWorld world;
  world.Run(30, [&](int) { Second(world, 15, 4); });  // behind, as in the first case
  REQUIRE(world.Finding() != nullptr);
  REQUIRE(world.Finding()->cause == Cause::kReallyBehind);
  // DescribeShareGroupOffsets fails for 10 minutes: the history alone would no longer show a
  // trend, and the group would turn healthy while nothing is known of it.
  world.offsets_read = false;
  const auto seen = world.Run(40, [&](int) { Second(world, 15, 4); });
  CHECK(seen == std::set<Cause>{Cause::kReallyBehind});
  world.offsets_read = true;
  world.Run(3, [&](int) { Second(world, 15, 4); });
  CHECK(world.Finding()->cause == Cause::kReallyBehind);
}
