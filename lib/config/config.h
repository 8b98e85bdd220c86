// The lagsight configuration: what to poll and how, read from strict YAML.
//
// Strict means every unknown key, wrong type, bad regular expression, missing or duplicate name
// and nonsensical value is an error naming the file, the line, the key path and what is wrong:
// an exporter that silently ignores a misspelt "grups:" filter exports the wrong thing for months.
// "${VAR}" in any string value is replaced by the environment variable VAR (an unset variable is
// an error), so secrets stay out of the file; "$$" is a literal "$".
// Config values are plain data: copyable, comparable, safe to share once built.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "config/name_filter.h"
#include "config/shard.h"

namespace lagsight::config {

// How finely a group's Kafka-side lag series break down (cardinality):
//   partition  every series per group-partition (committed offset, lag, lag in seconds, ...);
//   topic      per group-topic sums and counts instead (topic lag, uncommitted partitions);
//   group      per group only (sum and max of the lag, max lag in seconds, ...).
enum class SeriesLevel { kPartition, kTopic, kGroup };

// A granularity for the group-topic pairs it matches; a missing pattern matches every name.
struct SeriesGranularityRule {
  std::optional<Pattern> group;  // full match on the group id
  std::optional<Pattern> topic;  // full match on the topic
  SeriesLevel level = SeriesLevel::kPartition;

  friend bool operator==(const SeriesGranularityRule&, const SeriesGranularityRule&) = default;
};

// What one Kafka cluster's series may cost. Coarser series keep the sums, so nothing is
// dropped without a trace: what a budget coarsens is counted in a metric and logged.
struct KafkaSeriesConfig {
  std::vector<SeriesGranularityRule> granularity;  // the first rule that matches wins
  bool partition_committed_offsets = false;        // lagsight_kafka_group_committed_offset
  bool partition_lag_seconds = false;              // lagsight_kafka_group_lag_seconds
  bool partition_owners = false;                   // lagsight_kafka_group_partition_owner
  // Most Kafka-side group series the cluster exports (0: no limit). Over it, the group-topic
  // pairs with the most partitions go to topic level first, then to group level.
  std::size_t budget = 0;

  friend bool operator==(const KafkaSeriesConfig&, const KafkaSeriesConfig&) = default;
};

struct KafkaClusterConfig {
  std::string name;  // the kafka_cluster label
  std::vector<std::string> bootstrap_servers;
  // Passed to librdkafka as they are (SASL, TLS, ...), after lagsight's own defaults.
  std::map<std::string, std::string> properties;
  std::chrono::milliseconds poll_interval{std::chrono::seconds(15)};
  // Bound on every single request to the cluster.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  // Bound on one whole poll (all requests of it); a poll that overruns reports up = 0.
  std::chrono::milliseconds poll_timeout{std::chrono::seconds(60)};
  // Groups whose offsets are fetched at the same time; bounds the load on the coordinators.
  // 64: at 20,000 groups on one broker, reading the committed offsets took 2.58-2.70 s against
  // 2.84-2.92 s with 16, for the same CPU (docs/benchmarks.md#measured); each request is one small
  // OffsetFetch.
  int max_concurrent_requests = 64;
  // Read the committed offsets of many groups per OffsetFetch (KIP-709, Kafka 3.0+) where the
  // cluster is reached over PLAINTEXT or TLS; groups it cannot answer, and every group otherwise,
  // are read one request per group through librdkafka (kafka/offset_fetch_client.h).
  bool batched_offset_fetch = true;
  // Records read per poll to learn the timestamp of a group's oldest unconsumed record (lag in
  // seconds); positions already read are cached and cost nothing. 0 turns the reads off.
  int lag_seconds_fetch_budget = 500;
  NameFilter groups;
  NameFilter topics;
  // Groups (full match on the id) whose consumers read with isolation.level=read_committed:
  // their lag is counted up to the last stable offset, not the high watermark, since records of
  // a transaction still open are not theirs to read yet, nor an aborted transaction's ever.
  std::vector<Pattern> read_committed_groups;
  KafkaSeriesConfig series;
  // The groups this instance owns (from the command line, not the file): the others are not read.
  Shard shard;

