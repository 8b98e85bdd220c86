"""The diagnosis on real Kafka of offsets that expire under a short broker retention.

A broker of its own whose ``offsets.retention.minutes`` is 1, with two groups racing it at once: a
simple group without a job is ``offsets_expiring`` before Kafka drops it (and lagsight drops it
too), and a Flink job with commits off loses its configured group's offsets: ``offsets_missing``.
Ground truth from the broker's configuration, its OffsetFetch and ListGroups answers, Kafka's own
tools and the Flink REST API. Results go to docs/diagnosis-results.md (scenario_report.py);
``LAGSIGHT_DIAG_GROUND_TRUTH_ONLY=1`` runs only the real-system part.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from diagnosis_kafka_support import (DETECT_TIMEOUT, FLINK_CLUSTER, FLINK_LINE, GROUND_TRUTH_ONLY,
                                     Lagsights, assert_detected, diagnosis_config, one_value,
                                     series_naming, tool_groups, tool_offsets, watch_pair)
from flink_job import FlinkJob, JobSpec
from kafka_broker import KafkaBroker
from scenario_report import DiagnosisWatch
from workload import GroupExpiryWatch, commit_without_joining, create_topic, produce

# Kafka's minimum retention is one minute; offsets older than that go at the next check.
RETENTION_MINUTES = 1
RETENTION_CHECK_MS = 5000
# Warn when less than half the retention is left: 30 s after the last commit.
EXPIRY_WARNING_RATIO = 0.5


def retention_seconds_from_broker(bootstrap: str) -> float:
    """offsets.retention.minutes as the broker itself reports it, in seconds."""
    configs = kafka.broker_configs(bootstrap)
    assert configs["offsets.retention.minutes"] == str(RETENTION_MINUTES)
    assert configs["offsets.retention.check.interval.ms"] == str(RETENTION_CHECK_MS)
    return RETENTION_MINUTES * 60.0


def rest_source_state(flink: FlinkJob, jid: str) -> tuple[dict[int, int], float]:
    """The reader's currentOffset per partition and commitsSucceeded (summed), from REST."""
    vertex = next(v["id"] for v in flink.rest_get(f"/jobs/{jid}")[1]["vertices"]
                  if "Source" in v["name"])
    ids = [m["id"] for m in flink.vertex_metrics(jid, vertex)
           if m["id"].endswith((".currentOffset", ".KafkaSourceReader.commitsSucceeded"))]
    offsets: dict[int, int] = {}
    commits = 0.0
    for metric in flink.vertex_metrics(jid, vertex, ids) if ids else []:
        if metric["id"].endswith(".commitsSucceeded"):
            commits += float(metric["value"])
        else:
            partition = int(re.search(r"\.partition\.(\d+)\.currentOffset$", metric["id"])[1])
            offsets[partition] = int(float(metric["value"]))
    return offsets, commits


@dataclass
class RetentionRun:
    """A broker whose offsets retention is one minute, with two groups racing it at once.

    - ``kafka_group``: a simple group without a job, committed once just after lagsight
      started (so lagsight saw the commit happen): offsets_expiring, then gone.
    - ``flink_group``: the configured group of a Flink job with commits switched off, committed
      once just before the job started from those offsets: once they expire the pair has no
      offsets, offsets_missing.
    Both retention clocks run during one minute, which is why they share one module run.
    """
    broker: KafkaBroker
    retention: float
    lagsight: LagsightProcess
    flink: FlinkJob
    job: str
    jid: str
    topic: str
    kafka_group: str
    kafka_committed_wall: float
    kafka_committed_at: float
    flink_group: str
    flink_committed_wall: float
    launched_at: float
    kafka_watch: DiagnosisWatch
    flink_watch: DiagnosisWatch
    expiry: GroupExpiryWatch

    def wait_for_expiry(self, group: str) -> tuple[float, float]:
        """(offsets gone, group gone) as the broker answered (time.time()), once Kafka's own
        tool agrees that the group is gone."""
        offsets_gone, group_gone = self.expiry.wait_gone(group, self.retention + 90)
        assert group not in tool_groups(self.broker.bootstrap)
        assert tool_offsets(self.broker.bootstrap, group) == {}
        return offsets_gone, group_gone


