"""Streams groups (KIP-1071: Kafka Streams with ``group.protocol=streams``) on a real Kafka 4.3.2
broker, against Kafka's own ``kafka-streams-groups.sh --describe`` (StreamsGroupCommand).

A real Kafka Streams application (tests/harness/kafka/StreamsGroupApp.java, run from source by
``java``) counts a 4-partition topic through a repartition topic: two subtopologies, so members
hold tasks of both. librdkafka 2.0.2 (lagsight's client) lists the group but cannot describe it;
lagsight tells its kind and reads its members and tasks with StreamsGroupDescribe itself, and its
committed offsets with its own OffsetFetch.

Ground truth is the tool's ``--offsets`` and ``--members --verbose``, read while the group is
stable; lagsight is then scraped after a poll that started later, and the tool read once more to
prove nothing moved in between.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
import workload
from conftest import wait_until

KAFKA_VERSION = "4.3.2"
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"
APP_SOURCE = kafka.HARNESS_DIR / "kafka" / "StreamsGroupApp.java"
# Owners per partition are opt-in (series.partition_owners).
KAFKA_SETTINGS = {"series": {"partition_committed_offsets": True, "partition_owners": True}}
PARTITIONS = 4
INPUT_RECORDS = [5, 3, 2, 4]
SETTLE_SECONDS = 120.0


def streams_tool(bootstrap: str, *args: str) -> str:
    """Runs Kafka 4.3.2's StreamsGroupCommand (absent from the default 4.1.1 classpath)."""
    command = ["java", *kafka.TOOL_JVM_OPTIONS, "-cp", kafka.kafka_classpath(KAFKA_VERSION),
               STREAMS_GROUP_COMMAND, "--bootstrap-server", bootstrap, *args]
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=kafka.TOOL_TIMEOUT_SECONDS, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"StreamsGroupCommand {' '.join(args)} exited {result.returncode}:\n"
                           f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result.stdout


def table(output: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the tool's table(s) whose header starts with ``first_header``, as dicts."""
    rows, header = [], None
    for line in output.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == first_header:
            header = fields
        elif header is not None:
            assert len(fields) == len(header), f"unexpected line {line!r} under {header}"
            rows.append(dict(zip(header, fields)))
    return rows


@dataclass(frozen=True)
class ToolOffset:
    topic: str
    partition: int
    committed: int | None
    lag: int | None


def describe_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], ToolOffset]:
    rows = table(streams_tool(bootstrap, "--describe", "--group", group, "--offsets",
                              "--verbose"), "GROUP")
    out = {}
    for row in rows:
        def number(name: str) -> int | None:
            value = row.get(name, "-")
            return None if value == "-" else int(value)
        offset = ToolOffset(row["TOPIC"], int(row["PARTITION"]), number("CURRENT-OFFSET"),
                            number("OFFSET-LAG"))
        out[(offset.topic, offset.partition)] = offset
    return out


