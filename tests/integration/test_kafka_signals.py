"""The Kafka-side data behind lagsight's derived signals, against real brokers.

- ``offsets.retention.minutes`` as the broker reports it (kafka-configs), in seconds;
- which cluster answers at each configured bootstrap address (ClusterTool and the cluster id
  StorageTool wrote to meta.properties), and the mismatch when a bootstrap list mixes clusters;
- lag in seconds from the timestamp of the oldest unconsumed record, which lagsight reads without
  joining or committing for any group (``kafka-consumer-groups --list`` must show no new group).

Ground truth comes from Kafka's own tools and from the timestamps the test wrote itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

import kafka_broker as kafka
import promtext
import workload
from kafka_broker import KafkaBroker

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

RETENTION = "lagsight_kafka_offsets_retention_seconds"
BOOTSTRAP_INFO = "lagsight_kafka_bootstrap_cluster_info"
MISMATCH = "lagsight_kafka_cluster_mismatch"
LAG_SECONDS = "lagsight_kafka_group_lag_seconds"
SHORT_RETENTION_MINUTES = 3


@pytest.fixture(scope="module")
def short_retention_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A second cluster (its own KRaft cluster id), whose offsets expire after 3 minutes."""
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-short-retention"),
                         extra_properties={
                             "offsets.retention.minutes": str(SHORT_RETENTION_MINUTES)})
    with broker:
        yield broker


def single_value(metrics: promtext.Samples, name: str, **labels: str) -> float:
    series = promtext.select(metrics, name, **labels)
    assert len(series) == 1, f"expected one {name}{labels} series, got {series}"
    return next(iter(series.values()))


def bootstrap_ids(metrics: promtext.Samples, cluster: str) -> dict[str, str]:
    """``{bootstrap address: cluster id}`` from lagsight's bootstrap_cluster_info series."""
    ids = {}
    for label_set, value in promtext.select(metrics, BOOTSTRAP_INFO,
                                            kafka_cluster=cluster).items():
        labels = dict(label_set)
        assert value == 1
        ids[labels["bootstrap"]] = labels["cluster_id"]
    return ids


def kafka_cluster_id(broker: KafkaBroker) -> str:
    """The broker's cluster id by Kafka's ClusterTool, checked against its meta.properties."""
    answered = kafka.cluster_id(broker.bootstrap)
    assert answered == broker.stored_cluster_id()
    return answered


def test_offsets_retention_is_the_brokers_config(kafka_broker, short_retention_broker,
                                                 start_lagsight):
    """The default broker (7 days) and one started with offsets.retention.minutes=3."""
    for broker in (kafka_broker, short_retention_broker):
        minutes = int(kafka.broker_configs(broker.bootstrap)["offsets.retention.minutes"])
        lagsight = start_lagsight(broker.bootstrap)
        metrics = lagsight.wait_for(
            lambda m: promtext.select(m, RETENTION, kafka_cluster=lagsight.cluster),
            "the offsets retention to be exported")
        assert single_value(metrics, RETENTION, kafka_cluster=lagsight.cluster) == minutes * 60
    # The brokers really differ: the default is 7 days.
    assert int(kafka.broker_configs(kafka_broker.bootstrap)["offsets.retention.minutes"]) == 10080
    assert int(kafka.broker_configs(short_retention_broker.bootstrap)[
        "offsets.retention.minutes"]) == SHORT_RETENTION_MINUTES


