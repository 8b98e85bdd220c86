"""Share groups (KIP-932) on a real Kafka 4.3.2 broker: listed with kind "share", their start offset
and lag per partition as Kafka's own ``kafka-share-groups.sh --describe`` reports them; on Kafka
4.1.1, whose coordinator reports no lag, the upper bound lagsight derives instead. Real share
consumers (tests/harness/kafka/ShareConsumerApp.java) that fall behind and then stop: the group's
diagnosis.

librdkafka 2.0.2 (lagsight's client) lists groups with ListGroups v4, which Kafka 4.3.2 answers
without share groups; lagsight lists them itself (ListGroups v5, types ["share"]) and reads their
progress with DescribeShareGroupOffsets (v1 on 4.3: the coordinator's lag). Ground truth is
ShareGroupCommand, read before and after lagsight's scrape (the two reads must agree). The share
group must appear in no consumer group series: it has no committed offsets.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
import workload
from conftest import _register_log_for_failures, wait_until
from kafka_broker import KafkaBroker

KAFKA_VERSION = "4.3.2"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
OFFSETS_HEADER = ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
STATE_HEADER = ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"]
# Families that may name a share group, besides the diagnosis's (lagsight_diagnosis*, job_id="");
# every other series with its group label is a misreading.
SHARE_FAMILIES = {"lagsight_kafka_group_info", "lagsight_kafka_group_members",
                  "lagsight_kafka_group_member_info",
                  "lagsight_kafka_group_member_assigned_partitions",
                  "lagsight_kafka_share_group_start_offset",
                  "lagsight_kafka_share_group_lag_records"}
MEMBERS_HEADER = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]


def tool(main_class: str, *args: str, timeout: float = 90.0, version: str = KAFKA_VERSION) -> str:
    """One of Kafka's CLI classes, of 4.3.2 unless ``version`` says otherwise."""
    result = subprocess.run(["java", *kafka.TOOL_JVM_OPTIONS, "-cp",
                             kafka.kafka_classpath(version), main_class, *args],
                            capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{main_class} {' '.join(args)} exited {result.returncode}:\n"
                           f"{result.stdout}\n{result.stderr}")
    return result.stdout


def table(output: str, header: list[str]) -> list[list[str]]:
    """The rows under ``header``, refusing any other header or row shape."""
    rows, seen = [], False
    for line in output.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "GROUP":
            assert fields == header, f"unexpected header {fields}"
            seen = True
        elif seen:
            assert len(fields) == len(header), f"unexpected line {line!r}"
            rows.append(fields)
    assert seen, f"no table in {output!r}"
    return rows


def tool_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(topic, partition) -> (start offset, lag) as ShareGroupCommand --describe shows them."""
    output = tool(SHARE_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--group",
                  group)
    if "has no offset information" in output:  # no share-partition has state yet
        return {}
    rows = table(output, OFFSETS_HEADER)
    return {(topic, int(partition)): (None if start == "-" else int(start),
                                      None if lag == "-" else int(lag))
            for row_group, topic, partition, start, lag in rows if row_group == group}


def tool_state(bootstrap: str, group: str) -> tuple[str, int]:
    """(state, member count) as ShareGroupCommand --describe --state shows them."""
    rows = table(tool(SHARE_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                      "--group", group, "--state"), STATE_HEADER)
    assert len(rows) == 1 and rows[0][0] == group, rows
    return rows[0][3], int(rows[0][4])


def tool_members(bootstrap: str, group: str) -> dict[str, tuple[str, str, frozenset]]:
    """member id -> (host, client id, {(topic, partition)}) from --describe --members."""
    output = tool(SHARE_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--group",
                  group, "--members")
    # Before its first member joins the group does not exist yet; after the last left, it is empty.
    if "has no active members" in output or "GroupIdNotFoundException" in output:
        return {}
    members = {}
    # A member assigned nothing has an empty ASSIGNMENT column: five fields.
    padded = "\n".join(line + " -" if len(line.split()) == len(MEMBERS_HEADER) - 1 else line
                        for line in output.splitlines())
    for row_group, member, host, client, count, assignment in table(padded, MEMBERS_HEADER):
        pairs = set()
        for part in ([] if assignment == "-" else assignment.split(";")):
            topic, _, partitions = part.rpartition(":")
            pairs.update((topic, int(p)) for p in partitions.split(",") if p)
        assert int(count) == len(pairs), (member, assignment)
        if row_group == group:
            members[member] = (host, client, frozenset(pairs))
    return members


def consume_and_exit(bootstrap: str, topic: str, group: str, records: int,
                     version: str = KAFKA_VERSION) -> None:
    """A console share consumer that takes ``records`` records (acknowledging them) and leaves."""
    tool(CONSOLE_SHARE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic, "--group",
         group, "--max-messages", str(records), "--timeout-ms", "30000", version=version)


def read_from_earliest(bootstrap: str, group: str, version: str = KAFKA_VERSION) -> None:
    """share.auto.offset.reset=earliest: the group starts at the records already produced."""
    tool(kafka.CONFIG_COMMAND, "--bootstrap-server", bootstrap, "--alter", "--entity-type",
         "groups", "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest",
         version=version)


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(tmp_path_factory.mktemp("kafka-share"), kafka_version=KAFKA_VERSION) as broker:
        yield broker


@pytest.fixture
def broker(share_broker: KafkaBroker, request: pytest.FixtureRequest) -> KafkaBroker:
    _register_log_for_failures(request, "kafka 4.3.2 broker log", share_broker.log_file)
    return share_broker


def series_naming(metrics: promtext.Samples, group: str) -> set[str]:
    """The families with a series of ``group``, the diagnosis's aside (a share group has one)."""
    return {name for name, labels in metrics
            if ("group", group) in labels and not name.startswith("lagsight_diagnosis")}