MEMBERS_HEADER = ["GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL",
                  "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]


@dataclass(frozen=True)
class ToolMember:
    """One row of ``--describe --members --verbose``: tasks as {subtopology: partitions}."""
    member_id: str
    client_id: str
    active: tuple[tuple[str, tuple[int, ...]], ...]
    target_active: tuple[tuple[str, tuple[int, ...]], ...]


def parse_tasks(text: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """"0:[1,3]; 1:[1,3];" as (("0", (1, 3)), ("1", (1, 3)))."""
    tasks = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        subtopology, _, partitions = part.partition(":")
        assert partitions.startswith("[") and partitions.endswith("]"), text
        tasks.append((subtopology, tuple(sorted(int(p) for p in partitions[1:-1].split(",")
                                                if p))))
    return tuple(sorted(tasks))


def parse_assignments(text: str) -> dict[str, str]:
    """"ACTIVE: 0:[1]; TARGET-ACTIVE: 0:[1];" as {"ACTIVE": "0:[1];", "TARGET-ACTIVE": ...}."""
    sections, name = {}, None
    for token in text.split():
        if token.endswith(":") and token[:-1].isupper():
            name = token[:-1]
            sections[name] = ""
        else:
            assert name is not None, text
            sections[name] += token
    return sections


def describe_members(bootstrap: str, group: str) -> list[ToolMember]:
    output = streams_tool(bootstrap, "--describe", "--group", group, "--members", "--verbose")
    members, in_table = [], False
    for line in output.splitlines():
        fields = line.split(maxsplit=len(MEMBERS_HEADER) - 1)
        if not fields:
            continue
        if fields[0] == "GROUP":
            assert line.split() == MEMBERS_HEADER, f"unexpected header {line!r}"
            in_table = True
            continue
        assert in_table and len(fields) == len(MEMBERS_HEADER), f"unexpected line {line!r}"
        sections = parse_assignments(fields[-1])
        members.append(ToolMember(fields[3], fields[7], parse_tasks(sections.get("ACTIVE", "")),
                                  parse_tasks(sections.get("TARGET-ACTIVE", ""))))
    return sorted(members, key=lambda member: member.member_id)


def describe_state(bootstrap: str, group: str) -> str:
    return streams_tool(bootstrap, "--describe", "--group", group, "--state")


class StreamsApp:
    """The Kafka Streams application, one JVM with ``threads`` stream threads."""

    def __init__(self, work_dir: Path, bootstrap: str, application_id: str, input_topic: str,
                 output_topic: str, threads: int) -> None:
        work_dir.mkdir(parents=True, exist_ok=True)
        self.properties = work_dir / "streams.properties"
        self.properties.write_text("".join(f"{key}={value}\n" for key, value in {
            "bootstrap.servers": bootstrap,
            "application.id": application_id,
            "group.protocol": "streams",
            "num.stream.threads": threads,
            "state.dir": work_dir / "state",
            "commit.interval.ms": 200,
            "auto.offset.reset": "earliest",
            "client.id": f"{application_id}-client",
        }.items()))
        self.log_file = work_dir / "streams-app.log"
        self._command = ["java", "-Xmx256m", "-cp", kafka.kafka_classpath(KAFKA_VERSION),
                         str(APP_SOURCE), str(self.properties), input_topic, output_topic]
        self._process: subprocess.Popen | None = None

    def start(self) -> StreamsApp:
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(self._command, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def check_alive(self) -> None:
        assert self._process is not None and self._process.poll() is None, (
            f"the streams app exited:\n{self.log_file.read_text()[-4000:]}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka.KafkaBroker]:
    with kafka.KafkaBroker(tmp_path_factory.mktemp("kafka-4.3.2"),
                           kafka_version=KAFKA_VERSION) as started:
        yield started


def lagsight_series(metrics: promtext.Samples, name: str, cluster: str, group: str,
                    *keys: str) -> dict[tuple, float]:
    return {tuple(int(dict(label_set)[k]) if k == "partition" else dict(label_set)[k]
                  for k in keys): value
            for label_set, value in promtext.select(metrics, name, kafka_cluster=cluster,
                                                    group=group).items()}


def committed_and_lag(metrics: promtext.Samples, cluster: str, group: str
                      ) -> dict[tuple[str, int], tuple[float, float]]:
    committed = lagsight_series(metrics, "lagsight_kafka_group_committed_offset", cluster, group,
                                "topic", "partition")
    lag = lagsight_series(metrics, "lagsight_kafka_group_lag_records", cluster, group, "topic",
                          "partition")
    return {key: (value, lag.get(key)) for key, value in committed.items()}


def tool_committed_and_lag(offsets: dict[tuple[str, int], ToolOffset]
                           ) -> dict[tuple[str, int], tuple[float, float]]:
    """The tool's partitions with a committed offset (a partition of the repartition topic that
    nothing was written to yet has none, and no lagsight series)."""
    return {key: (float(o.committed), float(o.lag)) for key, o in offsets.items()
            if o.committed is not None}


def group_info(metrics: promtext.Samples, cluster: str, group: str) -> list[tuple[str, str]]:
    return [(dict(labels)["kind"], dict(labels)["state"])
            for labels in promtext.select(metrics, "lagsight_kafka_group_info",
                                          kafka_cluster=cluster, group=group)]


def start_app(broker: kafka.KafkaBroker, work_dir: Path, prefix: str
              ) -> tuple[StreamsApp, str, str]:
    """The input topic with records, and the app started on it: (app, group, input topic)."""
    bootstrap = broker.bootstrap
    input_topic, output_topic, group = f"{prefix}-words", f"{prefix}-counts", f"{prefix}-app"
    workload.create_topic(bootstrap, input_topic, PARTITIONS)
    workload.create_topic(bootstrap, output_topic, PARTITIONS)
    workload.produce(bootstrap, input_topic, INPUT_RECORDS)
    return (StreamsApp(work_dir, bootstrap, group, input_topic, output_topic, 2).start(), group,
            input_topic)


def wait_settled(app: StreamsApp, bootstrap: str, group: str
                 ) -> tuple[list[ToolMember], dict[tuple[str, int], ToolOffset]]:
    """The tool's members and offsets once the group is stable: 2 members holding what they are
    meant to hold, every source partition committed and caught up."""
    def settled() -> tuple | None:
        app.check_alive()
        try:
            state = describe_state(bootstrap, group)
        except RuntimeError as error:  # not joined yet
            if "GroupIdNotFoundException" in str(error):
                return None
            raise
        if "Stable" not in state:
            return None
        members = describe_members(bootstrap, group)
        offsets = describe_offsets(bootstrap, group)
        inputs = [o for o in offsets.values() if not o.topic.endswith("-repartition")]
        if (len(members) == 2 and all(m.active == m.target_active and m.active for m in members)
                and len(inputs) == PARTITIONS and all(o.committed is not None for o in inputs)
                and all(o.lag == 0 for o in offsets.values())):
            return members, offsets
        return None
    return wait_until(settled, SETTLE_SECONDS, "the streams group to settle with no lag")


def test_streams_group_members_offsets_and_owners_equal_kafka_tools(
        broker, start_lagsight, unique_prefix, tmp_path):
    """A running 2-thread Kafka Streams app: kind, state, committed offsets, lag, members and
    the holder of every partition of both subtopologies exported as Kafka's tool reports them."""
    bootstrap = broker.bootstrap
    lagsight = start_lagsight(bootstrap, kafka_settings=KAFKA_SETTINGS)
    app, group, input_topic = start_app(broker, tmp_path / "app", unique_prefix)
    try:
        members, offsets = wait_settled(app, bootstrap, group)
        quiescent_since = time.time()
        metrics = lagsight.wait_for_fresh_poll(quiescent_since)
        assert describe_members(bootstrap, group) == members, "the group moved meanwhile"
        assert describe_offsets(bootstrap, group) == offsets, "the offsets moved meanwhile"
    finally:
        app.stop()

    cluster = lagsight.cluster
    assert group_info(metrics, cluster, group) == [("streams", "stable")]
    assert lagsight_series(metrics, "lagsight_kafka_group_members", cluster, group) == {(): 2}
    assert committed_and_lag(metrics, cluster, group) == tool_committed_and_lag(offsets)
    assert lagsight_series(metrics, "lagsight_kafka_group_member_info", cluster, group,
                           "member_id", "client_id") == {
        (m.member_id, m.client_id): 1 for m in members}
    # Subtopology 0 reads the input topic, 1 the repartition topic (the app's topology).
    repartition = {t for t, _ in offsets if t.endswith("-repartition")}
    assert len(repartition) == 1
    topics = {"0": input_topic, "1": repartition.pop()}
    owners = {(topics[s], p, m.member_id): 1 for m in members for s, ps in m.active for p in ps}
    assert lagsight_series(metrics, "lagsight_kafka_group_partition_owner", cluster, group,
                           "topic", "partition", "member_id") == owners
    assigned = {}
    for topic, _, member in owners:
        assigned[(member, topic)] = assigned.get((member, topic), 0) + 1
    assert lagsight_series(metrics, "lagsight_kafka_group_member_assigned_partitions", cluster,
                           group, "member_id", "topic") == assigned
    # The broker was started moments before lagsight: its first polls may meet the group
    # coordinator still loading (COORDINATOR_LOAD_IN_PROGRESS), said for that poll. Nothing else.
    assert not [line for line in lagsight.log_file.read_text().splitlines()
                if ("StreamsGroupDescribe" in line or "ListGroups" in line)
                and "COORDINATOR_LOAD_IN_PROGRESS" not in line and "level=debug" not in line]


def test_stopped_streams_group_keeps_its_lag(broker, start_lagsight, unique_prefix, tmp_path):
    """The app stopped and more records written: the group is empty, without members, and its
    committed offsets and lag are exported. Kafka 4.3.2's tool shows no offsets for an empty
    streams group, so the ground truth is its offsets read just before the stop (nothing commits
    after) and the log ends as GetOffsetShell reads them."""
    bootstrap = broker.bootstrap
    app, group, input_topic = start_app(broker, tmp_path / "app", unique_prefix)
    try:
        _, offsets = wait_settled(app, bootstrap, group)
    finally:
        app.stop()
    wait_until(lambda: "Empty" in describe_state(bootstrap, group), SETTLE_SECONDS,
               "the stopped app's group to be empty")
    assert describe_offsets(bootstrap, group) == {}, "the tool shows an empty group's offsets"
    workload.produce(bootstrap, input_topic, [2, 0, 1, 3])
    lagsight = start_lagsight(bootstrap, kafka_settings=KAFKA_SETTINGS)
    metrics = lagsight.wait_for_fresh_poll(time.time())
    log_end = kafka.topic_offsets(bootstrap, f"{unique_prefix}-.*", "latest")

    cluster = lagsight.cluster
    assert group_info(metrics, cluster, group) == [("streams", "empty")]
    assert lagsight_series(metrics, "lagsight_kafka_group_members", cluster, group) == {(): 0}
    expected = {key: (float(o.committed), float(log_end[key] - o.committed))
                for key, o in offsets.items() if o.committed is not None}
    assert sum(lag for _, lag in expected.values()) == 6
    assert committed_and_lag(metrics, cluster, group) == expected
    assert not lagsight_series(metrics, "lagsight_kafka_group_member_info", cluster, group,
                               "member_id")
