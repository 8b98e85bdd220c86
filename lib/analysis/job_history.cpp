#include "analysis/job_history.h"

#include <algorithm>
#include <set>
#include <vector>

#include "analysis/analysis_time.h"
#include "analysis/flink_join.h"

namespace lagsight::analysis {
namespace {

// A job that vanished is forgotten (its group judged on its own) this many windows after it
// became job_gone.
constexpr double kForgetGoneJobWindows = 3;

// The job's lifecycle and counters at this poll.
void RecordJob(JobHistory& history, const flink::FlinkJob& job, bool fresh, double now) {
  const bool running = job.overview.state == "RUNNING";
  if (fresh) {
    history.running_since =
        job.overview.start_time_ms ? static_cast<double>(*job.overview.start_time_ms) / 1000 : now;
  }
  if (running && history.not_running_since) {
    history.running_since = now;
    history.not_running_since.reset();
  } else if (!running && !history.not_running_since) {
    history.not_running_since = now;
  }
  if (const auto& restarts = job.overview.num_restarts) {
    // A restart between two polls (the job was never seen away from RUNNING).
    if (!fresh && running && history.num_restarts && *restarts > *history.num_restarts) {
      history.running_since = now;
    }
    history.num_restarts = restarts;
  }
  // A job that is not running may have its checkpoint statistics unanswered: then the
  // counts are defaults, and the last ones known stand (zeros would read as a reset).
  JobSample sample{now, static_cast<double>(job.checkpoints.counts.completed),
                   static_cast<double>(job.checkpoints.counts.failed),
                   static_cast<double>(history.num_restarts.value_or(0)),
                   job.checkpoints.counts.in_progress > 0};
  if (!job.checkpoint_stats_reported && !history.samples.empty()) {
    sample.completed = history.samples.back().completed;
    sample.failed = history.samples.back().failed;
  }
  history.samples.Add(sample);
}

// Each source's commit counters and the positions its reader served (first served no earlier
// than `taken_at_least`).
void RecordSources(JobHistory& history, const flink::FlinkJob& job, KafkaHistories& kafka,
                   double taken_at_least, double now) {
  const std::vector<std::string> labels = SourceLabels(job);
  for (std::size_t i = 0; i < job.sources.size(); ++i) {
    const flink::SourceReader& reader = job.sources[i];
    auto& series = history.sources[labels[i]];
    const double succeeded = reader.commits_succeeded.value_or(0);
    if (!series.empty() && succeeded > series.back().succeeded) {
      // A successful commit refreshes the group's offsets at the broker even when they did
      // not move: count it for the expiry clock of the group it is associated with.
      const auto association = history.associations.find(labels[i]);
      if (association != history.associations.end()) {
        auto kafka_cluster = kafka.find(association->second.kafka_cluster);
        if (kafka_cluster != kafka.end()) {
          kafka_cluster->second.NoteCommit(association->second.group, now);
        }
      }
    }
    bool committed_known = false;
    for (const auto& [tp, offsets] : reader.partitions) {
      committed_known |= offsets.committed.has_value();
      if (!offsets.current) continue;
      auto [taken, inserted] = history.positions_taken.try_emplace(
          {labels[i], tp.escaped_topic, tp.partition}, *offsets.current, taken_at_least);
      if (!inserted && taken->second.first != *offsets.current) {
        taken->second = {*offsets.current, taken_at_least};
      }
    }
    const bool kafka_client_commits =
        reader.connector == flink::SourceConnector::kFlinkKafkaConsumer &&
        job.checkpoint_stats_reported && !job.checkpoints.enabled;
    series.Add(
        {now, succeeded, reader.commits_failed.value_or(0), committed_known, kafka_client_commits});
  }
}

// A job absent from this poll is missing, not gone: a blip must not rebuild its state. It is
// forgotten once a running job took its name (a redeploy) or long after it became job_gone.
void ForgetMissingJobs(const std::string& flink_cluster, JobHistories& jobs,
                       const std::set<std::string>& present,
                       const std::set<std::string>& running_names, double forget_after,
                       double now) {
  for (auto& [job_id, history] : jobs) {
    if (history.flink_cluster != flink_cluster || present.contains(job_id)) continue;
    if (!history.missing_since) history.missing_since = now;
    history.latest = nullptr;
  }
  std::erase_if(jobs, [&](const auto& entry) {
    const JobHistory& history = entry.second;
    return history.flink_cluster == flink_cluster && history.missing_since &&
           (running_names.contains(history.name) || now - *history.missing_since > forget_after);
  });
  // A job in CANCELLING next to its running successor of the same name is handed over.
  std::erase_if(jobs, [&](const auto& entry) {
    const JobHistory& history = entry.second;
    return history.flink_cluster == flink_cluster && Stopping(history.state) &&
           running_names.contains(history.name);
  });
}

}  // namespace

double ForgetJobAfter(const config::DiagnosisConfig& config) {
  return Seconds(config.job_gone_after) + kForgetGoneJobWindows * Seconds(config.window);
}

void RecordFlink(const std::string& flink_cluster, const flink::FlinkSnapshot& snapshot,
                 FlinkPollTiming& timing, JobHistories& jobs, KafkaHistories& kafka,
                 double forget_after, double now) {
  const std::optional<double> previous_poll =
      timing.polled_at > 0 ? std::optional<double>(timing.polled_at) : std::nullopt;
  timing.polled_at = now;
  timing.requested_at = KnownAt(snapshot.requested_at, now);
  if (snapshot.metrics_fetch_interval_ms && *snapshot.metrics_fetch_interval_ms > 0) {
    timing.metrics_fetch_interval = *snapshot.metrics_fetch_interval_ms / 1000;
  }
  // A value first served now was taken by the JobManager's fetcher at most one refresh ago,
  // and after the previous poll (which still served the old value).
  const double refresh = timing.metrics_fetch_interval;
  const double taken_at_least =
      now - (previous_poll ? std::min(refresh, now - *previous_poll) : refresh);
  std::set<std::string> present;
  std::set<std::string> running_names;
  for (const flink::FlinkJob& job : snapshot.jobs) {
    present.insert(job.overview.id);
    const bool fresh = !jobs.contains(job.overview.id);
    JobHistory& history = jobs[job.overview.id];
    history.flink_cluster = flink_cluster;
    history.name = job.overview.name;
    history.state = job.overview.state;
    history.latest = &job;
    history.missing_since.reset();
    if (job.overview.state == "RUNNING") running_names.insert(job.overview.name);
    RecordJob(history, job, fresh, now);
    RecordSources(history, job, kafka, taken_at_least, now);
  }
  ForgetMissingJobs(flink_cluster, jobs, present, running_names, forget_after, now);
}

bool Stopping(const std::string& state) { return state == "CANCELLING" || state == "SUSPENDED"; }

bool Restarting(const JobHistory& job) {
  if (!job.not_running_since) return false;
  // CREATED / INITIALIZING of a job never seen running is a start, not a restart.
  return job.state == "RESTARTING" || job.state == "FAILING" || job.num_restarts.value_or(0) > 0;
}

std::string CommitMode(const ThinningSeries<SourceSample>& series,
                       const ThinningSeries<JobSample>& job) {
  if (series.empty() || job.empty()) return "unknown";
  const SourceSample& latest = series.back();
  if (latest.kafka_client_commits) return "auto";
  if (latest.succeeded > 0 || latest.failed > 0 || latest.committed_known) return "checkpoint";
  // Two checkpoints completed while the source was watched: a source that commits would have
  // committed (the first commit on a fresh broker can take one checkpoint longer).
  const double first_seen = series.samples().front().time;
  double completed_at_first = 0;
  for (const JobSample& sample : job.samples()) {
    if (sample.time <= first_seen) completed_at_first = sample.completed;
  }
  return job.back().completed - completed_at_first >= 2 ? "none" : "unknown";
}

}  // namespace lagsight::analysis