  friend bool operator==(const KafkaClusterConfig&, const KafkaClusterConfig&) = default;
};

// An explicit association of Flink jobs (by name) with the consumer group their source commits to.
struct FlinkGroupMapping {
  Pattern job;  // full match on the job name
  std::string group;
  std::string kafka_cluster;  // empty: the Flink cluster's kafka_cluster
  // Full match on the source label (the source operator's name); none: every source of the job.
  // Lets the two sources of one job read two clusters, or commit to two groups.
  std::optional<Pattern> source;

  friend bool operator==(const FlinkGroupMapping&, const FlinkGroupMapping&) = default;
};

struct FlinkClusterConfig {
  std::string name;      // the flink_cluster label
  std::string rest_url;  // http(s)://host:port[/prefix] of the JobManager's REST API
  // The Kafka cluster (by name) its sources read; empty: match against every configured one.
  std::string kafka_cluster;
  std::chrono::milliseconds poll_interval{std::chrono::seconds(15)};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  int max_concurrent_requests = 4;
  std::size_t max_response_bytes = 32 * 1024 * 1024;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  bool tls_insecure_skip_verify = false;
  std::string username;  // basic auth, with password
  std::string password;
  std::string bearer_token;
  NameFilter jobs;
  std::vector<FlinkGroupMapping> groups;
  // Jobs (full match on the name) whose Kafka sources read with isolation.level=read_committed;
  // as KafkaClusterConfig::read_committed_groups, for their Flink-side lag.
  std::vector<Pattern> read_committed_jobs;
  // The jobs this instance owns (from the command line, not the file; see JobOwnerKey): the
  // others are not read.
  Shard shard;

  friend bool operator==(const FlinkClusterConfig&, const FlinkClusterConfig&) = default;
};

// An external store where Flink jobs keep their own position (e.g. a Redis hash written after
// their sink, read back into setStartingOffsets at restart): a third position beside the
// Kafka-committed offset and the job's currentOffset. Each store is a source of its own.
struct PositionStoreConfig {
  std::string name;  // the store label
  // redis://host:port[/db]; the only kind of store so far (Debian's hiredis has no TLS).
  std::string host;
  int port = 6379;
  int database = 0;
  std::string username;  // Redis 6 ACL user; empty: AUTH with the password alone
  std::string password;
  std::string flink_cluster;  // empty: the matching jobs of every Flink cluster
  Pattern job;                // full match on the job name
  // Templates: {job} and {topic} in the key, {topic} and {partition} in the field; the value
  // is the next offset to read (what setStartingOffsets takes).
  std::string key;
  std::string field;
  std::string updated_at_field;  // optional: a field of the same hash, unix milliseconds
  std::chrono::milliseconds poll_interval{std::chrono::seconds(15)};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};

  friend bool operator==(const PositionStoreConfig&, const PositionStoreConfig&) = default;
};

// A lateness objective: how old (lag in seconds) the data of the Flink jobs whose name, or of
// the consumer groups whose id, fully matches `pattern` may get. The first matching one applies.
struct LatenessTarget {
  enum class Of { kJobs, kGroups };
  Of of = Of::kJobs;
  Pattern pattern;
  std::chrono::milliseconds target{};

  friend bool operator==(const LatenessTarget&, const LatenessTarget&) = default;
};

