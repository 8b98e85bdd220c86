// AlignFlinkLag: a Flink job's position compared with the log end of the moment it was taken
// (the third stage's second half, after the association picked the job's Kafka cluster).
//
// The JobManager serves metric values refreshed at most every `metrics.fetcher.update-interval`
// (10 s by default), so a position is up to that old: against the latest log end a healthy job
// at 150 records/s showed more lag than its own committed offsets. The time a value was taken
// is bounded below by when lagsight first saw it (less the refresh interval, or less the gap
// since the previous poll, which still served the old value) and by the last refresh (a value
// unchanged for longer than the interval is current as of one interval ago). Against the log
// end of that time the lag does not rise between two refreshes only to fall at the next (that
// would be a sawtooth of lagsight's own making). It is a lower bound where the served value is
// as fresh as the interval says: flink::Collector has the store refresh before it reads (Flink
// answers the request that triggers a refresh from the old store); where that refresh does not
// land within its wait, a value may be one poll older (docs/facts.md).
// It also judges positions beyond the log end (JobHistory::beyond_log_end). Reads the Kafka and
// job histories; writes only the join and the job's judgements.
#pragma once

#include "analysis/flink_join.h"
#include "analysis/job_history.h"
#include "analysis/kafka_history.h"
#include "kafka/snapshot.h"

namespace lagsight::analysis {

// Sets the Flink-side lag and lag in seconds of each of `join`'s partitions as of when its
// position was taken, and its per-topic sums, from `cluster`'s log-end history. `snapshot` is the
// cluster's latest (null: none; then the lag is the plain offset difference). `timing` is the
// job's Flink cluster's.
void AlignFlinkLag(FlinkSourceJoin& join, JobHistory& job, const FlinkPollTiming& timing,
                   const KafkaHistory& cluster, const kafka::KafkaSnapshot* snapshot);

}  // namespace lagsight::analysis
