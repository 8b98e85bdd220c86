"""Who holds each partition: lagsight's member series against Kafka's own ``--describe --members``.

Ground truth is only ``kafka-consumer-groups.sh --describe --members --verbose`` of the test's
groups (named, so other tests' groups on the shared broker cannot upset the parse), read until
the groups have settled (every partition held by exactly one of the test's members),
then read again after lagsight's scrape: the two reads must agree, so both sides describe the
same assignment. Classic and KIP-848 groups get a member_info series per member and a count of
assigned partitions per member and topic; the partition_owner series only when the cluster's
config asks for ``series: {partition_owners: true}``. Groups without members get none.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack

import promtext
import workload
from conftest import wait_until
from group_members import GroupMember, MemberRow, consumer_groups_describe_members, \
    parse_describe_members

MEMBER_INFO = "lagsight_kafka_group_member_info"
ASSIGNED = "lagsight_kafka_group_member_assigned_partitions"
OWNER = "lagsight_kafka_group_partition_owner"
OWNERS_ON = {"series": {"partition_owners": True}}
# A few tool reads (about 1.5 s each) while members join or a rebalance completes.
SETTLE_SECONDS = 40.0


def exported(metrics: promtext.Samples, name: str, cluster: str, prefix: str,
             *key_labels: str) -> dict[tuple, float]:
    """Series of ``name`` for groups starting with ``prefix``, keyed by ``key_labels``' values
    (partitions as ints, to compare with the tool)."""
    result = {}
    for label_set, value in promtext.select(metrics, name, kafka_cluster=cluster).items():
        labels = dict(label_set)
        if labels["group"].startswith(prefix):
            result[tuple(int(labels[key]) if key == "partition" else labels[key]
                         for key in key_labels)] = value
    return result


def read_members(bootstrap: str, described: Sequence[str]) -> frozenset[MemberRow]:
    """The tool's members of the ``described`` groups (the test's own, all of them)."""
    return frozenset(consumer_groups_describe_members(bootstrap, described))


def settled(rows: frozenset[MemberRow], groups: dict[str, tuple[set[str], set]]) -> bool:
    """Each group of ``groups`` ({group: (client ids, (topic, partition)s)}) has exactly those
    members and they hold every one of those partitions, each partition once."""
    for group, (clients, partitions) in groups.items():
        members = [row for row in rows if row.group == group]
        held = [pair for row in members for pair in row.assignment]
        if (sorted(row.client_id for row in members) != sorted(clients)
                or sorted(held) != sorted(partitions)):
            return False
    return True


def read_settled(bootstrap: str, described: Sequence[str],
                 groups: dict[str, tuple[set[str], set]]) -> frozenset[MemberRow]:
    """The tool's members of the ``described`` groups, once ``groups`` have settled."""
    def members() -> frozenset[MemberRow] | None:
        rows = read_members(bootstrap, described)
        return rows if settled(rows, groups) else None
    return wait_until(members, SETTLE_SECONDS, f"Kafka's tool to show {sorted(groups)} settled",
                      interval=0.1)


def expected_series(rows: frozenset[MemberRow], described_groups: set[str]
                    ) -> tuple[dict, dict, dict]:
    """member_info, assigned_partitions and partition_owner as lagsight must export them for
    the tool's ``rows``: only members of ``described_groups`` (those with members)."""
    classic = [row for row in rows if row.group in described_groups]
    info = {(r.group, r.member_id, r.client_id, r.host, r.group_instance_id): 1 for r in classic}
    assigned = {(r.group, r.member_id, topic): count for r in classic
                for topic, count in r.partitions_per_topic().items()}
    owners = {(r.group, topic, partition, r.member_id): 1 for r in classic
              for topic, partition in r.assignment}
    return info, assigned, owners


def assert_member_series(metrics: promtext.Samples, rows: frozenset[MemberRow],
                         described_groups: set[str], cluster: str, prefix: str,
                         owners_on: bool) -> None:
    """The prefix's member series equal the tool's ``rows``, no more (no series for groups
    outside ``described_groups``, nor owner series unless ``owners_on``)."""
    info, assigned, owners = expected_series(rows, described_groups)
    assert exported(metrics, MEMBER_INFO, cluster, prefix, "group", "member_id", "client_id",
                    "host", "group_instance_id") == info
    assert exported(metrics, ASSIGNED, cluster, prefix, "group", "member_id", "topic") == assigned
    assert exported(metrics, OWNER, cluster, prefix, "group", "topic", "partition",
                    "member_id") == (owners if owners_on else {})


