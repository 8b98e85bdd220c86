"""Readers with isolation.level=read_committed, on a topic a real transactional producer writes.

While a transaction is open, its records lie below the high watermark but above the last stable
offset (LSO): a read_committed consumer cannot read them yet, and after an abort never will.
Kafka's consumer-groups tool counts lag to the high watermark, so a read_committed Flink job that
read everything it may shows the open transaction as lag, and after an abort it shows that lag
for good. lagsight counts the lag of readers configured as read_committed (a Kafka group by
``read_committed_groups``, a Flink job by ``read_committed_jobs``) to the LSO, on both sides,
and a read_uncommitted group's as before. Ground truth: Kafka's own tools (consumer-groups for
the commits and log ends, kafka-transactions for the open transaction's start), real consumers
of both isolation levels, and the Flink REST API's positions through the job's commits.
"""

from __future__ import annotations

import pytest

import kafka_broker as kafka
import promtext
from promtext import by_partition
from conftest import wait_until
from flink_job import FlinkJob, JobSpec
from workload import OpenTransaction, create_topic, produce_transactional, records_after

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

PARTITIONS = 2
COMMITTED = 50   # per partition, in one committed transaction: its marker takes offset 50
OPEN = 30        # records of the transaction left open, on partition 0 only: offsets 51..80


def test_read_committed_readers_lag_to_the_last_stable_offset(kafka_broker, start_lagsight,
                                                               unique_prefix, tmp_path):
    bootstrap = kafka_broker.bootstrap
    topic = f"{unique_prefix}.ledger"
    flink_group = f"{unique_prefix}-settle"   # the job's group, configured read_committed
    plain_group = f"{unique_prefix}-audit"    # at the same offsets, read_uncommitted
    create_topic(bootstrap, topic, PARTITIONS)
    produce_transactional(bootstrap, topic, [COMMITTED] * PARTITIONS, f"{unique_prefix}-tx1")
    for partition in range(PARTITIONS):
        kafka.reset_group_offsets(bootstrap, plain_group, topic, partition, COMMITTED)
    spec = JobSpec(name=f"{unique_prefix}-settle", topics=[topic], group=flink_group,
                   start="earliest", checkpoint_ms=1000,
                   extra={"kafka.isolation.level": "read_committed"})
    with FlinkJob("2.x", [spec], tmp_path / "flink", bootstrap=bootstrap) as flink:
        lagsight = start_lagsight(
            bootstrap,
            flink=[{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
                    "poll_interval": "1s", "request_timeout": "5s",
                    "read_committed_jobs": [spec.name]}],
            kafka_settings={"read_committed_groups": [flink_group]})
        jid = flink.jobs[spec.name]

        def rows(group: str) -> dict[int, kafka.GroupOffsetRow]:
            return {r.partition: r for r in kafka.consumer_groups_describe_all(bootstrap)
                    if r.group == group and r.topic == topic}
        wait_until(lambda: [r.current_offset for r in rows(flink_group).values()] ==
                   [COMMITTED] * PARTITIONS, 120, "the job to commit every committed record")

        # A transaction opens on partition 0 and stays open.
        transaction = OpenTransaction(bootstrap, topic, [OPEN], f"{unique_prefix}-tx2")
        # Ground truth: Kafka's tools say the open transaction starts at 51 and both groups lag
        # 31 there (its marker and 30 records); a read_committed consumer at 50 gets nothing, a
        # read_uncommitted one the 30 records.
        assert kafka.open_transaction_starts(bootstrap, topic, 0) == [COMMITTED + 1]
        assert kafka.open_transaction_starts(bootstrap, topic, 1) == []
        for group in (flink_group, plain_group):
            row = rows(group)[0]
            assert (row.current_offset, row.log_end_offset, row.lag) == \
                (COMMITTED, COMMITTED + 1 + OPEN, 1 + OPEN), row
        assert records_after(bootstrap, topic, 0, COMMITTED) == 0
        assert records_after(bootstrap, topic, 0, COMMITTED, isolation="read_uncommitted") == OPEN

        every = {p: 0.0 for p in range(PARTITIONS)}

        def open_transaction_seen(m: promtext.Samples) -> bool:
            return (by_partition(m, "lagsight_kafka_partition_last_stable_offset", topic=topic) ==
                    {0: COMMITTED + 1, 1: COMMITTED + 1} and
                    by_partition(m, "lagsight_kafka_partition_latest_offset", topic=topic) ==
                    {0: COMMITTED + 1 + OPEN, 1: COMMITTED + 1} and
                    by_partition(m, "lagsight_kafka_group_lag_records", group=flink_group) ==
                    every and
                    by_partition(m, "lagsight_flink_lag_records", job_id=jid) == every and
                    # Read_uncommitted: the open records are there to read (and the marker
                    # before them counts, as it must be passed); partition 1 ends in a marker.
                    by_partition(m, "lagsight_kafka_group_lag_records", group=plain_group) ==
                    {0: 1.0 + OPEN, 1: 0.0})
        lagsight.wait_for(open_transaction_seen,
                          "lag to the last stable offset while the transaction is open",
                          timeout=60)
        lagsight.wait_for(
            lambda m: {dict(k)["cause"] for k, v in promtext.select(
                m, "lagsight_diagnosis", job_id=jid).items() if v == 1} == {"healthy"},
            "the read_committed pair diagnosed healthy", timeout=60)

        # The transaction is aborted: its records are never readable read_committed, so the
        # job and its group are caught up for good, while Kafka's tool shows a lag of 32 (the
        # commit marker, 30 aborted records, the abort marker) forever.
        transaction.abort()
        assert kafka.open_transaction_starts(bootstrap, topic, 0) == []
        wait_until(lambda: rows(flink_group)[0].log_end_offset == COMMITTED + 2 + OPEN, 30,
                   "the abort marker in the log")
        assert rows(flink_group)[0].lag == 2 + OPEN
        assert records_after(bootstrap, topic, 0, COMMITTED) == 0
        assert records_after(bootstrap, topic, 0, COMMITTED, isolation="read_uncommitted") == OPEN

        def aborted_seen(m: promtext.Samples) -> bool:
            return (by_partition(m, "lagsight_kafka_partition_last_stable_offset", topic=topic) ==
                    {0: COMMITTED + 2 + OPEN, 1: COMMITTED + 1} and
                    by_partition(m, "lagsight_kafka_group_lag_records", group=flink_group) ==
                    every and
                    by_partition(m, "lagsight_flink_lag_records", job_id=jid) == every and
                    by_partition(m, "lagsight_kafka_group_lag_seconds", group=flink_group) in
                    ({}, every) and
                    by_partition(m, "lagsight_flink_lag_seconds", job_id=jid) == every and
                    # A read_uncommitted reader does receive aborted records: they are its lag.
                    by_partition(m, "lagsight_kafka_group_lag_records", group=plain_group) ==
                    {0: 2.0 + OPEN, 1: 0.0})
        lagsight.wait_for(aborted_seen, "no read_committed lag after the abort", timeout=60)
        lagsight.wait_for(
            lambda m: {dict(k)["cause"] for k, v in promtext.select(
                m, "lagsight_diagnosis", job_id=jid).items() if v == 1} == {"healthy"},
            "still healthy after the abort", timeout=60)
