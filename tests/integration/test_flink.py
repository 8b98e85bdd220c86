"""The Flink half on real Flink (1.20 and 2.x MiniClusters running a KafkaSource job) and a real
Kafka broker. Ground truth: the Flink REST API and Kafka's consumer-groups tool, read by the test
itself; lagsight's numbers must equal theirs.
"""

from __future__ import annotations

import re
import time

import pytest

import kafka_broker as kafka
import promtext
from conftest import wait_until
from flink_job import FlinkJob, JobSpec
from workload import create_topic, produce

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

PARTITIONS = 3
OFFSET_ID = re.compile(r"^\d+\.[^.]+\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)\.(currentOffset|committedOffset)$")


def rest_offsets(flink: FlinkJob, jid: str) -> dict[tuple[str, int, str], int]:
    """(escaped topic, partition, metric) -> value from the REST API, -1 (unset) left out."""
    vid = flink.vertex_id(jid, "Source")
    ids = [m["id"] for m in flink.vertex_metrics(jid, vid) if OFFSET_ID.match(m["id"])]
    values = {}
    if not ids:  # the reader registers its gauges only once it has splits
        return values
    for metric in flink.vertex_metrics(jid, vid, ids):
        topic, partition, name = OFFSET_ID.match(metric["id"]).groups()
        if int(float(metric["value"])) >= 0:
            values[(topic, int(partition), name)] = int(float(metric["value"]))
    return values


def completed_checkpoints(flink: FlinkJob, jid: str) -> int:
    status, body = flink.checkpoints(jid)
    assert status == 200, body
    return body["counts"]["completed"]


def series(metrics: promtext.Samples, name: str, **labels: str) -> dict[tuple, float]:
    return {tuple(sorted(dict(key).items())): value
            for key, value in promtext.select(metrics, name, **labels).items()}


def exported_offsets(metrics, job_name: str) -> dict[tuple[str, int, str], int]:
    out = {}
    for metric, name in (("lagsight_flink_source_current_offset", "currentOffset"),
                         ("lagsight_flink_source_committed_offset", "committedOffset")):
        for key, value in promtext.select(metrics, metric, job_name=job_name).items():
            labels = dict(key)
            out[(labels["topic"].replace(".", "_"), int(labels["partition"]), name)] = int(value)
    return out


def flink_poll(metrics) -> float:
    return max(promtext.select(metrics, "lagsight_flink_last_poll_timestamp_seconds").values(),
               default=0.0)


def wait_for_fresh_flink_poll(lagsight, since: float):
    first = lagsight.wait_for(lambda m: flink_poll(m) > since, "a Flink poll after the reading")
    return lagsight.wait_for(lambda m: flink_poll(m) > flink_poll(first), "the next Flink poll")