def scrape_between_tool_reads(lagsight, bootstrap: str, described: Sequence[str],
                              groups: dict[str, tuple[set[str], set]]
                              ) -> tuple[promtext.Samples, frozenset[MemberRow]]:
    """A scrape from a poll that started after the groups settled, with the tool's members read
    before and after it: equal, so nothing moved around the scrape."""
    before = read_settled(bootstrap, described, groups)
    since = time.time()
    metrics = lagsight.wait_for_fresh_poll(since)
    after = read_members(bootstrap, described)
    assert after == before, "the groups changed while lagsight was scraped"
    return metrics, before


def test_members_parser_reads_kafka_4_1_output():
    """The parser against output Kafka 4.1.1's tool really printed (--verbose): KIP-848 columns
    even for a classic group, a blank GROUP-INSTANCE-ID cell, no such column for a group whose
    members have none, a member holding nothing ("-"), a group without members (header only)."""
    output = (
        "\n"
        "GROUP           CONSUMER-ID                                   GROUP-INSTANCE-ID HOST "
        "           CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT    "
        "TARGET-EPOCH    TARGET-ASSIGNMENT   \n"
        "cg              client-2-445652d4-e2df-461c-862d-1a3f07d461c3                   "
        "/127.0.0.1      client-2        3               -               orders:2,3;payments:1 "
        "-               -                   \n"
        "cg              static-1-7de3ed4e-340e-43bd-ad79-6931d3797cfc static-1          "
        "/127.0.0.1      client-1        2               -               orders:4,5            "
        "-               -                   \n"
        "\n"
        "GROUP           CONSUMER-ID            HOST            CLIENT-ID       #PARTITIONS     "
        "CURRENT-EPOCH   CURRENT-ASSIGNMENT              TARGET-EPOCH    TARGET-ASSIGNMENT"
        "              \n"
        "kg              5jT8pKaMTE2LyVDH8pAacA /127.0.0.1      kip-client      8               "
        "1               orders:0,1,2,3,4,5;payments:0,1 1               "
        "orders:0,1,2,3,4,5;payments:0,1\n"
        "\n"
        "GROUP           CONSUMER-ID                                HOST            CLIENT-ID    "
        "   #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    "
        "TARGET-ASSIGNMENT   \n"
        "few             few-2-b255755a-8727-4e3b-86f9-7bea1c440938 /127.0.0.1      few-2        "
        "   0               -               -                    -               -        "
        "           \n"
        "\n"
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     "
        "CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   \n")
    rows = parse_describe_members(output)
    assert [(r.group, r.member_id, r.group_instance_id, r.host, r.client_id, r.current_epoch)
            for r in rows] == [
        ("cg", "client-2-445652d4-e2df-461c-862d-1a3f07d461c3", "", "/127.0.0.1", "client-2",
         None),
        ("cg", "static-1-7de3ed4e-340e-43bd-ad79-6931d3797cfc", "static-1", "/127.0.0.1",
         "client-1", None),
        ("kg", "5jT8pKaMTE2LyVDH8pAacA", "", "/127.0.0.1", "kip-client", 1),
        ("few", "few-2-b255755a-8727-4e3b-86f9-7bea1c440938", "", "/127.0.0.1", "few-2", None)]
    assert rows[0].assignment == {("orders", 2), ("orders", 3), ("payments", 1)}
    assert rows[0].partitions_per_topic() == {"orders": 2, "payments": 1}
    assert rows[2].partitions == 8 and len(rows[2].assignment) == 8
    assert rows[3].assignment == frozenset() and rows[3].partitions_per_topic() == {}


