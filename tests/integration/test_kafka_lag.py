"""lagsight against a real Kafka broker: what it exports must equal what Kafka's own tools report.

Ground truth comes only from Kafka's CLI classes (ConsumerGroupCommand, GroupsCommand,
GetOffsetShell), read while nothing writes. lagsight is then scraped after a poll that started
later than the last write, so both sides describe the same state of the cluster.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

import kafka_broker as kafka
import promtext
import workload
from conftest import _register_log_for_failures, wait_until
from kafka_broker import KafkaBroker

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

GROUP_INFO = "lagsight_kafka_group_info"


@dataclass(frozen=True)
class KafkaTruth:
    """What Kafka's tools report about the groups and topics whose names start with a prefix."""
    offsets: list[kafka.GroupOffsetRow]
    listings: dict[str, kafka.GroupListing]
    protocols: dict[str, kafka.GroupProtocol]
    memberships: dict[str, kafka.GroupMembership]
    earliest: dict[tuple[str, int], int]
    latest: dict[tuple[str, int], int]


def read_kafka_truth(bootstrap: str, prefix: str) -> KafkaTruth:
    """Runs Kafka's tools (concurrently: each is a ~1.5 s JVM start) and keeps the prefix's part."""
    topics = f"{prefix}-.*"
    with ThreadPoolExecutor(max_workers=3) as pool:
        offsets = pool.submit(kafka.consumer_groups_describe_all, bootstrap)
        listings = pool.submit(kafka.consumer_groups_list_with_state_and_type, bootstrap)
        protocols = pool.submit(kafka.groups_list, bootstrap)
        memberships = pool.submit(kafka.consumer_groups_describe_state, bootstrap)
        earliest = pool.submit(kafka.topic_offsets, bootstrap, topics, "earliest")
        latest = pool.submit(kafka.topic_offsets, bootstrap, topics, "latest")
    truth = KafkaTruth(
        offsets=[row for row in offsets.result() if row.group.startswith(prefix)],
        listings={g.group: g for g in listings.result() if g.group.startswith(prefix)},
        protocols={g.group: g for g in protocols.result() if g.group.startswith(prefix)},
        memberships={g.group: g for g in memberships.result() if g.group.startswith(prefix)},
        earliest=earliest.result(),
        latest=latest.result())
    # Two tools reading different log ends would mean something still writes.
    assert all(row.log_end_offset == truth.latest[(row.topic, row.partition)]
               for row in truth.offsets), "the tools disagree on log end offsets"
    return truth


def lagsight_kind(protocol: kafka.GroupProtocol) -> str:
    """The ``kind`` label lagsight must give a group, from kafka-groups.sh's TYPE and PROTOCOL."""
    if protocol.type == "Consumer":
        return "consumer"
    if protocol.is_simple:
        return "simple"
    assert (protocol.type, protocol.protocol) == ("Classic", "consumer"), protocol
    return "classic"