@pytest.mark.parametrize("version", ["1.20", "2.x"])
def test_flink_half_equals_rest_and_kafka(version, kafka_broker, start_lagsight, unique_prefix,
                                          tmp_path):
    bootstrap = kafka_broker.bootstrap
    topics = [f"{unique_prefix}.orders", f"{unique_prefix}.audit"]
    groups = [f"{unique_prefix}-orders", f"{unique_prefix}-audit"]
    for topic in topics:
        create_topic(bootstrap, topic, PARTITIONS)
        produce(bootstrap, topic, [200] * PARTITIONS)
    delay_file = tmp_path / "delay"
    delay_file.write_text("0")
    # job1 runs more subtasks (4) than its topic has partitions (3): one reader holds no split.
    parallelisms = [2, 4]
    specs = [JobSpec(name=f"{unique_prefix}-job{i}", topics=[topics[i]], group=groups[i],
                     checkpoint_ms=1000, parallelism=parallelisms[i], delay_file=delay_file)
             for i in range(2)]
    with FlinkJob(version, specs, tmp_path / "flink", bootstrap=bootstrap) as flink:
        lagsight = start_lagsight(bootstrap, flink=[{
            "name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
            "poll_interval": "1s", "request_timeout": "5s"}])
        jids = [flink.jobs[spec.name] for spec in specs]

        # Caught up and committed: the job's committedOffset is the log end on every partition,
        # and Kafka's tool shows the same committed offsets for the group (a Flink fact we rely on).
        def caught_up_and_committed() -> bool:
            for jid in jids:
                offsets = rest_offsets(flink, jid)
                committed = [v for (t, p, n), v in offsets.items() if n == "committedOffset"]
                if committed != [200] * PARTITIONS:
                    return False
            return True
        wait_until(caught_up_and_committed, 120, "both jobs to read and commit everything")
        rows = [r for r in kafka.consumer_groups_describe_all(bootstrap) if r.group in groups]
        assert {(r.group, r.partition): r.current_offset for r in rows} == {
            (g, p): 200 for g in groups for p in range(PARTITIONS)}

        # Offsets and checkpoint counts: lagsight equals the REST API read around its poll.
        before = {jid: (rest_offsets(flink, jid), completed_checkpoints(flink, jid)) for jid in jids}
        metrics = wait_for_fresh_flink_poll(lagsight, time.time())
        after = {jid: (rest_offsets(flink, jid), completed_checkpoints(flink, jid)) for jid in jids}
        assert promtext.select(metrics, "lagsight_flink_up") and \
            set(promtext.select(metrics, "lagsight_flink_up").values()) == {1}
        for spec, jid in zip(specs, jids):
            assert before[jid][0] == after[jid][0], "offsets moved while idle"
            assert exported_offsets(metrics, spec.name) == after[jid][0]
            (completed,) = promtext.select(metrics, "lagsight_flink_checkpoints_completed_total",
                                           job_id=jid).values()
            assert before[jid][1] <= completed <= after[jid][1]
            (interval,) = promtext.select(metrics, "lagsight_flink_checkpoint_interval_seconds",
                                          job_id=jid).values()
            assert interval == 1.0

            # Age over interval: the latest checkpoint is recent, relative to a 1 s interval.
            (ratio,) = promtext.select(metrics, "lagsight_flink_checkpoint_age_ratio",
                                       job_id=jid).values()
            assert 0 <= ratio < 30

        # The automatic association names each job's own group.
        associations = {(dict(k)["job_name"], dict(k)["group"], dict(k)["association"])
                        for k in promtext.select(metrics, "lagsight_flink_job_group_info")}
        assert associations == {(specs[i].name, groups[i], "matched") for i in range(2)}

        # Idle readers: the vertex's parallelism (REST) less the subtasks whose reader reports a
        # partition (REST metric ids); the connector spreads partitions over consecutive
        # subtasks, so that is max(0, parallelism - partitions).
        for spec, jid in zip(specs, jids):
            vid = flink.vertex_id(jid, "Source")
            (vertex,) = [v for v in flink.rest_get(f"/jobs/{jid}")[1]["vertices"]
                         if v["id"] == vid]
            reading = {int(m["id"].split(".", 1)[0]) for m in flink.vertex_metrics(jid, vid)
                       if OFFSET_ID.match(m["id"])}
            assert vertex["parallelism"] == spec.parallelism
            assert vertex["parallelism"] - len(reading) == max(0, spec.parallelism - PARTITIONS)
            assert list(promtext.select(metrics, "lagsight_flink_source_parallelism",
                                        job_id=jid).values()) == [spec.parallelism]
            assert list(promtext.select(metrics, "lagsight_flink_source_idle_subtasks",
                                        job_id=jid).values()) == [
                vertex["parallelism"] - len(reading)]

        # Slow the jobs to a halt, write more: Flink-side lag = log end (Kafka) - position (REST).
        delay_file.write_text("60000000")
        for topic in topics:
            # More than the network buffers between source and map hold, so the source stalls.
            produce(bootstrap, topic, [20000] * PARTITIONS)

        # Flink serves the positions refreshed every metrics.fetcher.update-interval (10 s by
        # default): settled means unchanged across more than one refresh.
        def settled_positions():
            first = {jid: rest_offsets(flink, jid) for jid in jids}
            time.sleep(12)
            second = {jid: rest_offsets(flink, jid) for jid in jids}
            return second if first == second else None
        positions = wait_until(settled_positions, 150, "the slowed jobs' positions to settle")
        log_end = kafka.topic_offsets(bootstrap, f"{unique_prefix}\\..*", "latest")
        for spec, jid, topic in zip(specs, jids, topics):
            expected = {}
            for (escaped, partition, name), value in positions[jid].items():
                if name == "currentOffset":
                    expected[(topic, str(partition))] = max(0, log_end[(topic, partition)] - (value + 1))
            assert sum(expected.values()) > 0

            def exported(m: promtext.Samples, job_id: str = jid) -> dict:
                return {(dict(k)["topic"], dict(k)["partition"]): v for k, v in
                        promtext.select(m, "lagsight_flink_lag_records", job_id=job_id).items()}
            # Flink serves positions refreshed every metrics.fetcher.update-interval (10 s), and
            # lagsight measures against the log end of when the position was taken (a lower bound
            # that a stale position cannot inflate), so after the burst its value reaches the
            # truth within one refresh interval, and must then equal it exactly.
            lagsight.wait_for(lambda m, want=expected: exported(m) == want,
                              f"lagsight's Flink-side lag of {spec.name} to equal log end - "
                              f"(currentOffset + 1): {expected}", timeout=40)

        # A cancelled job loses its series at the next poll.
        flink.cancel_job(jids[0])
        lagsight.wait_for(lambda m: not promtext.select(m, "lagsight_flink_job_info", job_id=jids[0])
                          and promtext.select(m, "lagsight_flink_job_info", job_id=jids[1]),
                          "the cancelled job's series to vanish")

    # Flink gone: its up is 0, and the Kafka half still serves fresh, correct values.
    lagsight.wait_for(lambda m: set(promtext.select(m, "lagsight_flink_up").values()) == {0},
                      "lagsight_flink_up to drop to 0")
    since = time.time()
    metrics = lagsight.wait_for_fresh_poll(since)
    committed = {(dict(k)["group"], int(dict(k)["partition"])): v for k, v in
                 promtext.select(metrics, "lagsight_kafka_group_committed_offset").items()
                 if dict(k)["group"] in groups}
    truth = {(r.group, r.partition): r.current_offset
             for r in kafka.consumer_groups_describe_all(bootstrap) if r.group in groups}
    assert committed == truth

    # Flink back on the same address: lagsight reads it again.
    port = int(flink.rest_url.rsplit(":", 1)[1])
    revived = JobSpec(name=f"{unique_prefix}-revived", topics=[topics[1]], group=groups[1],
                      checkpoint_ms=1000, parallelism=1)
    with FlinkJob(version, [revived], tmp_path / "flink-again", bootstrap=bootstrap,
                  rest_port=port) as flink_again:
        jid = flink_again.jobs[revived.name]
        lagsight.wait_for(
            lambda m: set(promtext.select(m, "lagsight_flink_up").values()) == {1}
            and promtext.select(m, "lagsight_flink_job_info", job_id=jid),
            "lagsight_flink_up back to 1 with the new job")