def test_owners_equal_kafka_and_follow_a_member_leaving(kafka_broker, start_lagsight,
                                                        unique_prefix):
    """Three classic members (one static) over two topics, one with committed offsets and one
    without: every member, its partition counts and each assigned partition's holder exported
    as the tool reports them, and the KIP-848 group's likewise; a simple and an empty group get
    none. When a member leaves, the series follow the rebalance within a poll, and the one who
    left disappears."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    orders, payments = f"{prefix}-orders", f"{prefix}-payments"
    classic, simple = f"{prefix}-classic", f"{prefix}-simple"
    empty, kip848 = f"{prefix}-empty", f"{prefix}-kip848"
    workload.create_topic(bootstrap, orders, 6)
    workload.create_topic(bootstrap, payments, 2)
    workload.produce(bootstrap, orders, [2] * 6)
    all_partitions = {(orders, p) for p in range(6)} | {(payments, p) for p in range(2)}
    # Committed before anyone joins: the classic group holds offsets on every orders partition
    # and none on payments, so owners are checked on partitions with and without a commit.
    workload.commit_without_joining(bootstrap, classic, {(orders, p): 1 for p in range(6)})
    workload.commit_without_joining(bootstrap, simple, {(orders, 0): 1, (payments, 1): 0})
    workload.make_empty_group(bootstrap, empty, [payments], commit_at=0)
    lagsight = start_lagsight(bootstrap, kafka_settings=OWNERS_ON)

    with ExitStack() as members:
        leaving, static, staying = (members.enter_context(GroupMember(
            bootstrap, classic, [orders, payments], f"{prefix}-{name}",
            group_instance_id=instance)) for name, instance in [
                ("leaving", None), ("static", f"{prefix}-instance"), ("staying", None)])
        members.enter_context(GroupMember(bootstrap, kip848, [payments], f"{prefix}-kip848",
                                          protocol="consumer"))
        groups = {classic: ({leaving.client_id, static.client_id, staying.client_id},
                            all_partitions),
                  kip848: ({f"{prefix}-kip848"}, {(payments, 0), (payments, 1)})}
        described = [classic, simple, empty, kip848]
        metrics, rows = scrape_between_tool_reads(lagsight, bootstrap, described, groups)
        # The scenario holds what this test claims: a static member, a KIP-848 member, and
        # lagsight never joined any group (the members are the test's own, no more).
        assert {r.group_instance_id for r in rows if r.group == classic} == {
            "", f"{prefix}-instance"}
        assert {r.group for r in rows if r.current_epoch is not None} == {kip848}
        assert {r.client_id for r in rows} == {m.client_id for m in (leaving, static, staying)} \
            | {f"{prefix}-kip848"}
        assert_member_series(metrics, rows, {classic, kip848}, lagsight.cluster, prefix,
                             owners_on=True)

        leaving.stop()
        groups[classic] = ({static.client_id, staying.client_id}, all_partitions)
        metrics, moved = scrape_between_tool_reads(lagsight, bootstrap, described, groups)
        assert_member_series(metrics, moved, {classic, kip848}, lagsight.cluster, prefix,
                             owners_on=True)
        # The member who left held partitions before, and no series names it any more.
        [gone] = [r for r in rows if r.client_id == leaving.client_id]
        assert gone.assignment
        assert not [key for name in (MEMBER_INFO, ASSIGNED, OWNER)
                    for key in exported(metrics, name, lagsight.cluster, prefix, "member_id")
                    if key == (gone.member_id,)]


def test_partition_owners_are_off_by_default(kafka_broker, start_lagsight, unique_prefix):
    """Without ``partition_owners`` the members and their counts are still exported, as the
    tool reports them, and no partition_owner series at all; the status page names the holder
    of the group's most lagging partition."""
    bootstrap, prefix = kafka_broker.bootstrap, unique_prefix
    topic, classic = f"{prefix}-orders", f"{prefix}-classic"
    workload.create_topic(bootstrap, topic, 3)
    workload.produce(bootstrap, topic, [2] * 3)
    # Committed offsets on every partition, so no owner series is not merely for want of them.
    workload.commit_without_joining(bootstrap, classic, {(topic, p): 1 for p in range(3)})
    lagsight = start_lagsight(bootstrap)
    with GroupMember(bootstrap, classic, [topic], f"{prefix}-one"), \
            GroupMember(bootstrap, classic, [topic], f"{prefix}-two"):
        groups = {classic: ({f"{prefix}-one", f"{prefix}-two"}, {(topic, p) for p in range(3)})}
        metrics, rows = scrape_between_tool_reads(lagsight, bootstrap, [classic], groups)
        assert_member_series(metrics, rows, {classic}, lagsight.cluster, prefix,
                             owners_on=False)
        # The status page names, beside the group's largest lag (1 record on each partition,
        # so the first: partition 0), the member the tool says holds it.
        [holder] = [r for r in rows if (topic, 0) in r.assignment]
        expected = (f"largest lag (1 record): {topic}/0, held by {holder.client_id} on "
                    f"{holder.host} ({holder.member_id})")

        def page_names_holder() -> bool:
            status, page = lagsight.get("/")
            return status == 200 and expected in page
        wait_until(page_names_holder, 30, f"the status page to say {expected!r}")
        assert read_members(bootstrap, [classic]) == rows  # the holder did not change meanwhile
        assert not promtext.select(metrics, OWNER)
