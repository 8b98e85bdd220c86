"""The side-by-side bench's data set: simple groups whose positions keep moving, and the truth.

Every group is simple (offsets committed without membership, as Flink commits them) on one topic
whose log end per partition the producer knows exactly. Group g commits partition p at
``initial_offset(g, p)``, a different position per partition, so a per-partition lag read from
the wrong partition or group is seen. While the exporters are measured a ``Committer`` moves a
rotating slice of groups to higher positions every few seconds, as consumers move on a real
cluster: each lagsight poll then sees moved positions, and its record reader (lag in seconds)
reads records every poll instead of answering from its cache.

``LiveGroups`` keeps what was committed, and when the last commit was confirmed, in memory: that
is the truth every exporter's values are checked against (``check``), never another exporter.
Every commit is checked per partition (Kafka answers an OffsetCommit per partition); a group
whose commit fails is committed again, and a failure that persists stops the bench.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from workload import create_topic, produce

# Commits in flight at once: one group per AlterConsumerGroupOffsets call (librdkafka's limit).
IN_FLIGHT = 64
COMMIT_ATTEMPTS = 5
GROUP_PREFIX = "bench-"


class CommitFailed(RuntimeError):
    """A group's commit kept failing: the data set is not what the bench says it is."""


def group_name(index: int) -> str:
    return f"{GROUP_PREFIX}{index:05d}"


def group_index(name: str) -> int | None:
    """The index of a bench group's name, None for any other group."""
    if not name.startswith(GROUP_PREFIX) or not name[len(GROUP_PREFIX):].isdigit():
        return None
    return int(name[len(GROUP_PREFIX):])


class LiveGroups:
    """The groups, their committed offsets as the broker confirmed them, and the log ends.

    Positions start in the first half of each partition and only move up (1 to 7 records a
    move, deterministic from group, partition and move), so they stay below the log end for
    hundreds of moves; a position that would reach it stays one short (lag 1).
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int,
                 log_end: dict[int, int]) -> None:
        self.topic = topic
        self.partitions = partitions
        self.log_end = dict(log_end)
        self._admin = AdminClient({"bootstrap.servers": bootstrap})
        self._lock = threading.Lock()
        self._committed: dict[int, list[int]] = {}   # group index -> offset per partition
        self._moves: dict[int, int] = {}             # group index -> moves so far
        self.last_commit_unix = 0.0                  # when the latest commit was confirmed
        self.retried_groups = 0

    def initial_offset(self, group: int, partition: int) -> int:
        return (group * 7 + partition * 13) % (self.log_end[partition] // 2)

    def next_offset(self, group: int, partition: int, move: int, current: int) -> int:
        step = 1 + (group * 3 + partition * 5 + move) % 7
        return min(current + step, self.log_end[partition] - 1)

    @property
    def groups(self) -> int:
        with self._lock:
            return len(self._committed)

    def add_groups(self, first: int, end: int) -> None:
        """Commits groups first .. end - 1 at their initial offsets."""
        self._commit({g: [self.initial_offset(g, p) for p in range(self.partitions)]
                      for g in range(first, end)})

    def move(self, groups: list[int]) -> None:
        """Commits the next, higher positions of these groups."""
        with self._lock:
            wanted = {g: [self.next_offset(g, p, self._moves[g], offset)
                          for p, offset in enumerate(self._committed[g])] for g in groups}
        self._commit(wanted)
        with self._lock:
            for g in groups:
                self._moves[g] += 1

    def expected(self, groups: int) -> dict[tuple[str, int], tuple[int, int]]:
        """{(group, partition): (committed, lag)} of the first ``groups`` groups, now."""
        with self._lock:
            return {(group_name(g), p): (offset, self.log_end[p] - offset)
                    for g in range(groups) for p, offset in enumerate(self._committed[g])}

    def _commit(self, wanted: dict[int, list[int]]) -> None:
        """Commits every group of ``wanted``; groups whose commit failed are retried."""
        pending = dict(wanted)
        for attempt in range(COMMIT_ATTEMPTS):
            failed = self._commit_once(pending)
            if not failed:
                return
            self.retried_groups += len(failed)
            pending = {g: pending[g] for g in failed}
            time.sleep(0.5 * (attempt + 1))
        raise CommitFailed(f"{len(pending)} groups could not be committed after "
                           f"{COMMIT_ATTEMPTS} attempts, e.g. {group_name(next(iter(pending)))}: "
                           f"{failed[next(iter(pending))]}")

    def _commit_once(self, wanted: dict[int, list[int]]) -> dict[int, str]:
        """One attempt per group, IN_FLIGHT at a time; returns {group: why} of those that failed.

        The answer's every partition is checked: a group-level success can still carry a
        partition's error (e.g. a coordinator moving), and that partition would keep its old
        offset while the truth said otherwise.
        """
        failed: dict[int, str] = {}
        items = list(wanted.items())
        for start in range(0, len(items), IN_FLIGHT):
            futures = []
            for g, offsets in items[start:start + IN_FLIGHT]:
                request = ConsumerGroupTopicPartitions(
                    group_name(g), [TopicPartition(self.topic, p, o) for p, o in enumerate(offsets)])
                futures.append((g, self._admin.alter_consumer_group_offsets(
                    [request], request_timeout=60)[group_name(g)]))
            for g, future in futures:
                why = _commit_error(future, self.partitions)
                if why is not None:
                    failed[g] = why
                    continue
                with self._lock:
                    self._committed[g] = list(wanted[g])
                    self._moves.setdefault(g, 0)
                    self.last_commit_unix = time.time()
        return failed


def _commit_error(future, partitions: int) -> str | None:
    """Why one group's AlterConsumerGroupOffsets failed, None when every partition committed."""
    try:
        answer = future.result(timeout=60)
    except Exception as error:  # noqa: BLE001 - any failure is a retry, counted and reported
        return str(error)
    errors = [f"{tp.partition}: {tp.error}" for tp in answer.topic_partitions
              if tp.error is not None]
    if errors:
        return "; ".join(errors)
    if len(answer.topic_partitions) != partitions:
        return f"{len(answer.topic_partitions)} partitions answered of {partitions}"
    return None