def lagsight_state(tool_state: str) -> str:
    """Kafka's state name (Stable, PreparingRebalance, ...) in lagsight's snake case."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", tool_state).lower()


def exported(metrics: promtext.Samples, name: str, cluster: str, prefix: str,
             *key_labels: str) -> dict[tuple, float]:
    """Series of ``name`` for groups (or, without a group label, topics) starting with ``prefix``.

    Keyed by the values of ``key_labels``, with partitions as ints to compare with the tools.
    """
    result = {}
    for label_set, value in promtext.select(metrics, name, kafka_cluster=cluster).items():
        labels = dict(label_set)
        if labels.get("group", labels.get("topic", "")).startswith(prefix):
            result[tuple(int(labels[key]) if key == "partition" else labels[key]
                         for key in key_labels)] = value
    return result


def single_value(metrics: promtext.Samples, name: str, **labels: str) -> float:
    series = promtext.select(metrics, name, **labels)
    assert len(series) == 1, f"expected one {name}{labels} series, got {series}"
    return next(iter(series.values()))


def series_naming(metrics: promtext.Samples, label: str, value: str) -> list[promtext.SeriesKey]:
    return [key for key in metrics if (label, value) in key[1]]


def assert_lagsight_matches(metrics: promtext.Samples, truth: KafkaTruth, cluster: str,
                            prefix: str) -> None:
    """Every per-group and per-partition series of the prefix equals Kafka's tools, no more."""
    assert single_value(metrics, "lagsight_kafka_up", kafka_cluster=cluster) == 1
    committed_rows = [row for row in truth.offsets if row.current_offset is not None]

    committed = {(r.group, r.topic, r.partition): r.current_offset for r in committed_rows}
    assert exported(metrics, "lagsight_kafka_group_committed_offset", cluster, prefix,
                    "group", "topic", "partition") == committed

    lag = {(r.group, r.topic, r.partition): r.lag for r in committed_rows}
    assert exported(metrics, "lagsight_kafka_group_lag_records", cluster, prefix,
                    "group", "topic", "partition") == lag

    topic_lag: dict[tuple, int] = {}
    max_lag: dict[tuple, int] = {}
    for row in committed_rows:
        topic_lag[(row.group, row.topic)] = topic_lag.get((row.group, row.topic), 0) + row.lag
        max_lag[(row.group,)] = max(max_lag.get((row.group,), 0), row.lag)
    assert exported(metrics, "lagsight_kafka_group_topic_lag_records", cluster, prefix,
                    "group", "topic") == topic_lag
    assert exported(metrics, "lagsight_kafka_group_max_lag_records", cluster, prefix,
                    "group") == max_lag

    assert exported(metrics, "lagsight_kafka_partition_latest_offset", cluster, prefix,
                    "topic", "partition") == truth.latest
    assert exported(metrics, "lagsight_kafka_partition_earliest_offset", cluster, prefix,
                    "topic", "partition") == truth.earliest

    info = {(group, lagsight_state(listing.state), lagsight_kind(truth.protocols[group])): 1
            for group, listing in truth.listings.items()}
    assert exported(metrics, GROUP_INFO, cluster, prefix, "group", "state", "kind") == info

    # Every group's count, KIP-848 ones too (lagsight's own ConsumerGroupDescribe).
    members = {(group,): m.members for group, m in truth.memberships.items()}
    assert exported(metrics, "lagsight_kafka_group_members", cluster, prefix,
                    "group") == members

    # Partitions of a topic a group commits on, without a commit of that group.
    uncommitted = {(group, topic, partition): 1
                   for group, topic in {(r.group, r.topic) for r in committed_rows}
                   for (t, partition) in truth.latest if t == topic
                   and (group, topic, partition) not in committed}
    assert exported(metrics, "lagsight_kafka_group_partition_uncommitted", cluster, prefix,
                    "group", "topic", "partition") == uncommitted


