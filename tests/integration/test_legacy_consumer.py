"""The legacy FlinkKafkaConsumer (Flink 1.20 connector line) on a real Flink 1.20 MiniCluster and a
real Kafka broker: its jobs get the same Flink-side numbers, pairing and diagnosis as KafkaSource
jobs. Ground truth: the Flink REST API (the consumer's own gauges and counters) and Kafka's
consumer-groups tool, read by the test itself.

Three jobs share one cluster: one commits on checkpoints (as the KafkaSource does); two run
without checkpointing, so the connector leaves committing to the Kafka client's own timer
(enable.auto.commit). Flink never sees those commits, so lagsight must not call them
offsets_missing: one is mapped to its group, the other is not (nothing can pair it).
"""

from __future__ import annotations

import re
import time

import kafka_broker as kafka
import promtext
from conftest import wait_until
from flink_job import FlinkJob, JobSpec
from workload import create_topic, produce

PARTITIONS = 3
RECORDS = 200
# The legacy consumer's per-partition gauges (plural names, under "KafkaConsumer"), and its
# commit counters directly in the operator's group.
OFFSET_ID = re.compile(
    r"^(\d+)\.[^.]+\.KafkaConsumer\.topic\.(.+)\.partition\.(\d+)\.(currentOffsets|committedOffsets)$")
COUNTER_ID = re.compile(r"^\d+\.[^.]+\.(commitsSucceeded|commitsFailed)$")
# KafkaTopicPartitionStateSentinel: the connector's placeholders before a position.
SENTINELS = range(-915623761776, -915623761772)


def rest_source_metrics(flink: FlinkJob, jid: str) -> tuple[dict, dict]:
    """((topic, partition, gauge) -> offset, placeholders left out; counter -> sum over subtasks)."""
    vid = flink.vertex_id(jid, "Source")
    ids = [m["id"] for m in flink.vertex_metrics(jid, vid)
           if OFFSET_ID.match(m["id"]) or COUNTER_ID.match(m["id"])]
    offsets: dict = {}
    counters = {"commitsSucceeded": 0.0, "commitsFailed": 0.0}
    for metric in flink.vertex_metrics(jid, vid, ids) if ids else []:
        value = int(float(metric["value"]))
        if match := OFFSET_ID.match(metric["id"]):
            _, topic, partition, gauge = match.groups()
            if value not in SENTINELS:
                offsets[(topic, int(partition), gauge)] = value
        else:
            counters[COUNTER_ID.match(metric["id"]).group(1)] += value
    return offsets, counters


def exported_offsets(metrics: promtext.Samples, job_name: str) -> dict:
    out = {}
    for metric, gauge in (("lagsight_flink_source_current_offset", "currentOffsets"),
                          ("lagsight_flink_source_committed_offset", "committedOffsets")):
        for key, value in promtext.select(metrics, metric, job_name=job_name).items():
            labels = dict(key)
            out[(labels["topic"].replace(".", "_"), int(labels["partition"]), gauge)] = int(value)
    return out


def flink_poll(metrics: promtext.Samples) -> float:
    return max(promtext.select(metrics, "lagsight_flink_last_poll_timestamp_seconds").values(),
               default=0.0)


def causes(metrics: promtext.Samples, job_name: str) -> set[str]:
    return {dict(k)["cause"] for k, v in
            promtext.select(metrics, "lagsight_diagnosis", job_name=job_name).items() if v == 1}


