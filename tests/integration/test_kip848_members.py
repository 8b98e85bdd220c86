"""Members of a KIP-848 ("consumer" protocol) group, as lagsight's own ConsumerGroupDescribe reads
them, against Kafka's ``kafka-consumer-groups.sh --describe --members --verbose``.

librdkafka 2.0.2 (lagsight's client) cannot describe such groups; lagsight sends
ConsumerGroupDescribe itself. Ground truth is Kafka's ConsumerGroupCommand, read while the group is
stable; lagsight is then scraped after a poll that started later, and the tool read once more to
prove nothing moved in between. On the harness's Kafka 4.1.1 and on the newest release it runs,
4.3.2 (with that release's tool).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

import kafka_broker as kafka
import promtext
import workload
from conftest import _register_log_for_failures
from kafka_broker import KafkaBroker

NEWEST_KAFKA = "4.3.2"

# Owners per partition are opt-in (series.partition_owners).
KAFKA_SETTINGS = {"series": {"partition_owners": True}}
MEMBERS_VERBOSE_HEADER = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                          "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                          "TARGET-ASSIGNMENT"]


@dataclass(frozen=True)
class ToolMember:
    """One row of ``ConsumerGroupCommand --describe --members --verbose`` for a consumer group."""
    member_id: str
    host: str
    client_id: str
    current: frozenset[tuple[str, int]]  # (topic, partition) of its current assignment
    target: frozenset[tuple[str, int]]


def parse_assignment(field: str) -> frozenset[tuple[str, int]]:
    """"orders:0,1;payments:2" (or "-") as a set of (topic, partition)."""
    if field == "-":
        return frozenset()
    pairs = set()
    for part in field.split(";"):
        topic, _, partitions = part.rpartition(":")
        if not topic:
            raise ValueError(f"unexpected assignment {field!r}")
        pairs.update((topic, int(p)) for p in partitions.split(",") if p)
    return frozenset(pairs)


def parse_members_verbose(output: str) -> list[ToolMember]:
    """Parses the tool's members table, refusing any other header (a misparse would be noise)."""
    members, in_table = [], False
    for line in output.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "GROUP":
            if fields != MEMBERS_VERBOSE_HEADER:
                raise ValueError(f"unexpected header {fields}")
            in_table = True
        elif in_table and len(fields) == len(MEMBERS_VERBOSE_HEADER):
            _, member, host, client, count, _, current, _, target = fields
            members.append(ToolMember(member, host, client, parse_assignment(current),
                                      parse_assignment(target)))
            assert int(count) == len(members[-1].current), line
        else:
            raise ValueError(f"unexpected line {line!r}")
    return members


def describe_members(bootstrap: str, group: str, version: str | None) -> list[ToolMember]:
    return parse_members_verbose(kafka.run_kafka_tool(
        kafka.CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--group",
        group, "--members", "--verbose", version=version))


