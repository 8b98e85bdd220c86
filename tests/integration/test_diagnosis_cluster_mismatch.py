"""The diagnosis on real Kafka of two clusters behind one bootstrap list: cluster_mismatch.

Two real single-node clusters (both with node id 1) named in one bootstrap list: lagsight reports
the mismatch and reads no group through the mixed list, and the Flink job's pair gets
``cluster_mismatch``. Ground truth from each cluster's id (Kafka's tool and the id StorageTool
wrote) and the groups Kafka's own tool lists on each. Results go to docs/diagnosis-results.md
(scenario_report.py); ``LAGSIGHT_DIAG_GROUND_TRUTH_ONLY=1`` runs only the real-system part.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
from conftest import CLUSTER, _register_log_for_failures, wait_until
from diagnosis_kafka_support import (DETECT_TIMEOUT, FLINK_CLUSTER, FLINK_LINE, GROUND_TRUTH_ONLY,
                                     Lagsights, Metrics, assert_detected, diagnosis_config,
                                     one_value, tool_groups, tool_offsets, watch_pair)
from flink_job import FlinkJob, JobSpec
from kafka_broker import KafkaBroker
from workload import commit_without_joining, create_topic, produce


@pytest.fixture
def lagsights(lagsight_binary, tmp_path) -> Iterator[Lagsights]:
    launcher = Lagsights(lagsight_binary, tmp_path)
    yield launcher
    launcher.stop_all()


def exported_groups(metrics: Metrics, prefix: str) -> set[str]:
    return {dict(labels)["group"]
            for labels in promtext.select(metrics, "lagsight_kafka_group_info",
                                          kafka_cluster=CLUSTER)
            if dict(labels)["group"].startswith(prefix)}


def test_cluster_mismatch(lagsights, unique_prefix, tmp_path, request, diagnosis_results):
    """Two single-node clusters (both with node id 1, as real clusters often have) named in one
    bootstrap list: lagsight reports the mismatch, and the Flink job's pair gets
    cluster_mismatch. What a client sees of the groups through the mixed list is recorded."""
    brokers = [KafkaBroker(tmp_path / "kafka-a"), KafkaBroker(tmp_path / "kafka-b")]
    for label, broker in zip("ab", brokers):
        _register_log_for_failures(request, f"broker {label} log", broker.log_file)
    a, b = brokers
    try:
        # One after the other, from this thread: a broker is SIGTERMed when the thread that
        # started it ends (kafka_broker._die_with_parent), so no worker threads here.
        for broker in brokers:
            broker.start()
        run_cluster_mismatch(a, b, lagsights, unique_prefix, tmp_path, request,
                             diagnosis_results)
    finally:
        for broker in brokers:
            broker.stop()


def run_cluster_mismatch(a: KafkaBroker, b: KafkaBroker, lagsights: Lagsights, prefix: str,
                         tmp_path: Path, request, diagnosis_results) -> None:
    result = diagnosis_results("cluster_mismatch: two clusters in one bootstrap list",
                               "cluster_mismatch", FLINK_LINE)
    # The same topic name on both clusters (as with a mirror), different partition counts.
    topic = f"{prefix}-orders"
    group_a, group_b, group_job = f"{prefix}-on-a", f"{prefix}-on-b", f"{prefix}-job"
    job = f"{prefix}-job"
    create_topic(a.bootstrap, topic, 3)
    produce(a.bootstrap, topic, [30, 30, 30])
    create_topic(b.bootstrap, topic, 2)
    produce(b.bootstrap, topic, [80, 80])
    commit_without_joining(a.bootstrap, group_a, {(topic, p): 10 for p in range(3)})
    commit_without_joining(b.bootstrap, group_b, {(topic, p): 5 for p in range(2)})

    # Ground truth: two clusters, each id as the tool reads it and as StorageTool wrote it.
    ids = {broker.bootstrap: kafka.cluster_id(broker.bootstrap) for broker in (a, b)}
    assert ids[a.bootstrap] == a.stored_cluster_id() and ids[b.bootstrap] == b.stored_cluster_id()
    assert ids[a.bootstrap] != ids[b.bootstrap]
    groups_on = {broker.bootstrap: {g for g in tool_groups(broker.bootstrap)
                                    if g.startswith(prefix)} for broker in (a, b)}
    assert groups_on == {a.bootstrap: {group_a}, b.bootstrap: {group_b}}
    mixed = f"{a.bootstrap},{b.bootstrap}"
    tool_through_mixed = {g for g in tool_groups(mixed) if g.startswith(prefix)}
    result.note(f"cluster ids {ids[a.bootstrap]} (A) and {ids[b.bootstrap]} (B) "
                f"(kafka-cluster cluster-id = meta.properties); kafka-consumer-groups --list "
                f"through 'A,B' shows {sorted(tool_through_mixed)} of {{{group_a}, {group_b}}}")

    spec = JobSpec(job, [topic], group=group_job, checkpoint_ms=1000)
    with FlinkJob(FLINK_LINE, [spec], tmp_path / "flink", bootstrap=a.bootstrap) as flink:
        _register_log_for_failures(request, "flink log", flink.log_file)
        flink.wait_for_completed_checkpoints(flink.jobs[job], 2)
        wait_until(lambda: tool_offsets(a.bootstrap, group_job) == {
            (topic, p): (30, 30) for p in range(3)}, 60, "the job to commit on cluster A")
        launched_at = time.monotonic()
        lagsight = lagsights.start(diagnosis_config(mixed, groups=[f"{prefix}-.*"], flink=[{
            "name": FLINK_CLUSTER, "rest_url": flink.rest_url, "kafka_cluster": CLUSTER,
            "poll_interval": "1s", "request_timeout": "5s",
            "groups": [{"job": job, "group": group_job}]}]), request)
        watch = watch_pair(lagsight, group_job, job, t0=launched_at)
        result.watch = watch
        kafka_only_a = watch_pair(lagsight, group_a, t0=launched_at)
        kafka_only_b = watch_pair(lagsight, group_b, t0=launched_at)
        try:
            metrics = lagsight.wait_for_fresh_poll(time.time())
            if not GROUND_TRUTH_ONLY:
                info = {dict(labels)["bootstrap"]: dict(labels)["cluster_id"]
                        for labels in promtext.select(
                            metrics, "lagsight_kafka_bootstrap_cluster_info",
                            kafka_cluster=CLUSTER)}
                assert info == ids
                assert one_value(metrics, "lagsight_kafka_cluster_mismatch",
                                 kafka_cluster=CLUSTER) == 1
            # The seed case: through the mixed list a client silently misses one cluster's
            # groups (Kafka's own tool above). lagsight reads no group through it at all: one
            # librdkafka client connected to both crashed lagsight (SIGSEGV) within seconds.
            assert one_value(metrics, "lagsight_kafka_up", kafka_cluster=CLUSTER) == 1
            seen_groups = exported_groups(metrics, prefix)
            result.note(f"lagsight_kafka_up 1 while exporting groups {sorted(seen_groups)} of "
                        f"{sorted({group_a, group_b, group_job})}")
            if not GROUND_TRUTH_ONLY:
                assert seen_groups == set(), "lagsight read groups through a mixed list"
            if GROUND_TRUTH_ONLY:
                return
            seconds = assert_detected(watch, "cluster_mismatch", DETECT_TIMEOUT)
            result.note(f"pair cause cluster_mismatch {seconds} s after lagsight started")
            watch.hold(5)
            kafka_only_causes = {group_a: kafka_only_a.seen(), group_b: kafka_only_b.seen()}
            result.note(f"Kafka-only pairs (no cluster_mismatch in their subset) showed "
                        f"{kafka_only_causes}")
        finally:
            kafka_only_a.close()
            kafka_only_b.close()