def test_legacy_consumer_jobs_are_read_paired_and_diagnosed(kafka_broker, start_lagsight,
                                                             unique_prefix, tmp_path):
    bootstrap = kafka_broker.bootstrap
    topics = {kind: f"{unique_prefix}.{kind}" for kind in ("checkpointed", "autocommit",
                                                              "unmapped")}
    groups = {kind: f"{unique_prefix}-{kind}" for kind in topics}
    for topic in topics.values():
        create_topic(bootstrap, topic, PARTITIONS)
        produce(bootstrap, topic, [RECORDS] * PARTITIONS)
    delay_file = tmp_path / "delay"
    delay_file.write_text("0")
    checkpointed = JobSpec(name=f"{unique_prefix}-checkpointed", topics=[topics["checkpointed"]],
                           group=groups["checkpointed"], checkpoint_ms=1000, parallelism=2,
                           delay_file=delay_file, connector="legacy")
    autocommit = JobSpec(name=f"{unique_prefix}-autocommit", topics=[topics["autocommit"]],
                         group=groups["autocommit"], checkpoint_ms=0, connector="legacy",
                         extra={"kafka.auto.commit.interval.ms": "1000"})
    unmapped = JobSpec(name=f"{unique_prefix}-unmapped", topics=[topics["unmapped"]],
                       group=groups["unmapped"], checkpoint_ms=0, connector="legacy",
                       extra={"kafka.auto.commit.interval.ms": "1000"})
    with FlinkJob("1.20", [checkpointed, autocommit, unmapped], tmp_path / "flink",
                  bootstrap=bootstrap) as flink:
        started = time.monotonic()
        # Nothing on Flink's side can pair a job whose commits Flink never sees: the operator
        # maps it, as the README says for commit mode auto.
        lagsight = start_lagsight(bootstrap, flink=[{
            "name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
            "poll_interval": "1s", "request_timeout": "5s",
            "groups": [{"job": autocommit.name, "group": groups["autocommit"]}]}],
            # A short window: the grace before offsets_missing (max(window / 2, 2 Flink metric
            # refreshes + 5 s) without checkpoints) ends within the test.
            diagnosis={"window": "30s"})
        jid = flink.jobs[checkpointed.name]
        auto_jid = flink.jobs[autocommit.name]

        # The checkpointed job read and committed everything (its own gauges), and Kafka's tool
        # shows the group at the log end: the legacy consumer commits the next offset too.
        def committed_everything():
            offsets, counters = rest_source_metrics(flink, jid)
            committed = [v for (t, p, g), v in offsets.items() if g == "committedOffsets"]
            return counters["commitsSucceeded"] >= 1 and committed == [RECORDS] * PARTITIONS
        wait_until(committed_everything, 120, "the checkpointed legacy job to commit everything")
        # The auto-committing one: its client commits (Kafka's tool), while Flink's gauges never
        # hold a committed offset and its counters never move.
        def client_committed() -> bool:
            rows = [r for r in kafka.consumer_groups_describe_all(bootstrap)
                    if r.group == groups["autocommit"]]
            return sorted(r.current_offset for r in rows) == [RECORDS] * PARTITIONS
        wait_until(client_committed, 120, "the auto-committing job's client to commit everything")
        auto_offsets, auto_counters = rest_source_metrics(flink, auto_jid)
        assert not [g for (_, _, g) in auto_offsets if g == "committedOffsets"], auto_offsets
        assert auto_counters == {"commitsSucceeded": 0.0, "commitsFailed": 0.0}
        assert [v for (_, _, g), v in auto_offsets.items() if g == "currentOffsets"] == \
            [RECORDS - 1] * PARTITIONS
        # Checkpointing off: Flink 1.20 answers with the interval Long.MAX_VALUE.
        status, config = flink.rest_get(f"/jobs/{auto_jid}/checkpoints/config")
        assert status == 200 and config["interval"] == 2**63 - 1, (status, config)

        # lagsight's numbers equal the REST API's, read around one of its polls.
        before = rest_source_metrics(flink, jid)
        since = time.time()
        lagsight.wait_for(lambda m: flink_poll(m) > since, "a Flink poll after the reading")
        metrics = lagsight.wait_for(lambda m: flink_poll(m) > since + 1, "the next Flink poll")
        after = rest_source_metrics(flink, jid)
        assert before[0] == after[0], "offsets moved while idle"
        assert exported_offsets(metrics, checkpointed.name) == after[0]
        (succeeded,) = promtext.select(metrics, "lagsight_flink_source_commits_succeeded_total",
                                       job_id=jid).values()
        assert before[1]["commitsSucceeded"] <= succeeded <= after[1]["commitsSucceeded"]
        assert {dict(k)["job_name"]: dict(k)["connector"] for k in
                promtext.select(metrics, "lagsight_flink_source_info")} == {
            job.name: "FlinkKafkaConsumer" for job in (checkpointed, autocommit, unmapped)}
        (vertex,) = [v for v in flink.rest_get(f"/jobs/{jid}")[1]["vertices"]
                     if "Source" in v["name"]]
        assert list(promtext.select(metrics, "lagsight_flink_source_parallelism",
                                    job_id=jid).values()) == [vertex["parallelism"]]

        # Paired with its group by its committed offsets, as a KafkaSource job is; the auto one
        # by the mapping. Commit modes: checkpoint, and auto (inferred: no checkpointing).
        metrics = lagsight.wait_for(
            lambda m: {(dict(k)["job_name"], dict(k)["group"], dict(k)["association"])
                       for k in promtext.select(m, "lagsight_flink_job_group_info")} == {
                (checkpointed.name, groups["checkpointed"], "matched"),
                (autocommit.name, groups["autocommit"], "configured")},
            "each legacy job paired with its own group")
        lagsight.wait_for(
            lambda m: {(dict(k)["job_name"], dict(k)["mode"]) for k in
                       promtext.select(m, "lagsight_flink_source_commit_mode")} == {
                (checkpointed.name, "checkpoint"), (autocommit.name, "auto"),
                (unmapped.name, "auto")},
            "the commit modes checkpoint and auto")

        # All are healthy, and stay so past the grace: no offsets_missing for the jobs whose
        # client commits, mapped or not (the unmapped one has no group to judge).
        jobs = (checkpointed.name, autocommit.name, unmapped.name)
        lagsight.wait_for(lambda m: all(causes(m, job) == {"healthy"} for job in jobs),
                          "every pair diagnosed healthy", timeout=90)
        grace_over = started + 60  # the grace is 25 s here; the job's clock starts later
        while time.monotonic() < grace_over + 10:
            metrics = lagsight.scrape()
            for job in jobs:
                assert causes(metrics, job) == {"healthy"}, (job, causes(metrics, job))
            time.sleep(1)

        # Slowed to a halt with more written: Flink-side lag = log end - (currentOffsets + 1).
        delay_file.write_text("60000000")
        produce(bootstrap, topics["checkpointed"], [20000] * PARTITIONS)

        def settled_positions():
            first = rest_source_metrics(flink, jid)[0]
            time.sleep(12)  # longer than Flink's metric fetcher interval (10 s)
            second = rest_source_metrics(flink, jid)[0]
            return second if first == second else None
        positions = wait_until(settled_positions, 150, "the slowed job's positions to settle")
        log_end = kafka.topic_offsets(bootstrap, re.escape(topics["checkpointed"]), "latest")
        expected = {(topics["checkpointed"], str(p)): log_end[(topics["checkpointed"], p)] - (v + 1)
                    for (_, p, g), v in positions.items() if g == "currentOffsets"}
        assert sum(expected.values()) > 0

        def exported_lag(m: promtext.Samples) -> dict:
            return {(dict(k)["topic"], dict(k)["partition"]): v for k, v in
                    promtext.select(m, "lagsight_flink_lag_records", job_id=jid).items()}
        lagsight.wait_for(lambda m: exported_lag(m) == expected,
                          f"lagsight's Flink-side lag to equal log end - (currentOffsets + 1): "
                          f"{expected}", timeout=40)
