"""The parallelism lagsight recommends for a job that is behind, tried on a real Flink 2.x job.

A steady producer writes 120 records/s to 4 partitions; the job reads them at parallelism 1
through a map that sleeps 12 ms per record (about 80 records/s): it falls behind by about 40
records/s. lagsight (1 s polls, Flink's default 10 s metric refresh, catch-up target 60 s) must
name the map as the bottleneck, say that at today's parallelism the job never catches up, and
recommend a parallelism. The closing test of the arithmetic: the job is stopped with a savepoint
and restored at that parallelism, and the backlog, as Kafka itself reports it (log end minus the
group's committed offsets, from Kafka's consumer-groups tool), must drain within the target, and
within ±50 % of the time the arithmetic gives for that parallelism (parallelism comes in whole
subtasks and, for a map fed by its source through a FORWARD edge, in whole partitions per
subtask: the answer drains faster than the target where the step above is large). That at the
old parallelism it does not is shown by the same ground truth: the backlog grew while the job
ran at 1.

The first run of this test restored at 3 (spread evenly, 3 subtasks would do) and took 90 s for
a 60 s target: one of 3 source subtasks reads 2 of the 4 partitions, and its map subtask drains
their half of the backlog with 23 records/s to spare. lagsight now counts the busiest subtask's
share of the partitions and recommends 4.
"""

from __future__ import annotations

import dataclasses
import time
import uuid

import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from kafka_broker import consumer_groups_describe_all
from workload import SteadyProducer, create_topic

FLINK_LINE = "2.x"
PREFIX = f"bn-{uuid.uuid4().hex[:6]}"
PARTITIONS = 4
RATE = 120                 # records/s written
DELAY_US = 12_000          # the map's sleep per record: about 80 records/s per subtask
CATCH_UP_TARGET = 60.0     # seconds, diagnosis.catch_up_target


def group_backlog(bootstrap: str, group: str, topic: str) -> int:
    """Kafka's own answer (kafka-consumer-groups --describe): the group's LAG, summed over the
    topic's partitions; the log end where the group committed nothing yet."""
    rows = [row for row in consumer_groups_describe_all(bootstrap)
            if row.group == group and row.topic == topic]
    return sum(row.lag if row.lag is not None else (row.log_end_offset or 0) for row in rows)


def test_the_recommended_parallelism_drains_the_backlog_within_the_target(
        session_broker, lagsight_binary, tmp_path, request):
    bootstrap = session_broker.bootstrap
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)
    topic, name = f"{PREFIX}-orders", f"{PREFIX}-enrich"
    create_topic(bootstrap, topic, PARTITIONS)
    producer = SteadyProducer(bootstrap, topic, PARTITIONS, RATE, value_bytes=200)
    spec = JobSpec(name=name, topics=[topic], group=name, checkpoint_ms=1000, delay_us=DELAY_US)
    lagsight: LagsightProcess | None = None
    try:
        with FlinkJob(FLINK_LINE, [spec], tmp_path / "flink", bootstrap=bootstrap, slots=6,
                      savepoint_dir=tmp_path / "savepoints") as flink:
            jid = flink.jobs[name]
            work_dir = tmp_path / "lagsight"
            work_dir.mkdir()
            lagsight = LagsightProcess(lagsight_binary, work_dir, {
                "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
                           "request_timeout": "5s", "groups": {"allow": [f"{PREFIX}-.*"]},
                           "topics": {"allow": [f"{PREFIX}-.*"]}}],
                "flink": [{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": CLUSTER,
                           "poll_interval": "1s", "request_timeout": "5s"}],
                "diagnosis": {"window": "30s", "lag_threshold_records": 400,
                              "catch_up_target": f"{int(CATCH_UP_TARGET)}s"},
            })
            _register_log_for_failures(request, "lagsight log", lagsight.log_file)
            lagsight.start()

            def recommendation():
                metrics = lagsight.scrape()
                found = promtext.select(metrics, "lagsight_diagnosis_recommended_parallelism",
                                        job_name=name)
                return (metrics, found) if found else None
            started = time.monotonic()
            backlog_at_start = group_backlog(bootstrap, name, topic)
            metrics, found = wait_until(recommendation, 240, "a recommended parallelism")
            [(labels, parallelism)] = found.items()
            vertex = dict(labels)["vertex"]
            [capacity] = promtext.select(
                metrics, "lagsight_flink_job_bottleneck_capacity_records_per_second",
                job_name=name).values()
            assert vertex.startswith(f"{name}-map"), vertex
            now = promtext.select(metrics,
                                  "lagsight_diagnosis_catch_up_at_current_parallelism_seconds",
                                  job_name=name)
            assert list(now.values()) == [float("inf")], now
            # Ground truth at parallelism 1: the backlog grew.
            backlog_before = group_backlog(bootstrap, name, topic)
            assert backlog_before > backlog_at_start + 400, (backlog_at_start, backlog_before)
            grew_per_second = (backlog_before - backlog_at_start) / (time.monotonic() - started)
            parallelism = int(parallelism)
            assert 2 <= parallelism <= PARTITIONS, parallelism

            path = flink.trigger_savepoint(jid, cancel_job=True)
            flink.wait_for_state(jid, ("CANCELED",), 60)
            new_jid = flink.submit(dataclasses.replace(spec, restore=path,
                                                       parallelism=parallelism))
            restored_at = time.monotonic()
            backlog_at_restore = group_backlog(bootstrap, name, topic)

            # Each reading of Kafka's tool starts a JVM (2-3 s of CPU): one every 3 s, and the
            # drain is dated by when the reading that found it began.
            took = None
            deadline = restored_at + 3 * CATCH_UP_TARGET
            while took is None and time.monotonic() < deadline:
                asked = time.monotonic()
                if group_backlog(bootstrap, name, topic) <= 2 * RATE:
                    took = asked - restored_at
                else:
                    time.sleep(max(0.0, 3 - (time.monotonic() - asked)))
            # The arithmetic for the restored parallelism: the busiest map subtask gets
            # ceil(P / p) of the P partitions, their share of the backlog and of the input.
            share = -(-PARTITIONS // min(parallelism, PARTITIONS)) / PARTITIONS
            predicted = backlog_at_restore * share / (capacity - RATE * share)
            print(f"recommended parallelism {parallelism} for {vertex!r} (capacity at 1: "
                  f"{capacity:.0f}/s); backlog grew {grew_per_second:.0f}/s at 1 (Kafka: "
                  f"{backlog_at_start} -> {backlog_before}); restored ({new_jid}) with "
                  f"{backlog_at_restore} behind: drained in "
                  f"{'never' if took is None else f'{took:.1f}'} s, the arithmetic says "
                  f"{predicted:.0f} s (target {CATCH_UP_TARGET:.0f} s)")
            assert took is not None, "the backlog did not drain"
            assert took <= 1.5 * CATCH_UP_TARGET, took
            assert 0.5 * predicted <= took <= 1.5 * predicted, (took, predicted)
    finally:
        producer.stop()
        if lagsight is not None:
            assert lagsight.stop() == 0