@pytest.mark.parametrize("batched", [True, False], ids=["batched_offset_fetch", "per_group"])
def test_lag_equals_kafka_tools(kafka_broker, start_lagsight, unique_prefix, batched):
    """Groups of every kind, with lag, exported exactly as Kafka's tools report them: with the
    committed offsets read many groups per OffsetFetch (lagsight's own client, the default on
    PLAINTEXT) and one group per request (librdkafka's)."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    orders, payments = f"{prefix}-orders", f"{prefix}-payments"
    lagsight = start_lagsight(bootstrap, topics={"allow": [".*"], "deny": ["__.*"]},
                              kafka_settings={"batched_offset_fetch": batched})
    workload.create_topic(bootstrap, orders, 4)
    workload.create_topic(bootstrap, payments, 2)
    workload.produce(bootstrap, orders, [12, 9, 7, 0])
    workload.produce(bootstrap, payments, [5, 3])

    with ExitStack() as active_members:
        active_members.enter_context(workload.SubscribedConsumer(
            bootstrap, f"{prefix}-classic-active", [orders, payments], commit_at=3))
        active_members.enter_context(workload.SubscribedConsumer(
            bootstrap, f"{prefix}-kip848-active", [payments], commit_at=1, protocol="consumer"))
        workload.make_empty_group(bootstrap, f"{prefix}-classic-empty", [orders], commit_at=5)
        workload.make_empty_group(bootstrap, f"{prefix}-kip848-empty", [orders], commit_at=8,
                                  protocol="consumer")
        workload.commit_without_joining(bootstrap, f"{prefix}-simple", {
            (orders, 0): 2, (orders, 1): 9, (orders, 2): 1, (orders, 3): 0, (payments, 0): 4})
        workload.commit_without_joining(bootstrap, f"{prefix}-simple-partial", {
            (orders, 0): 6, (orders, 1): 3})
        # As retention would: partition 0 now starts above the simple group's commit (lag 10).
        workload.delete_records_before(bootstrap, orders, {0: 4})

        quiescent_since = time.time()
        truth = read_kafka_truth(bootstrap, prefix)
        # The scenario must really hold what this test claims to cover.
        assert {lagsight_kind(p) for p in truth.protocols.values()} == {
            "classic", "simple", "consumer"}
        assert {listing.state for listing in truth.listings.values()} == {"Stable", "Empty"}
        assert truth.earliest[(orders, 0)] == 4

        metrics = lagsight.wait_for_fresh_poll(quiescent_since)
        assert_lagsight_matches(metrics, truth, lagsight.cluster, prefix)
        partial = exported(metrics, "lagsight_kafka_group_partition_uncommitted",
                           lagsight.cluster, f"{prefix}-simple-partial", "topic", "partition")
        assert partial == {(orders, 2): 1, (orders, 3): 1}

    # The path the parameter names is the one that read them: batched, a poll answered every
    # group it asked for (the broker's, other tests' included) from its own OffsetFetch answers.
    log = lagsight.log_file.read_text()
    answered = [(int(n), int(m)) for n, m in re.findall(
        r"(\d+) of (\d+) groups' committed offsets in [1-9]\d* batched requests", log)]
    assert any(n == m >= 6 for n, m in answered) == batched, answered[-5:]
    batched_line = "committed offsets read with batched OffsetFetch requests (KIP-709)"
    assert (batched_line in log) == batched
    # Either way the classic groups were described by lagsight's own DescribeGroups v5, not by
    # librdkafka's admin worker (docs/facts.md): every one asked for, at some poll.
    described = [(int(n), int(m)) for n, m in re.findall(
        r"(\d+) of (\d+) classic groups described in [1-9]\d* DescribeGroups v5 requests", log)]
    assert any(n == m >= 2 for n, m in described), described[-5:]
    assert lagsight.get("/healthz")[0] == 200
    assert lagsight.get("/readyz")[0] == 200


def test_group_and_topic_filters(kafka_broker, start_lagsight, unique_prefix):
    """Denied (or not allowed) groups and denied topics appear in no series at all."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    kept_topic, denied_topic = f"{prefix}-kept", f"{prefix}-secret"
    kept_group, denied_group = f"{prefix}-kept-group", f"{prefix}-denied-group"
    not_allowed_group = f"outside-{prefix}"
    for topic in (kept_topic, denied_topic):
        workload.create_topic(bootstrap, topic, 2)
        workload.produce(bootstrap, topic, [4, 4])
    workload.commit_without_joining(bootstrap, kept_group, {
        (kept_topic, 0): 1, (kept_topic, 1): 2, (denied_topic, 0): 3})
    for group in (denied_group, not_allowed_group):
        workload.commit_without_joining(bootstrap, group, {(kept_topic, 0): 1})
    quiescent_since = time.time()

    lagsight = start_lagsight(
        bootstrap,
        groups={"allow": [f"{prefix}-.*"], "deny": [f"{prefix}-denied-.*"]},
        topics={"allow": [".*"], "deny": ["__.*", denied_topic]})
    kafka_rows = [row for row in kafka.consumer_groups_describe_all(bootstrap)
                  if row.group in (kept_group, denied_group, not_allowed_group)]
    metrics = lagsight.wait_for_fresh_poll(quiescent_since)

    # Kafka has all three groups, so an absence below is lagsight's filtering.
    assert {row.group for row in kafka_rows} == {kept_group, denied_group, not_allowed_group}
    assert exported(metrics, "lagsight_kafka_group_committed_offset", lagsight.cluster,
                    kept_group, "topic", "partition") == {
        (row.topic, row.partition): row.current_offset
        for row in kafka_rows if row.group == kept_group and row.topic == kept_topic}
    assert series_naming(metrics, "group", denied_group) == []
    assert series_naming(metrics, "group", not_allowed_group) == []
    assert series_naming(metrics, "topic", denied_topic) == []


