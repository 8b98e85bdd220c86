"""A topic written by a real transactional producer: each partition's log ends with the
transaction's commit marker, an offset no consumer receives. A Flink job that read every record
commits the offset after the last record, one short of the log end, for good; Kafka's own tool
then shows a lag of 1 per partition forever. lagsight must count such a partition as caught up,
on the Kafka and the Flink side, in records and in seconds, and keep it so while the topic is
idle. Ground truth: Kafka's consumer-groups tool (the committed offset and log end), a real
consumer that receives nothing from the committed offset to the end, and the Flink REST API.
"""

from __future__ import annotations

import time

import pytest

import kafka_broker as kafka
import promtext
from promtext import by_partition
from conftest import wait_until
from flink_job import FlinkJob, JobSpec
from workload import create_topic, produce, produce_transactional, records_after

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

PARTITIONS = 2
RECORDS = 100  # per partition, in one committed transaction: the marker takes offset 100


def test_a_partition_with_only_a_commit_marker_left_is_caught_up(kafka_broker, start_lagsight,
                                                                   unique_prefix, tmp_path):
    bootstrap = kafka_broker.bootstrap
    topic = f"{unique_prefix}.payments"
    group = f"{unique_prefix}-ledger"
    create_topic(bootstrap, topic, PARTITIONS)
    produce_transactional(bootstrap, topic, [RECORDS] * PARTITIONS, f"{unique_prefix}-tx")
    spec = JobSpec(name=f"{unique_prefix}-job", topics=[topic], group=group, start="earliest",
                   checkpoint_ms=1000)
    with FlinkJob("2.x", [spec], tmp_path / "flink", bootstrap=bootstrap) as flink:
        lagsight = start_lagsight(bootstrap, flink=[{
            "name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
            "poll_interval": "1s", "request_timeout": "5s"}])
        jid = flink.jobs[spec.name]

        # Ground truth: the group committed 100 (after the last record) and the log ends at 101,
        # so Kafka's tool says lag 1; a real consumer gets nothing from 100 to the end.
        def committed_rows():
            return {r.partition: r for r in kafka.consumer_groups_describe_all(bootstrap)
                    if r.group == group}
        wait_until(lambda: [r.current_offset for r in committed_rows().values()] ==
                   [RECORDS] * PARTITIONS, 120, "the job to commit every record")
        for row in committed_rows().values():
            assert (row.log_end_offset, row.lag) == (RECORDS + 1, 1), row
        for partition in range(PARTITIONS):
            assert records_after(bootstrap, topic, partition, RECORDS) == 0

        # lagsight: no lag on either side, in records or seconds; the pair is healthy.
        def caught_up(m: promtext.Samples) -> bool:
            kafka_lag = by_partition(m, "lagsight_kafka_group_lag_records", group=group)
            flink_lag = by_partition(m, "lagsight_flink_lag_records", job_id=jid)
            kafka_seconds = by_partition(m, "lagsight_kafka_group_lag_seconds", group=group)
            flink_seconds = by_partition(m, "lagsight_flink_lag_seconds", job_id=jid)
            every = {p: 0.0 for p in range(PARTITIONS)}
            return (kafka_lag == every and flink_lag == every and
                    kafka_seconds in ({}, every) and flink_seconds == every)
        lagsight.wait_for(caught_up, "no lag on either side of a partition ending in a marker",
                          timeout=60)
        lagsight.wait_for(
            lambda m: {dict(k)["cause"] for k, v in promtext.select(
                m, "lagsight_diagnosis", job_id=jid).items() if v == 1} == {"healthy"},
            "the pair diagnosed healthy", timeout=60)
        # Idle for a while: the lag in seconds does not grow (the marker's age is no lag).
        deadline = time.time() + 12
        while time.time() < deadline:
            assert caught_up(lagsight.scrape())
            time.sleep(1)

        # Records after the marker are lag again (the job is gone, so they wait): the marker
        # counts once more, as Kafka counts it, since the group must pass it.
        flink.cancel_job(jid)
        produce(bootstrap, topic, [7] * PARTITIONS)
        lagsight.wait_for(
            lambda m: by_partition(m, "lagsight_kafka_group_lag_records", group=group) ==
            {p: 8.0 for p in range(PARTITIONS)},
            "the group's lag: 7 records after the marker, and the marker (Kafka's count)")