// How a Flink job keeps its position, as the operator states it (first matching rule): a job that
// keeps it elsewhere by design (`external`: a store; `none`: nowhere, e.g. it always starts at
// latest) never gets offsets_missing; a job stated to commit on checkpoints (`checkpoint`) gets it
// as soon as it commits nothing, mapping or not; a job whose Kafka client commits on its own
// timer (`auto`: the legacy FlinkKafkaConsumer without checkpointing, enable.auto.commit) gets it
// only when its group holds no offsets. Jobs a `positions:` store is for are `external` unless a
// rule says otherwise.
struct CommitModeRule {
  enum class Mode { kCheckpoint, kAuto, kExternal, kNone };
  Pattern job;  // full match on the job name
  Mode mode = Mode::kCheckpoint;

  friend bool operator==(const CommitModeRule&, const CommitModeRule&) = default;
};

// How the diagnosis judges each job<->group pair and each Kafka-only group (docs/diagnosis.md).
struct DiagnosisConfig {
  // The span of history the trends (growing lag, failing commits, sawtooth) are judged over.
  std::chrono::milliseconds window{std::chrono::minutes(5)};
  // Consecutive Kafka polls a new cause must be the verdict of before it replaces the active one.
  int confirm_polls = 2;
  // Lag (records) below which a lag is "small": no really_behind, no long_checkpoint_interval.
  std::int64_t lag_threshold_records = 1000;
  // ... and, where the input rate is known, at least this much input (lag / records per second):
  // 1,000 records is noise at 100k records/s.
  std::chrono::milliseconds lag_threshold{std::chrono::seconds(30)};
  // offsets_expiring once less than this share of offsets.retention.minutes is left.
  double expiry_warning_ratio = 0.25;
  // checkpoints_failing once the latest completed checkpoint is older than this many expected
  // gaps (max(interval, min pause + last duration)) and none is under way.
  double checkpoint_stale_gaps = 3;
  // commits_failing once more than this share of the window's commit attempts failed.
  double commit_failure_ratio = 0.5;
  // A Kafka-only group is stalled after this many of its own commit periods without a commit
  // while records arrive (never less than the window).
  double stalled_commit_periods = 3;
  // restart_loop once the job restarted this many times within the window.
  int restart_loop_restarts = 3;
  // A job that vanished is job_gone after this long (a redeploy takes less), while its group lags.
  std::chrono::milliseconds job_gone_after{std::chrono::minutes(2)};
  // The time a job that is behind should take to drain its backlog: the parallelism lagsight
  // recommends for its bottleneck is the one that does it this fast (the Flink Kubernetes
  // operator's autoscaler catches up within 5 minutes by default too).
  std::chrono::milliseconds catch_up_target{std::chrono::minutes(5)};
  // Exported as gauges for the "late beyond target" alerts; none by default.
  std::vector<LatenessTarget> lateness_targets;
  // Stated commit modes (diagnosis.commit_modes), then one `external` rule per positions: store.
  std::vector<CommitModeRule> commit_modes;

  friend bool operator==(const DiagnosisConfig&, const DiagnosisConfig&) = default;
};

// What decides which shard owns a Flink job: the group of the first mapping whose job pattern
// matches its name (so the job is read where its group is), else the job's name.
std::string_view JobOwnerKey(const FlinkClusterConfig& cluster, std::string_view job_name);

struct Config {
  std::vector<KafkaClusterConfig> kafka;
  std::vector<FlinkClusterConfig> flink;
  std::vector<PositionStoreConfig> positions;
  DiagnosisConfig diagnosis;

  friend bool operator==(const Config&, const Config&) = default;
};

// Looks up an environment variable; a seam so tests need not touch the real environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnvironment();

// Gives every cluster of `config` the shard the command line chose.
void ApplyShard(const Shard& shard, Config& config);

// Parses YAML text. `source_name` (usually the file path) starts every error message.
Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source_name,
                           const EnvLookup& env);

// The text of the configuration file, within the bound of every file lagsight reads; the error
// says why the file cannot be read. The daemon keeps the text to tell an unchanged file on reload.
Result<std::string> ReadConfigFile(const std::string& path);

}  // namespace lagsight::config
