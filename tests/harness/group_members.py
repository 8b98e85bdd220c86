"""Members of consumer groups: real ones that join and hold partitions, and Kafka's view of them.

- ``GroupMember``: one real consumer that joins a group (classic or KIP-848 protocol), with its
  own ``client.id`` and optionally a ``group.instance.id`` (static membership), and holds
  whatever share of the partitions the group's assignor gives it until stopped. Several of them
  in one group split the partitions, which ``workload.SubscribedConsumer`` (one member that
  waits for every partition) cannot.
- ``consumer_groups_describe_members``: Kafka's own ``kafka-consumer-groups.sh --describe
  --members --verbose --all-groups``, parsed per member, with its assignment: the ground truth
  for who holds each partition.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer

from kafka_broker import CONSUMER_GROUP_COMMAND, run_kafka_tool

DEFAULT_TIMEOUT_SECONDS = 30.0


class GroupMember:
    """A real group member that subscribes, holds its assignment and heartbeats until stopped.

    It reads whatever its partitions hold and commits nothing. ``stop()`` closes the consumer:
    a dynamic member then leaves the group at once (LeaveGroup), so the others rebalance; a
    static one (``group_instance_id``) does not leave: Kafka keeps its partitions until its
    session times out, which is what static membership is for.

    ``heartbeat_ms`` is short by default so the remaining members learn of a rebalance quickly
    (librdkafka's default is 3 s).
    """

    def __init__(self, bootstrap: str, group: str, topics: Sequence[str], client_id: str, *,
                 group_instance_id: str | None = None, protocol: str = "classic",
                 heartbeat_ms: int = 500) -> None:
        self.group = group
        self.client_id = client_id
        self.group_instance_id = group_instance_id
        self.topics = list(topics)
        self._config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        if protocol == "classic":
            self._config["heartbeat.interval.ms"] = heartbeat_ms
        if group_instance_id is not None:
            self._config["group.instance.id"] = group_instance_id
        self._lock = threading.Lock()
        self._assignment: frozenset[tuple[str, int]] = frozenset()
        self._started = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"member-{client_id}",
                                        daemon=True)

    def start(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> GroupMember:
        """Starts the consumer; returns once it has subscribed (joining goes on in the
        background: wait for the group with Kafka's tool)."""
        self._thread.start()
        if not self._started.wait(timeout) or self._error is not None:
            self.stop()
            raise RuntimeError(f"member {self.client_id} of {self.group} did not start "
                               f"within {timeout} s") from self._error
        return self

    @property
    def assignment(self) -> frozenset[tuple[str, int]]:
        """The (topic, partition) pairs this member holds now, as its client sees them."""
        with self._lock:
            return self._assignment

    def stop(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        """Closes the consumer and waits for its thread to finish; raises what it hit."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"member {self.client_id} of {self.group} did not close "
                               f"in {timeout} s")
        if self._error is not None:
            raise RuntimeError(f"member {self.client_id} of {self.group} failed") \
                from self._error

    def __enter__(self) -> GroupMember:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        consumer = Consumer(self._config)
        try:
            consumer.subscribe(self.topics)
            self._started.set()
            while not self._stop.is_set():
                message = consumer.poll(0.2)
                if message is not None and message.error() is not None:
                    raise RuntimeError(str(message.error()))
                assigned = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
                with self._lock:
                    self._assignment = assigned
        except BaseException as error:  # surfaced by start() or stop()
            self._error = error
        finally:
            self._started.set()
            consumer.close()


# ----------------------------------------------------------------------------------------------
# Kafka's own view: ``kafka-consumer-groups.sh --describe --members --verbose --all-groups``.


@dataclass(frozen=True)
class MemberRow:
    """One member as ``--describe --members --verbose`` prints it.

    ``group_instance_id`` is "" when the member has none (the tool leaves the cell blank, or
    prints no such column when no member of the group has one); ``assignment`` is the member's
    current assignment as (topic, partition) pairs (the tool's "-" is empty). ``current_epoch``
    is the KIP-848 member epoch, None for a classic member (the tool's "-").
    """
    group: str
    member_id: str
    group_instance_id: str
    host: str
    client_id: str
    partitions: int
    assignment: frozenset[tuple[str, int]]
    current_epoch: int | None

    def partitions_per_topic(self) -> dict[str, int]:
        """How many partitions of each topic the member holds (topics it holds none of left
        out)."""
        counts: dict[str, int] = {}
        for topic, _ in self.assignment:
            counts[topic] = counts.get(topic, 0) + 1
        return counts


# The columns Kafka 4.1 prints. It pads every column to its longest value (so cells line up
# under their header and a blank cell is spaces), and chooses the columns per group: no
# GROUP-INSTANCE-ID when no member has one; with --verbose the KIP-848 epoch and assignment
# columns even for classic groups (there "-"); a plain ASSIGNMENT column in older releases.
MEMBERS_REQUIRED_COLUMNS = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
MEMBERS_OPTIONAL_COLUMNS = ["GROUP-INSTANCE-ID", "ASSIGNMENT", "CURRENT-EPOCH",
                            "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]


def parse_assignment(text: str) -> frozenset[tuple[str, int]]:
    """A member's assignment cell: Kafka 4.x's ``orders:0,1;payments:3``, older releases'
    ``orders(0,1), payments(3)``, or ``-`` (or blank) for none. Topic names cannot contain any
    of ``:;,()`` or spaces, so the separators are unambiguous."""
    text = text.strip()
    if text in ("", "-"):
        return frozenset()
    pairs = re.findall(r"([A-Za-z0-9._-]+):([0-9,]+)(?:;|$)", text)
    if ";".join(f"{topic}:{numbers}" for topic, numbers in pairs) != text:
        pairs = re.findall(r"([A-Za-z0-9._-]+)\(([0-9,]*)\)(?:, |$)", text)
        if ", ".join(f"{topic}({numbers})" for topic, numbers in pairs) != text:
            raise ValueError(f"unexpected assignment {text!r}")
    return frozenset((topic, int(partition)) for topic, numbers in pairs
                     for partition in numbers.split(",") if partition)


def _columns(header: str) -> list[tuple[str, int]]:
    """The header's column names with the offset each starts at; refuses unknown columns."""
    columns = [(match.group(), match.start()) for match in re.finditer(r"\S+", header)]
    names = [name for name, _ in columns]
    unknown = set(names) - set(MEMBERS_REQUIRED_COLUMNS) - set(MEMBERS_OPTIONAL_COLUMNS)
    missing = set(MEMBERS_REQUIRED_COLUMNS) - set(names)
    has_assignment = "ASSIGNMENT" in names or "CURRENT-ASSIGNMENT" in names
    if unknown or missing or not has_assignment or len(set(names)) != len(names):
        raise ValueError(f"unexpected --members header {names}")
    return columns


def _cells(line: str, columns: list[tuple[str, int]]) -> dict[str, str]:
    """A row cut at its header's column offsets; each cell must stand apart from the next
    (a space before each column start) and hold no space, except the last column's, which
    runs to the end of the line (the old ASSIGNMENT lists topics with ", ")."""
    cells = {}
    for index, (name, start) in enumerate(columns):
        last = index == len(columns) - 1
        end = len(line) if last else columns[index + 1][1]
        if start > 0 and start <= len(line) and not line[start - 1].isspace():
            raise ValueError(f"cell before {name} runs into it: {line!r}")
        cell = line[start:end].strip()
        if not last and re.search(r"\s", cell):
            raise ValueError(f"cell {name} holds a space: {line!r}")
        cells[name] = cell
    return cells


def _member(cells: dict[str, str]) -> MemberRow:
    assignment = parse_assignment(cells.get("CURRENT-ASSIGNMENT", cells.get("ASSIGNMENT", "")))
    epoch = cells.get("CURRENT-EPOCH", "-")
    row = MemberRow(group=cells["GROUP"], member_id=cells["CONSUMER-ID"],
                    group_instance_id=cells.get("GROUP-INSTANCE-ID", ""), host=cells["HOST"],
                    client_id=cells["CLIENT-ID"], partitions=int(cells["#PARTITIONS"]),
                    assignment=assignment,
                    current_epoch=None if epoch in ("", "-") else int(epoch))
    if not (row.group and row.member_id and row.host and row.client_id):
        raise ValueError(f"blank required cell in {cells}")
    if row.partitions != len(row.assignment):
        raise ValueError(f"#PARTITIONS {row.partitions} but assignment {sorted(assignment)}")
    return row


def parse_describe_members(output: str) -> list[MemberRow]:
    """Parses ``ConsumerGroupCommand --describe --members --verbose`` output: one table per
    group (a header, a row per member, a blank line; a group without members prints its
    header only). Anything else raises: a misparsed table would make the ground truth noise."""
    members = []
    columns: list[tuple[str, int]] | None = None
    for line in output.splitlines():
        if not line.strip():
            continue
        if line.split()[0] == "GROUP":
            columns = _columns(line)
        elif columns is None:
            raise ValueError(f"a --members row before any header: {line!r}")
        else:
            members.append(_member(_cells(line, columns)))
    return members


def consumer_groups_describe_members(bootstrap: str, groups: Sequence[str] = ()
                                     ) -> list[MemberRow]:
    """Every member of every group (or of ``groups`` only) with its current assignment, as the
    coordinators report. Naming the groups keeps a test on a shared broker from depending on
    how the tool prints every other test's groups."""
    selection = [arg for group in groups for arg in ("--group", group)] or ["--all-groups"]
    return parse_describe_members(run_kafka_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--members",
        "--verbose", *selection))