def test_bootstrap_list_mixing_two_clusters(kafka_broker, short_retention_broker,
                                            start_lagsight, unique_prefix):
    """Each address's cluster id as Kafka's ClusterTool reports it, and mismatch = 1; nothing is
    read through the mixed list, and lagsight keeps running (librdkafka 2.0.2 crashed with
    SIGSEGV within seconds when one client was connected to both)."""
    first, second = kafka_broker, short_retention_broker
    truth = {first.bootstrap: kafka_cluster_id(first),
             second.bootstrap: kafka_cluster_id(second)}
    assert len(set(truth.values())) == 2, "two clusters were expected to have two ids"
    # A group with lag on each cluster, on a topic of the same name (as with a mirror), so
    # reading either cluster through the list would export it.
    topic, group = f"{unique_prefix}-orders", f"{unique_prefix}-g"
    for broker, partitions in ((first, 3), (second, 2)):
        workload.create_topic(broker.bootstrap, topic, partitions)
        workload.produce(broker.bootstrap, topic, [10] * partitions)
        workload.commit_without_joining(broker.bootstrap, group,
                                        {(topic, p): 4 for p in range(partitions)})
    for broker, partitions in ((first, 3), (second, 2)):
        lags = {row.partition: row.lag for row in kafka.consumer_groups_describe_all(
            broker.bootstrap) if row.group == group}
        assert lags == {p: 6 for p in range(partitions)}, "Kafka's tool: the group's lag there"

    lagsight = start_lagsight(f"{first.bootstrap},{second.bootstrap}")
    metrics = lagsight.wait_for(lambda m: len(bootstrap_ids(m, lagsight.cluster)) == 2,
                                "both bootstrap addresses to answer")
    assert bootstrap_ids(metrics, lagsight.cluster) == truth
    assert single_value(metrics, MISMATCH, kafka_cluster=lagsight.cluster) == 1
    for _ in range(5):
        metrics = lagsight.wait_for_fresh_poll(lagsight.last_poll(metrics))
        assert single_value(metrics, "lagsight_kafka_up", kafka_cluster=lagsight.cluster) == 1
        assert single_value(metrics, MISMATCH, kafka_cluster=lagsight.cluster) == 1
        assert single_value(metrics, "lagsight_kafka_poll_partial_errors",
                            kafka_cluster=lagsight.cluster) == 1
        assert not promtext.select(metrics, "lagsight_kafka_group_lag_records",
                                   kafka_cluster=lagsight.cluster)


def test_one_cluster_is_no_mismatch(kafka_broker, start_lagsight):
    """One address, and two addresses of one cluster: that cluster's id, mismatch = 0."""
    truth = kafka_cluster_id(kafka_broker)
    single = start_lagsight(kafka_broker.bootstrap)
    metrics = single.wait_for(lambda m: bootstrap_ids(m, single.cluster),
                              "the bootstrap address to answer")
    assert bootstrap_ids(metrics, single.cluster) == {kafka_broker.bootstrap: truth}
    assert single_value(metrics, MISMATCH, kafka_cluster=single.cluster) == 0

    # The same listener by another name: two configured addresses, one cluster.
    other_name = f"localhost:{kafka_broker.port}"
    both = start_lagsight(f"{kafka_broker.bootstrap},{other_name}")
    metrics = both.wait_for(lambda m: len(bootstrap_ids(m, both.cluster)) == 2,
                            "both addresses to answer")
    assert bootstrap_ids(metrics, both.cluster) == {kafka_broker.bootstrap: truth,
                                                    other_name: truth}
    assert single_value(metrics, MISMATCH, kafka_cluster=both.cluster) == 0


def produce_with_timestamps(bootstrap: str, topic: str, partition: int,
                            timestamps_ms: list[int]) -> None:
    """One record per timestamp, in order, so the record at offset i has ``timestamps_ms[i]``."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True})
    failures: list[str] = []
    for index, timestamp in enumerate(timestamps_ms):
        producer.produce(topic, value=f"record-{index}".encode(), partition=partition,
                         timestamp=timestamp,
                         on_delivery=lambda error, _msg: error and failures.append(str(error)))
    assert producer.flush(workload.DEFAULT_TIMEOUT_SECONDS) == 0 and not failures, failures


def test_lag_seconds_from_the_oldest_unconsumed_record(kafka_broker, start_lagsight,
                                                       unique_prefix):
    """now − timestamp of the record at the committed offset (or at the log start when
    retention deleted past the commit), read without creating or committing for any group."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    topic, group = f"{prefix}-events", f"{prefix}-simple"
    workload.create_topic(bootstrap, topic, 2)
    # Records a minute apart, the oldest two hours ago: neighbours differ by 60 s, far more
    # than the tolerance below, so the wrong record cannot pass for the right one.
    base_ms = int(time.time() * 1000) - 2 * 3600 * 1000
    timestamps = [base_ms + index * 60_000 for index in range(10)]
    for partition in (0, 1):
        produce_with_timestamps(bootstrap, topic, partition, timestamps)
    workload.commit_without_joining(bootstrap, group, {(topic, 0): 4, (topic, 1): 2})
    # Retention deletes past the group's commit on partition 1: its oldest unread record is 6.
    workload.delete_records_before(bootstrap, topic, {1: 6})
    stored = {0: workload.record_timestamp_ms(bootstrap, topic, 0, 4),
              1: workload.record_timestamp_ms(bootstrap, topic, 1, 6)}
    assert stored == {0: timestamps[4], 1: timestamps[6]}, "the broker kept other timestamps"
    groups_before = {g.group for g in kafka.consumer_groups_list_with_state_and_type(bootstrap)}

    lagsight = start_lagsight(bootstrap, groups={"allow": [f"{prefix}-.*"]})
    method = {"method": "record_timestamp"}

    def lag_seconds(m: promtext.Samples) -> dict[str, float]:
        return {dict(labels)["partition"]: value for labels, value in promtext.select(
            m, LAG_SECONDS, kafka_cluster=lagsight.cluster, group=group, topic=topic,
            **method).items()}

    metrics = lagsight.wait_for(lambda m: len(lag_seconds(m)) == 2,
                                "lag in seconds from record timestamps on both partitions")
    scraped_at_ms = time.time() * 1000
    # lagsight's "now" is its latest poll, at most a couple of seconds before the scrape.
    for partition, lag in lag_seconds(metrics).items():
        expected = (scraped_at_ms - stored[int(partition)]) / 1000
        assert expected - 5 <= lag <= expected + 1, (partition, lag, expected)
    assert single_value(metrics, "lagsight_kafka_record_timestamp_cache_entries",
                        kafka_cluster=lagsight.cluster) == 2
    fetches = single_value(metrics, "lagsight_kafka_record_timestamp_fetches_total",
                           kafka_cluster=lagsight.cluster)
    # Later polls reuse the cached timestamps: no new fetch while the group does not move.
    since = time.time()
    later = lagsight.wait_for_fresh_poll(since)
    assert single_value(later, "lagsight_kafka_record_timestamp_fetches_total",
                        kafka_cluster=lagsight.cluster) == fetches

    # Reading the records created no group and committed nothing.
    groups_after = {g.group for g in kafka.consumer_groups_list_with_state_and_type(bootstrap)}
    assert groups_after == groups_before
    committed = {(row.partition, row.current_offset)
                 for row in kafka.consumer_groups_describe_all(bootstrap) if row.group == group}
    assert committed == {(0, 4), (1, 2)}