def test_share_group_listed_with_tool_progress(broker, start_lagsight, unique_prefix):
    """A share group that acknowledged 25 of 60 records and left: listed with kind "share" and the
    tool's state, start offset and lag per partition (the coordinator's lag), in no consumer group
    series; a consumer group beside it is read as before."""
    bootstrap, prefix = broker.bootstrap, unique_prefix
    topic, group, classic = f"{prefix}-orders", f"{prefix}-share", f"{prefix}-classic"
    workload.create_topic(bootstrap, topic, 3)
    workload.produce(bootstrap, topic, [10, 20, 30])
    workload.commit_without_joining(bootstrap, classic, {(topic, 0): 4})
    read_from_earliest(bootstrap, group)
    consume_and_exit(bootstrap, topic, group, 25)
    lagsight = start_lagsight(bootstrap)

    before = tool_offsets(bootstrap, group)
    state, member_count = tool_state(bootstrap, group)
    assert before, "the tool shows no partition of the share group"
    metrics = lagsight.wait_for_fresh_poll(time.time())
    assert tool_offsets(bootstrap, group) == before, "the share group moved meanwhile"

    cluster = lagsight.cluster
    info = promtext.select(metrics, "lagsight_kafka_group_info", kafka_cluster=cluster,
                           group=group)
    assert [dict(labels)["kind"] for labels in info] == ["share"]
    assert [dict(labels)["state"] for labels in info] == [state.lower()]
    assert list(promtext.select(metrics, "lagsight_kafka_group_members", kafka_cluster=cluster,
                                group=group).values()) == [member_count]
    starts = {(dict(labels)["topic"], int(dict(labels)["partition"])): int(value)
              for labels, value in promtext.select(
                  metrics, "lagsight_kafka_share_group_start_offset", kafka_cluster=cluster,
                  group=group).items()}
    lags = {(dict(labels)["topic"], int(dict(labels)["partition"]), dict(labels)["source"]):
            int(value)
            for labels, value in promtext.select(
                metrics, "lagsight_kafka_share_group_lag_records", kafka_cluster=cluster,
                group=group).items()}
    assert starts == {tp: start for tp, (start, _) in before.items() if start is not None}
    assert lags == {(*tp, "coordinator"): lag for tp, (_, lag) in before.items()
                    if lag is not None}
    assert series_naming(metrics, group) <= SHARE_FAMILIES
    # Its topic's log offsets are read, as for a consumer group's topics.
    assert promtext.by_partition(metrics, "lagsight_kafka_partition_latest_offset",
                                 kafka_cluster=cluster, topic=topic) == {0: 10, 1: 20, 2: 30}
    classic_info = promtext.select(metrics, "lagsight_kafka_group_info", kafka_cluster=cluster,
                                   group=classic)
    assert [dict(labels)["kind"] for labels in classic_info] == ["simple"]
    assert list(promtext.select(metrics, "lagsight_kafka_group_max_lag_records",
                                kafka_cluster=cluster, group=classic).values()) == [6]
    log = lagsight.log_file.read_text()
    assert "share groups are not read" not in log
    assert not [line for line in log.splitlines()
                if ("ListGroups" in line or "DescribeShareGroupOffsets" in line)
                and "level=debug" not in line]