@pytest.fixture(scope="module")
def retention_run(lagsight_binary: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[RetentionRun]:
    work_dir = tmp_path_factory.mktemp("short-retention")
    prefix = f"dr-{uuid.uuid4().hex[:6]}"
    topic, kafka_group, flink_group = f"{prefix}-t", f"{prefix}-alone", f"{prefix}-flink"
    job = f"{prefix}-job"
    broker = KafkaBroker(work_dir / "kafka", extra_properties={
        "offsets.retention.minutes": str(RETENTION_MINUTES),
        "offsets.retention.check.interval.ms": str(RETENTION_CHECK_MS)})
    launcher = Lagsights(lagsight_binary, work_dir)
    flink: FlinkJob | None = None
    watches: list[DiagnosisWatch] = []
    expiry: GroupExpiryWatch | None = None
    try:
        broker.start()
        bootstrap = broker.bootstrap
        retention = retention_seconds_from_broker(bootstrap)
        create_topic(bootstrap, topic, 2)
        produce(bootstrap, topic, [100, 100])
        # Offsets from an earlier life of the job's group; the job starts from them.
        commit_without_joining(bootstrap, flink_group, {(topic, 0): 20, (topic, 1): 20})
        flink_committed_wall = time.time()
        spec = JobSpec(job, [topic], group=flink_group, start="committed", commit=False,
                       checkpoint_ms=1000)
        flink = FlinkJob(FLINK_LINE, [spec], work_dir / "flink", bootstrap=bootstrap)
        flink.start()
        lagsight = launcher.start(diagnosis_config(
            bootstrap, groups=[f"{prefix}-.*"], expiry_warning_ratio=EXPIRY_WARNING_RATIO,
            flink=[{"name": FLINK_CLUSTER, "rest_url": flink.rest_url, "kafka_cluster": CLUSTER,
                    "poll_interval": "1s", "request_timeout": "5s",
                    "groups": [{"job": job, "group": flink_group}]}]))
        launched_at = time.monotonic()
        flink_watch = watch_pair(lagsight, flink_group, job, t0=launched_at)
        watches.append(flink_watch)
        commit_without_joining(bootstrap, kafka_group, {(topic, 0): 10, (topic, 1): 10})
        kafka_committed_wall, kafka_committed_at = time.time(), time.monotonic()
        kafka_watch = watch_pair(lagsight, kafka_group, t0=kafka_committed_at)
        watches.append(kafka_watch)
        expiry = GroupExpiryWatch(bootstrap, [kafka_group, flink_group])
        yield RetentionRun(broker, retention, lagsight, flink, job, flink.jobs[job], topic,
                           kafka_group, kafka_committed_wall, kafka_committed_at, flink_group,
                           flink_committed_wall, launched_at, kafka_watch, flink_watch, expiry)
    finally:
        if expiry is not None:
            expiry.close()
        for watch in watches:
            watch.close()
        try:
            launcher.stop_all()
        finally:
            if flink is not None:
                flink.stop()
            broker.stop()


@pytest.fixture
def retention_logs(request, retention_run: RetentionRun) -> RetentionRun:
    _register_log_for_failures(request, "lagsight log", retention_run.lagsight.log_file)
    _register_log_for_failures(request, "short-retention broker log",
                               retention_run.broker.log_file)
    _register_log_for_failures(request, "flink log", retention_run.flink.log_file)
    return retention_run


def test_offsets_expiring_then_expired(retention_logs, diagnosis_results):
    """A simple group committed once: offsets_expiring before the broker's retention runs out,
    then Kafka drops the group and lagsight drops it too."""
    run = retention_logs
    bootstrap, group, topic, lagsight = run.broker.bootstrap, run.kafka_group, run.topic, \
        run.lagsight
    result = diagnosis_results("Kafka-only offsets_expiring: a group committed once under a "
                               f"{RETENTION_MINUTES}-minute offsets retention",
                               "offsets_expiring")
    result.watch = run.kafka_watch
    result.note(f"broker offsets.retention.minutes={RETENTION_MINUTES} (kafka-configs), "
                f"expiry_warning_ratio {EXPIRY_WARNING_RATIO}: warning due "
                f"{run.retention * (1 - EXPIRY_WARNING_RATIO):.0f} s after the commit")
    if time.time() < run.kafka_committed_wall + run.retention - 10:
        assert tool_offsets(bootstrap, group) == {(topic, 0): (10, 100), (topic, 1): (10, 100)}

    if not GROUND_TRUTH_ONLY:
        expiry = "lagsight_kafka_group_offsets_expiry_seconds"
        metrics = lagsight.wait_for(lambda m: promtext.select(m, expiry, group=group),
                                    "the group's expiry estimate")
        assert one_value(metrics, "lagsight_kafka_offsets_retention_seconds",
                         kafka_cluster=CLUSTER) == run.retention
        first = one_value(metrics, expiry, group=group)
        first_expected = run.retention - (time.time() - run.kafka_committed_wall)
        # lagsight first sees the commit at its next poll: up to a poll (and a scrape) late.
        assert first_expected - 1 <= first <= first_expected + 4, (first, first_expected)
        time.sleep(3)
        second = one_value(lagsight.scrape(), expiry, group=group)
        assert first - 5 <= second < first, f"the expiry estimate must count down: {first} {second}"

        seconds = assert_detected(run.kafka_watch, "offsets_expiring", run.retention + 30)
        earliest = run.retention * (1 - EXPIRY_WARNING_RATIO)
        assert earliest - 2 <= seconds, f"offsets_expiring after {seconds} s, before {earliest} s"
        # Still there in Kafka at the warning: it warned before the loss, not after.
        assert group in tool_groups(bootstrap)

    offsets_gone, group_gone = run.wait_for_expiry(group)
    result.note(f"broker: offsets gone {offsets_gone - run.kafka_committed_wall:.0f} s and the "
                f"group gone {group_gone - run.kafka_committed_wall:.0f} s after the commit "
                f"(OffsetFetch/ListGroups every 0.5 s; kafka-consumer-groups agrees)")
    if GROUND_TRUTH_ONLY:
        return
    metrics = lagsight.wait_for_fresh_poll(group_gone)
    assert series_naming(metrics, "group", group) == [], "lagsight still exports the group"


def test_offsets_missing_after_expiry_flink(retention_logs, diagnosis_results):
    """A Flink job with commits off and a configured group whose old offsets expire under the
    broker's retention: the pair loses its group's offsets, cause offsets_missing."""
    run = retention_logs
    bootstrap, group, topic, flink, jid = run.broker.bootstrap, run.flink_group, run.topic, \
        run.flink, run.jid
    result = diagnosis_results("offsets_missing: the group's offsets expired under the broker's "
                               "retention (commits off, group configured)", "offsets_missing",
                               FLINK_LINE)
    result.watch = run.flink_watch
    # Ground truth before the expiry: the job read everything from offset 20 on and
    # committed nothing; Kafka still holds the group's old offsets.
    flink.wait_for_completed_checkpoints(jid, 3)
    wait_until(lambda: rest_source_state(flink, jid)[0] == {0: 99, 1: 99}, 60,
               "the job to read both partitions to the end")
    assert rest_source_state(flink, jid)[1] == 0, "a job with commits off committed"
    if time.time() < run.flink_committed_wall + run.retention - 10:
        assert tool_offsets(bootstrap, group) == {(topic, 0): (20, 100), (topic, 1): (20, 100)}

    offsets_gone, group_gone = run.wait_for_expiry(group)
    assert flink.job_overview(jid)["state"] == "RUNNING"
    result.note(f"commit=false, the job started from the committed 20; commitsSucceeded 0 "
                f"(REST); offsets.retention.minutes={RETENTION_MINUTES}; broker: offsets gone "
                f"{offsets_gone - run.flink_committed_wall:.0f} s, group gone "
                f"{group_gone - run.flink_committed_wall:.0f} s after the last commit; t0 = "
                f"offsets gone")
    # The fault is the loss of the offsets, whenever the broker got to it.
    run.flink_watch.restart_clock(time.monotonic() - (time.time() - offsets_gone))
    if GROUND_TRUTH_ONLY:
        return
    # Commits off is itself a reason for offsets_missing (README), so the cause may show
    # before the expiry too; what it showed is recorded, the assertion is about after it.
    result.note(f"offsets gone {run.flink_watch.t0 - run.launched_at:.0f} s after lagsight "
                f"started; causes from its start: "
                f"{run.flink_watch.history(since=run.launched_at, separator='; ')}")
    assert_detected(run.flink_watch, "offsets_missing", DETECT_TIMEOUT,
                    allowed={"offsets_expiring"})
    metrics = run.lagsight.wait_for_fresh_poll(group_gone)
    assert promtext.select(metrics, "lagsight_flink_job_group_info", job_name=run.job,
                           group=group, association="configured")