def test_a_position_among_records_read_before_needs_no_read(kafka_broker, start_lagsight,
                                                            unique_prefix):
    """Dating positions 2 and 6 reads records 2 to 6 in one pass; a group that moves to 4 later
    is dated from that pass: the record timestamp of record 4 as the broker stored it, and no
    record read for it (lagsight_kafka_record_timestamp_fetches_total stays)."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    topic, behind, ahead = f"{prefix}-passed", f"{prefix}-behind", f"{prefix}-ahead"
    workload.create_topic(bootstrap, topic, 1)
    base_ms = int(time.time() * 1000) - 2 * 3600 * 1000
    timestamps = [base_ms + index * 60_000 for index in range(10)]  # a minute apart
    produce_with_timestamps(bootstrap, topic, 0, timestamps)
    workload.commit_without_joining(bootstrap, behind, {(topic, 0): 2})
    workload.commit_without_joining(bootstrap, ahead, {(topic, 0): 6})
    lagsight = start_lagsight(bootstrap, groups={"allow": [f"{prefix}-.*"]})

    def lag_seconds(m: promtext.Samples, group: str) -> float | None:
        values = list(promtext.select(m, LAG_SECONDS, kafka_cluster=lagsight.cluster,
                                      group=group, topic=topic,
                                      method="record_timestamp").values())
        return values[0] if values else None

    def fetches(m: promtext.Samples) -> float:
        return single_value(m, "lagsight_kafka_record_timestamp_fetches_total",
                            kafka_cluster=lagsight.cluster)

    metrics = lagsight.wait_for(
        lambda m: lag_seconds(m, behind) is not None and lag_seconds(m, ahead) is not None,
        "both groups dated from their records")
    assert fetches(metrics) == 2
    workload.commit_without_joining(bootstrap, behind, {(topic, 0): 4})
    stored = workload.record_timestamp_ms(bootstrap, topic, 0, 4)
    assert stored == timestamps[4], "the broker kept another timestamp"

    def moved(m: promtext.Samples) -> bool:
        lag = lag_seconds(m, behind)
        return lag is not None and lag < (time.time() * 1000 - timestamps[3]) / 1000 - 30
    metrics = lagsight.wait_for(moved, "the group that moved to 4 dated again")
    scraped_at_ms = time.time() * 1000
    expected = (scraped_at_ms - stored) / 1000
    assert expected - 5 <= lag_seconds(metrics, behind) <= expected + 1
    assert fetches(metrics) == 2, "position 4 was read again, not answered by the earlier pass"


def test_record_reader_joins_no_group_with_lagsight_running(kafka_broker, start_lagsight,
                                                            unique_prefix):
    """Many lagging positions read over several polls: Kafka lists no group lagsight made."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    topic = f"{prefix}-wide"
    partitions = 8
    workload.create_topic(bootstrap, topic, partitions)
    workload.produce(bootstrap, topic, [50] * partitions)
    groups = [f"{prefix}-g{index}" for index in range(5)]
    for index, group in enumerate(groups):
        workload.commit_without_joining(
            bootstrap, group, {(topic, p): index * 5 + p for p in range(partitions)})
    groups_before = {g.group for g in kafka.consumer_groups_list_with_state_and_type(bootstrap)}
    lagsight = start_lagsight(bootstrap, groups={"allow": [f"{prefix}-.*"]})
    # 5 groups x 8 partitions: 40 distinct positions, 5 on each partition (read in rounds).
    wanted = len(groups) * partitions
    metrics = lagsight.wait_for(
        lambda m: single_value(m, "lagsight_kafka_record_timestamp_cache_entries",
                               kafka_cluster=lagsight.cluster) == wanted,
        f"{wanted} cached record timestamps")
    assert single_value(metrics, "lagsight_kafka_poll_partial_errors",
                        kafka_cluster=lagsight.cluster) == 0
    groups_after = {g.group for g in kafka.consumer_groups_list_with_state_and_type(bootstrap)}
    assert groups_after == groups_before