class Committer:
    """A thread that moves ``slice_groups`` groups every ``every`` seconds, in turn over the
    first ``groups`` groups, until stopped; ``stop()`` raises what made it fail."""

    def __init__(self, live: LiveGroups, groups: int, every: float, slice_groups: int) -> None:
        self._live = live
        self._groups = groups
        self._every = every
        self._slice = max(1, min(slice_groups, groups))
        self._cursor = 0
        self.rounds = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="committer")
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._every):
                chosen = [(self._cursor + i) % self._groups for i in range(self._slice)]
                self._cursor = (self._cursor + self._slice) % self._groups
                self._live.move(chosen)
                self.rounds += 1
        except BaseException as error:  # surfaced by stop()
            self.error = error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(300)
        if self.error is not None:
            raise CommitFailed(f"the committer stopped: {self.error}") from self.error


@dataclass
class Agreement:
    """An exporter's per-partition values against the truth.

    checked: values the exporter exported for the expected group-partitions; wrong: of those,
    the ones that differ; missing: expected group-partitions it did not export; extra: bench
    group-partitions it exported that are not in this scale.
    """
    checked: int = 0
    wrong: int = 0
    missing: int = 0
    extra: int = 0
    examples: list[str] = field(default_factory=list)

    def cell(self) -> str:
        return f"{self.checked:,}, {self.wrong:,}, {self.missing:,}, {self.extra:,}"


def check(exported: dict[tuple[str, int], float],
          expected: dict[tuple[str, int], int]) -> Agreement:
    """Compares {(group, partition): value} with the truth; keeps a few wrong ones to show."""
    agreement = Agreement()
    for key, want in expected.items():
        got = exported.get(key)
        if got is None:
            agreement.missing += 1
            continue
        agreement.checked += 1
        if got != want:
            agreement.wrong += 1
            if len(agreement.examples) < 5:
                agreement.examples.append(f"{key[0]}[{key[1]}]: {got:g}, truth {want}")
    agreement.extra = sum(1 for key in exported if key not in expected)
    return agreement


def fill_topic(bootstrap: str, topic: str, partitions: int, records: int) -> dict[int, int]:
    """Creates the topic with ``records`` records on each partition; returns each log end.

    The producer's count is the log end; it is read back once from the broker (the high
    watermark), so a producer that wrote more or less than it says stops the bench here.
    """
    create_topic(bootstrap, topic, partitions)
    produce(bootstrap, topic, [records] * partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "side-by-side-log-end-reader",
                         "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(partitions)}
    finally:
        consumer.close()
    wrong = {p: end for p, end in ends.items() if end != records}
    if wrong:
        raise RuntimeError(f"log ends differ from the {records} records produced: {wrong}")
    return ends