def test_share_group_filtered_out_is_not_read(broker, start_lagsight, unique_prefix):
    """The group filter applies to share groups as to consumer groups."""
    bootstrap, prefix = broker.bootstrap, unique_prefix
    topic, group = f"{prefix}-orders", f"{prefix}-share"
    workload.create_topic(bootstrap, topic, 1)
    workload.produce(bootstrap, topic, [5])
    read_from_earliest(bootstrap, group)
    consume_and_exit(bootstrap, topic, group, 5)
    lagsight = start_lagsight(bootstrap, groups={"deny": [f"{prefix}-.*"]})
    metrics = lagsight.wait_for_fresh_poll(time.time())
    assert series_naming(metrics, group) == set()


def test_share_group_members_equal_tool(broker, start_lagsight, unique_prefix):
    """A share consumer still running: the group stable, its member (id, client id, host) and the
    partitions it is assigned exported as ``--describe --members`` shows them."""
    bootstrap, prefix = broker.bootstrap, unique_prefix
    topic, group, client = f"{prefix}-orders", f"{prefix}-share", f"{prefix}-client"
    workload.create_topic(bootstrap, topic, 2)
    workload.produce(bootstrap, topic, [3, 4])
    read_from_earliest(bootstrap, group)
    consumer = subprocess.Popen(
        ["java", *kafka.TOOL_JVM_OPTIONS, "-cp", kafka.kafka_classpath(KAFKA_VERSION),
         CONSOLE_SHARE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic, "--group",
         group, "--consumer-property", f"client.id={client}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        lagsight = start_lagsight(bootstrap)
        members: dict = {}
        deadline = time.time() + 60
        while time.time() < deadline:
            members = tool_members(bootstrap, group)
            held = [tp for _, _, pairs in members.values() for tp in pairs]
            if len(members) == 1 and sorted(held) == [(topic, 0), (topic, 1)]:
                break
            time.sleep(1)
        assert len(members) == 1, f"the share consumer did not join: {members}"
        metrics = lagsight.wait_for_fresh_poll(time.time())
        assert tool_members(bootstrap, group) == members, "the group moved meanwhile"
        state, _ = tool_state(bootstrap, group)
    finally:
        consumer.terminate()
        consumer.wait(30)
    cluster = lagsight.cluster
    info = promtext.select(metrics, "lagsight_kafka_group_info", kafka_cluster=cluster,
                           group=group)
    assert [(dict(labels)["kind"], dict(labels)["state"]) for labels in info] == [
        ("share", state.lower())]
    exported = {dict(labels)["member_id"]: (dict(labels)["host"], dict(labels)["client_id"])
                for labels in promtext.select(metrics, "lagsight_kafka_group_member_info",
                                              kafka_cluster=cluster, group=group)}
    assert exported == {member: (host, client_id)
                        for member, (host, client_id, _) in members.items()}
    assigned = {(dict(labels)["member_id"], dict(labels)["topic"]): value
                for labels, value in promtext.select(
                    metrics, "lagsight_kafka_group_member_assigned_partitions",
                    kafka_cluster=cluster, group=group).items()}
    assert assigned == {(member, topic): len(pairs) for member, (_, _, pairs) in members.items()}
    assert list(promtext.select(metrics, "lagsight_kafka_group_members", kafka_cluster=cluster,
                                group=group).values()) == [1]
    assert series_naming(metrics, group) <= SHARE_FAMILIES


@pytest.fixture(scope="module")
def old_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """Kafka 3.9.1: no share groups, no DescribeShareGroupOffsets."""
    with KafkaBroker(tmp_path_factory.mktemp("kafka-3.9.1"), kafka_version="3.9.1") as broker:
        yield broker


def test_broker_without_share_groups_said_once(old_broker, start_lagsight, request):
    """A broker before share groups: lagsight says so once in the log, counts no partial error,
    and reads its consumer groups as before, poll after poll."""
    _register_log_for_failures(request, "kafka 3.9.1 broker log", old_broker.log_file)
    lagsight = start_lagsight(old_broker.bootstrap)
    first = lagsight.wait_for_fresh_poll(time.time())
    metrics = lagsight.wait_for_fresh_poll(lagsight.last_poll(first))
    assert list(promtext.select(metrics, "lagsight_kafka_poll_partial_errors",
                                kafka_cluster=lagsight.cluster).values()) == [0]
    assert list(promtext.select(metrics, "lagsight_kafka_up",
                                kafka_cluster=lagsight.cluster).values()) == [1]
    said = [line for line in lagsight.log_file.read_text().splitlines()
            if "share groups are not read" in line]
    assert len(said) == 1, said
    assert "predates share groups" in said[0] and "level=info" in said[0]


PREVIEW_VERSION = "4.1.1"  # share groups in preview, DescribeShareGroupOffsets without lag


@pytest.fixture(scope="module")
def preview_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """Kafka 4.1.1 with share groups switched on (group.share.enable; off by default there)."""
    with KafkaBroker(tmp_path_factory.mktemp("kafka-4.1.1"), kafka_version=PREVIEW_VERSION,
                     extra_properties={"group.share.enable": "true"}) as broker:
        yield broker


def test_share_group_lag_without_the_coordinators_count_is_an_upper_bound(
        preview_broker, start_lagsight, unique_prefix, request):
    """Kafka 4.1.1 reports no share-partition lag (KIP-1226 came in 4.3): lagsight exports log end
    minus start offset, labelled source="upper_bound", equal to GetOffsetShell's latest offset
    minus the tool's START-OFFSET, and no coordinator count."""
    _register_log_for_failures(request, "kafka 4.1.1 broker log", preview_broker.log_file)
    bootstrap, prefix = preview_broker.bootstrap, unique_prefix
    topic, group = f"{prefix}-orders", f"{prefix}-share"
    workload.create_topic(bootstrap, topic, 3)
    workload.produce(bootstrap, topic, [10, 20, 30])
    read_from_earliest(bootstrap, group, version=PREVIEW_VERSION)
    consume_and_exit(bootstrap, topic, group, 25, version=PREVIEW_VERSION)
    lagsight = start_lagsight(bootstrap)

    def tool_starts() -> dict[tuple[str, int], int]:
        rows = table(tool(SHARE_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                          "--group", group, version=PREVIEW_VERSION),
                     ["GROUP", "TOPIC", "PARTITION", "START-OFFSET"])
        return {(row_topic, int(partition)): int(start)
                for row_group, row_topic, partition, start in rows
                if row_group == group and start != "-"}
    before = tool_starts()
    log_ends = kafka.topic_offsets(bootstrap, topic, "latest")
    assert before, "the tool shows no partition of the share group"
    metrics = lagsight.wait_for_fresh_poll(time.time())
    assert tool_starts() == before, "the share group moved meanwhile"

    lags = {(dict(labels)["topic"], int(dict(labels)["partition"]), dict(labels)["source"]):
            int(value)
            for labels, value in promtext.select(
                metrics, "lagsight_kafka_share_group_lag_records",
                kafka_cluster=lagsight.cluster, group=group).items()}
    # Partitions the tool shows without a start offset (no state yet) have no series.
    assert lags == {(*tp, "upper_bound"): log_ends[tp] - start for tp, start in before.items()}
    starts = promtext.select(metrics, "lagsight_kafka_share_group_start_offset",
                             kafka_cluster=lagsight.cluster, group=group)
    assert {(dict(labels)["topic"], int(dict(labels)["partition"])): int(value)
            for labels, value in starts.items()} == before
    assert series_naming(metrics, group) <= SHARE_FAMILIES


APP_SOURCE = kafka.HARNESS_DIR / "kafka" / "ShareConsumerApp.java"
PRODUCED_PER_SECOND = 12  # over two partitions
ACKNOWLEDGED_PER_SECOND = 3  # by each share consumer
# Short enough for a test: stalled needs a whole window of standing start offsets.
STALL_WINDOW_SECONDS = 30
SHARE_DIAGNOSIS = {"window": f"{STALL_WINDOW_SECONDS}s", "confirm_polls": 2,
                   "lag_threshold_records": 50, "lag_threshold": "10s"}


def share_consumer(bootstrap: str, topic: str, group: str, client: str) -> subprocess.Popen:
    """A real share consumer acknowledging ACKNOWLEDGED_PER_SECOND records a second."""
    return subprocess.Popen(
        ["java", *kafka.TOOL_JVM_OPTIONS, "-cp", kafka.kafka_classpath(KAFKA_VERSION),
         str(APP_SOURCE), bootstrap, topic, group, client, str(ACKNOWLEDGED_PER_SECOND)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(consumer: subprocess.Popen) -> None:
    consumer.terminate()
    consumer.wait(30)


def total_lag_and_starts(bootstrap: str, group: str) -> tuple[int, dict]:
    """The tool's lag summed over the group's partitions, and its start offsets."""
    offsets = tool_offsets(bootstrap, group)
    assert offsets and all(start is not None and lag is not None
                           for start, lag in offsets.values()), offsets
    return sum(lag for _, lag in offsets.values()), {tp: start for tp, (start, _) in
                                                     offsets.items()}


def lag_growth(bootstrap: str, group: str, seconds: float) -> tuple[float, bool]:
    """Records/s the tool's lag grew by over ``seconds``, and whether any start offset moved."""
    lag_before, starts_before = total_lag_and_starts(bootstrap, group)
    began = time.time()
    time.sleep(seconds)
    lag_after, starts_after = total_lag_and_starts(bootstrap, group)
    moved = any(starts_after[tp] > start for tp, start in starts_before.items())
    return (lag_after - lag_before) / (time.time() - began), moved


def share_cause(lagsight, group: str) -> str | None:
    causes = [dict(labels)["cause"] for labels in promtext.select(
        lagsight.scrape(), "lagsight_diagnosis", kafka_cluster=lagsight.cluster, group=group,
        job_id="")]
    return causes[0] if causes else None


def test_share_consumers_that_stop_turn_the_lag_up_and_then_stall_the_group(
        broker, start_lagsight, unique_prefix):
    """Two real share consumers acknowledge 3 records/s each while 12/s arrive: the group is
    really_behind. One stops: the tool's lag grows faster, and the group is not stalled (the
    other consumer takes its records). Both stop: the tool's start offsets stand while records
    arrive, and lagsight says stalled, not before a window of it."""
    bootstrap, prefix = broker.bootstrap, unique_prefix
    topic, group = f"{prefix}-jobs", f"{prefix}-workers"
    workload.create_topic(bootstrap, topic, 2)
    producer = workload.SteadyProducer(bootstrap, topic, 2, PRODUCED_PER_SECOND, value_bytes=50)
    consumers = [share_consumer(bootstrap, topic, group, f"{prefix}-{name}")
                 for name in ("a", "b")]
    try:
        lagsight = start_lagsight(bootstrap, groups={"allow": [f"{prefix}-.*"]},
                                  diagnosis=SHARE_DIAGNOSIS)
        wait_until(lambda: len(tool_members(bootstrap, group)) == 2, 60,
                   "both share consumers in the group")
        # A share-partition has no state (the tool shows "-") until the group first fetches it.
        def both_started() -> bool:
            offsets = tool_offsets(bootstrap, group)
            return len(offsets) == 2 and all(start is not None and lag is not None
                                             for start, lag in offsets.values())
        wait_until(both_started, 60, "a start offset on both partitions")
        # Ground truth: the group acknowledges, and falls behind.
        both_rate, moved = lag_growth(bootstrap, group, 10)
        assert moved, "the start offsets must move while both consume"
        assert both_rate > 0, f"the lag must grow with two consumers: {both_rate:.1f}/s"
        wait_until(lambda: share_cause(lagsight, group) == "really_behind", 90,
                   "really_behind with two consumers falling behind")

        stop(consumers[0])
        wait_until(lambda: len(tool_members(bootstrap, group)) == 1, 60, "one member left")
        one_rate, moved = lag_growth(bootstrap, group, 10)
        assert moved, "the other consumer must go on acknowledging"
        assert one_rate > both_rate, (
            f"one consumer fewer must turn the lag up: {both_rate:.1f}/s -> {one_rate:.1f}/s")
        seen = set()
        deadline = time.time() + STALL_WINDOW_SECONDS
        while time.time() < deadline:
            seen.add(share_cause(lagsight, group))
            time.sleep(1)
        assert "stalled" not in seen, f"stalled while a consumer acknowledges: {seen}"

        stopped_at = time.time()
        stop(consumers[1])
        _, moved = lag_growth(bootstrap, group, 5)
        lag_1, starts_1 = total_lag_and_starts(bootstrap, group)
        time.sleep(5)
        lag_2, starts_2 = total_lag_and_starts(bootstrap, group)
        assert not moved and starts_2 == starts_1, "the start offsets must stand with no consumer"
        assert lag_2 > lag_1, "records must go on arriving"
        wait_until(lambda: share_cause(lagsight, group) == "stalled",
                   STALL_WINDOW_SECONDS + 60, "stalled once no consumer acknowledges")
        seconds = time.time() - stopped_at
        assert seconds >= STALL_WINDOW_SECONDS - 2, (
            f"stalled {seconds:.0f} s after the last consumer stopped: sooner than a window")
    finally:
        for consumer in consumers:
            if consumer.poll() is None:
                stop(consumer)
        producer.stop()