def test_lag_seconds_with_producer_timestamps_that_cannot_be_true(kafka_broker, start_lagsight,
                                                                  unique_prefix):
    """A CreateTime is the producer's clock. Half an hour in the future would read as 0 s and
    hide the lag; 1 ms after the epoch would read as 56 years and page. lagsight saw log end pass
    those records (it was running when they were written), so it gives the age from that, and
    method says why; a plausible CreateTime beside them is still used as it is."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    topic, group = f"{prefix}-clocks", f"{prefix}-clocks-reader"
    workload.create_topic(bootstrap, topic, 3)
    lagsight = start_lagsight(bootstrap, groups={"allow": [f"{prefix}-.*"]},
                              topics={"allow": [f"{prefix}-.*"]})
    # A first commit at offset 0 on empty partitions: lagsight keeps the partitions' log-end
    # history from before the records exist.
    workload.commit_without_joining(bootstrap, group, {(topic, p): 0 for p in range(3)})
    lagsight.wait_for(lambda m: promtext.select(m, "lagsight_kafka_group_lag_records",
                                                group=group),
                      "the group's partitions in lagsight, before any record")
    time.sleep(3)  # a few log-end samples at 0

    written_at = time.time()
    now_ms = int(written_at * 1000)
    produce_with_timestamps(bootstrap, topic, 0, [now_ms + 30 * 60 * 1000] * 3)  # ahead
    produce_with_timestamps(bootstrap, topic, 1, [1] * 3)  # the epoch (0 means "now" here)
    produce_with_timestamps(bootstrap, topic, 2, [now_ms - 5_000] * 3)  # a plausible clock
    written_by = time.time()
    stored = {p: workload.record_timestamp_ms(bootstrap, topic, p, 0) for p in range(3)}
    assert stored == {0: now_ms + 30 * 60 * 1000, 1: 1, 2: now_ms - 5_000}, stored

    def ages(m: promtext.Samples) -> dict[int, tuple[str, float]]:
        return {int(dict(labels)["partition"]): (dict(labels)["method"], value)
                for labels, value in promtext.select(m, LAG_SECONDS, group=group,
                                                     topic=topic).items()}

    want = {0: "interpolated_implausible_timestamp", 1: "interpolated_implausible_timestamp",
            2: "record_timestamp"}
    metrics = lagsight.wait_for(
        lambda m: {p: method for p, (method, _) in ages(m).items()} == want,
        f"lag in seconds by {want}")
    scraped_at = time.time()
    seen = ages(metrics)
    # Interpolated: the record was written between two 1 s polls around the produce call.
    for partition in (0, 1):
        age = seen[partition][1]
        assert scraped_at - written_by - 3 <= age <= scraped_at - written_at + 2, (partition, age)
    # The plausible one is its own timestamp's age (5 s older than the write).
    age = seen[2][1]
    expected = scraped_at - (now_ms - 5_000) / 1000
    assert expected - 4 <= age <= expected + 1, age
    # Nothing reads as decades, nothing hides as 0.
    assert all(0 < value < 600 for _, value in seen.values()), seen