class Member:
    """A KIP-848 member that commits offset 0 on whatever it is assigned and keeps polling.

    (workload.SubscribedConsumer waits to hold every partition itself, which two members of one
    group never do.)
    """

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        self._consumer_config = {"bootstrap.servers": bootstrap, "group.id": group,
                                 "group.protocol": "consumer", "client.id": client_id,
                                 "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=client_id)
        self.error: BaseException | None = None

    def __enter__(self) -> Member:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        consumer = Consumer(self._consumer_config)
        committed: set[tuple[str, int]] = set()
        try:
            consumer.subscribe([self._topic])
            while not self._stop.is_set():
                consumer.poll(0.2)
                assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
                if assigned - committed:
                    try:
                        consumer.commit(offsets=[TopicPartition(t, p, 0) for t, p in assigned],
                                        asynchronous=False)
                    except KafkaException:  # the assignment moved meanwhile (stale epoch): again
                        continue
                    committed |= assigned
        except BaseException as error:  # surfaced by the test instead of dying silently
            self.error = error
        finally:
            consumer.close()


def lagsight_members(metrics: promtext.Samples, cluster: str, group: str) -> dict:
    """member id -> (client id, host, group.instance.id) from lagsight_kafka_group_member_info."""
    out = {}
    for label_set, value in promtext.select(metrics, "lagsight_kafka_group_member_info",
                                            kafka_cluster=cluster, group=group).items():
        labels = dict(label_set)
        assert value == 1
        out[labels["member_id"]] = (labels["client_id"], labels["host"],
                                    labels["group_instance_id"])
    return out


def series_by(metrics: promtext.Samples, name: str, cluster: str, group: str,
              *keys: str) -> dict[tuple, float]:
    return {tuple(int(dict(label_set)[k]) if k == "partition" else dict(label_set)[k]
                  for k in keys): value
            for label_set, value in promtext.select(metrics, name, kafka_cluster=cluster,
                                                    group=group).items()}


@pytest.fixture(scope="module")
def newest_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(tmp_path_factory.mktemp("kafka-newest"),
                     kafka_version=NEWEST_KAFKA) as broker:
        yield broker


@pytest.fixture(params=[None, NEWEST_KAFKA], ids=["kafka-4.1.1", f"kafka-{NEWEST_KAFKA}"])
def broker_and_version(request: pytest.FixtureRequest) -> tuple[KafkaBroker, str | None]:
    """The session's broker (the harness's release), or one of the newest release."""
    if request.param is None:
        return request.getfixturevalue("kafka_broker"), None
    broker = request.getfixturevalue("newest_broker")
    _register_log_for_failures(request, f"kafka {NEWEST_KAFKA} broker log", broker.log_file)
    return broker, request.param


def test_kip848_members_equal_kafka_tools(broker_and_version, start_lagsight, unique_prefix):
    """Two members of a KIP-848 group on a 4-partition topic: the member count, ids, client ids,
    hosts and the holder of every partition exported exactly as Kafka's tool reports them."""
    broker, version = broker_and_version
    bootstrap, prefix = broker.bootstrap, unique_prefix
    topic, group = f"{prefix}-orders", f"{prefix}-kip848"
    workload.create_topic(bootstrap, topic, 4)
    workload.produce(bootstrap, topic, [3, 2, 1, 4])
    lagsight = start_lagsight(bootstrap, kafka_settings=KAFKA_SETTINGS)

    with Member(bootstrap, group, topic, f"{prefix}-a") as a, \
            Member(bootstrap, group, topic, f"{prefix}-b") as b:
        def settled() -> list[ToolMember] | None:
            for member in (a, b):
                if member.error is not None:
                    raise member.error
            members = describe_members(bootstrap, group, version)
            held = [tp for m in members for tp in m.current]
            if (len(members) == 2 and all(m.current == m.target and m.current for m in members)
                    and sorted(held) == [(topic, p) for p in range(4)]):
                return members
            return None

        members = None
        deadline = time.time() + 60
        while members is None and time.time() < deadline:
            members = settled()
            if members is None:
                time.sleep(0.5)
        assert members is not None, "the group did not settle on 2 members holding 4 partitions"

        quiescent_since = time.time()
        metrics = lagsight.wait_for_fresh_poll(quiescent_since)
        assert describe_members(bootstrap, group, version) == members, "the group moved meanwhile"

    cluster = lagsight.cluster
    info = promtext.select(metrics, "lagsight_kafka_group_info", kafka_cluster=cluster,
                           group=group)
    assert [dict(labels)["kind"] for labels in info] == ["consumer"]
    assert [dict(labels)["state"] for labels in info] == ["stable"]
    assert series_by(metrics, "lagsight_kafka_group_members", cluster, group) == {(): 2}
    assert lagsight_members(metrics, cluster, group) == {
        m.member_id: (m.client_id, m.host, "") for m in members}
    assert series_by(metrics, "lagsight_kafka_group_member_assigned_partitions", cluster, group,
                     "member_id", "topic") == {
        (m.member_id, topic): len(m.current) for m in members}
    owners = series_by(metrics, "lagsight_kafka_group_partition_owner", cluster, group,
                       "topic", "partition", "member_id")
    assert owners == {(t, p, m.member_id): 1 for m in members for t, p in m.current}
    assert not [line for line in lagsight.log_file.read_text().splitlines()
                if "ConsumerGroupDescribe" in line and "[debug]" not in line]