def test_deleted_group_disappears(kafka_broker, start_lagsight, unique_prefix):
    """A group deleted while lagsight runs has no series after the next poll."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    topic = f"{prefix}-events"
    deleted_group, surviving_group = f"{prefix}-deleted", f"{prefix}-surviving"
    workload.create_topic(bootstrap, topic, 2)
    workload.produce(bootstrap, topic, [3, 3])
    for group in (deleted_group, surviving_group):
        workload.commit_without_joining(bootstrap, group, {(topic, 0): 1, (topic, 1): 2})
    lagsight = start_lagsight(bootstrap)
    lagsight.wait_for(
        lambda m: all(exported(m, GROUP_INFO, lagsight.cluster, group, "group")
                      for group in (deleted_group, surviving_group)),
        "both groups to be exported")

    kafka.delete_group(bootstrap, deleted_group)
    deleted_at = time.time()
    assert deleted_group not in {
        g.group for g in kafka.consumer_groups_list_with_state_and_type(bootstrap)}

    metrics = lagsight.wait_for_fresh_poll(deleted_at)
    assert series_naming(metrics, "group", deleted_group) == []
    assert exported(metrics, "lagsight_kafka_group_committed_offset", lagsight.cluster,
                    surviving_group, "topic", "partition") == {(topic, 0): 1, (topic, 1): 2}


def test_broker_outage_and_restart(own_broker, start_lagsight, unique_prefix):
    """Broker down: up=0, no stale group data, lagsight alive. Broker back: exact again."""
    bootstrap, prefix = own_broker.bootstrap, unique_prefix
    topic = f"{prefix}-events"
    workload.create_topic(bootstrap, topic, 3)
    workload.produce(bootstrap, topic, [6, 5, 4])
    workload.commit_without_joining(bootstrap, f"{prefix}-simple", {
        (topic, 0): 2, (topic, 1): 5, (topic, 2): 0})
    workload.make_empty_group(bootstrap, f"{prefix}-classic-empty", [topic], commit_at=3)
    lagsight = start_lagsight(bootstrap)
    cluster = lagsight.cluster
    quiescent_since = time.time()
    assert_lagsight_matches(lagsight.wait_for_fresh_poll(quiescent_since),
                            read_kafka_truth(bootstrap, prefix), cluster, prefix)

    own_broker.stop()
    stopped_at = time.time()
    down = lagsight.wait_for(
        lambda m: single_value(m, "lagsight_kafka_up", kafka_cluster=cluster) == 0,
        "lagsight_kafka_up to drop to 0")
    assert lagsight.running
    assert lagsight.get("/healthz")[0] == 200
    assert lagsight.last_poll(down) <= stopped_at, "a poll 'succeeded' with the broker down"
    assert single_value(down, "lagsight_kafka_poll_duration_seconds", kafka_cluster=cluster) >= 0
    stale = [key for key in down if ("kafka_cluster", cluster) in key[1]
             and {label for label, _ in key[1]} & {"group", "topic"}]
    assert stale == [], "group or partition series served while the cluster is unreachable"
    # A broker that is down costs lagsight nothing: librdkafka 2.0.2 with sparse connections
    # reconnected in a tight loop (97 % of a core) until the broker came back.
    before, since = lagsight.cpu_seconds(), time.monotonic()
    time.sleep(10)
    share = (lagsight.cpu_seconds() - before) / (time.monotonic() - since)
    assert share < 0.2, f"lagsight used {share:.0%} of a core while the broker was down"

    own_broker.start()
    # New records after the restart: lag only matches if lagsight really polls again.
    workload.produce(bootstrap, topic, [2, 2, 2])
    quiescent_since = time.time()
    truth = read_kafka_truth(bootstrap, prefix)
    assert_lagsight_matches(lagsight.wait_for_fresh_poll(quiescent_since), truth, cluster, prefix)


@pytest.mark.parametrize("batched_offset_fetch", [False, True], ids=["per-group", "batched"])
def test_group_coordinator_moving_to_another_broker(own_broker, start_lagsight, unique_prefix,
                                                    tmp_path, request, batched_offset_fetch):
    """A group's coordinator moves to another broker, as in a rolling restart or a partition
    reassignment: lagsight stays up and its values are exact again within a poll.

    librdkafka's per-group path (what a broker before Kafka 3.0 or a SCRAM cluster gets) keeps
    sending the group's OffsetFetch to the coordinator it cached, which now answers
    NOT_COORDINATOR: librdkafka 2.0.2 crashed there in a client without a group.id, and with one
    the group had no offsets at any later poll until lagsight reopened its client
    (docs/facts.md). The batched path locates the coordinator afresh at each poll."""
    bootstrap, prefix = own_broker.bootstrap, unique_prefix
    second = KafkaBroker(tmp_path / "kafka-2", joins=own_broker)
    _register_log_for_failures(request, "second kafka broker log", second.log_file)
    with second:
        topic, group = f"{prefix}-events", f"{prefix}-simple"
        workload.create_topic(bootstrap, topic, 2)
        workload.produce(bootstrap, topic, [6, 5])
        workload.commit_without_joining(bootstrap, group, {(topic, 0): 2, (topic, 1): 5})
        # A classic group too: lagsight's own DescribeGroups must find its new coordinator.
        workload.make_empty_group(bootstrap, f"{prefix}-classic-empty", [topic], commit_at=3)
        lagsight = start_lagsight(
            bootstrap, kafka_settings={"batched_offset_fetch": batched_offset_fetch})
        cluster = lagsight.cluster
        assert_lagsight_matches(lagsight.wait_for_fresh_poll(time.time()),
                                read_kafka_truth(bootstrap, prefix), cluster, prefix)

        def coordinator() -> int | None:  # as kafka-consumer-groups --describe --state says
            return next(g.coordinator_id for g in kafka.consumer_groups_describe_state(bootstrap)
                        if g.group == group)

        before = coordinator()
        after = second.node_id if before == own_broker.node_id else own_broker.node_id
        offsets_partitions = int(own_broker.configured("offsets.topic.num.partitions"))
        workload.move_partitions(bootstrap, "__consumer_offsets", range(offsets_partitions), after,
                                 tmp_path)
        wait_until(lambda: coordinator() == after, 60,
                   f"the group's coordinator to move from broker {before} to {after}")
        # New records and a commit after the move: the values are only right if lagsight reads
        # the group from its new coordinator.
        workload.produce(bootstrap, topic, [3, 3])
        workload.commit_without_joining(bootstrap, group, {(topic, 0): 7, (topic, 1): 6})
        moved_at = time.time()
        for _ in range(3):  # polls after the move, each exact and with lagsight still up
            assert_lagsight_matches(lagsight.wait_for_fresh_poll(moved_at),
                                    read_kafka_truth(bootstrap, prefix), cluster, prefix)
            moved_at = time.time()
        # Stopped while both brokers serve: a shutdown that waited on a stopping broker would
        # cost the suite seconds.
        assert lagsight.stop() == 0


def test_offset_rewind_is_counted_as_a_regression(kafka_broker, start_lagsight, unique_prefix):
    """A group whose committed offset goes back (as after a restore from an old savepoint)."""
    bootstrap = kafka_broker.bootstrap
    topic, group = f"{unique_prefix}-t", f"{unique_prefix}-g"
    workload.create_topic(bootstrap, topic, 2)
    workload.produce(bootstrap, topic, [200, 200])
    workload.commit_without_joining(bootstrap, group, {(topic, 0): 150, (topic, 1): 150})
    lagsight = start_lagsight(bootstrap)
    committed = "lagsight_kafka_group_committed_offset"
    lagsight.wait_for(lambda m: promtext.select(m, committed, group=group, partition="0") and
                      set(promtext.select(m, committed, group=group).values()) == {150},
                      "the first commits")
    workload.commit_without_joining(bootstrap, group, {(topic, 0): 40, (topic, 1): 160})
    truth = {r.partition: r.current_offset for r in kafka.consumer_groups_describe_all(bootstrap)
             if r.group == group}
    assert truth == {0: 40, 1: 160}
    metrics = lagsight.wait_for(
        lambda m: set(promtext.select(m, committed, group=group, partition="0").values()) == {40},
        "the rewound commit")
    regressions = {dict(k)["partition"]: v for k, v in promtext.select(
        metrics, "lagsight_kafka_group_offset_regressions_total", group=group).items()}
    assert regressions == {"0": 1}
