"""Topics, records and consumer groups of every kind lagsight must handle, made with a real client.

Each maker leaves a group in a state Kafka itself can be asked about:

- ``SubscribedConsumer`` running: an active group (classic protocol, or KIP-848 "consumer"
  protocol) with one Stable member whose committed offsets, and so lag, stay constant.
- ``make_empty_group``: a subscribed consumer that committed and left: an Empty group that keeps
  its committed offsets.
- ``commit_without_joining``: a "simple" group, the way a Flink KafkaSource commits: assign(),
  commit offsets, never join. Committing on some partitions of a topic only makes a partial group.

Every wait here has a deadline; a maker that cannot finish raises instead of hanging a test.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from confluent_kafka import (Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException,
                             Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_broker import run_kafka_tool

DEFAULT_TIMEOUT_SECONDS = 30.0


def create_topic(bootstrap: str, name: str, partitions: int,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Creates a topic and returns once every partition has a leader (so producing works)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions,
                                            replication_factor=1)],
                                  request_timeout=timeout)
    futures[name].result(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topic = admin.list_topics(topic=name, timeout=timeout).topics.get(name)
        if (topic is not None and topic.error is None and len(topic.partitions) == partitions
                and all(p.leader >= 0 for p in topic.partitions.values())):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leader for every partition after {timeout} s")


def produce(bootstrap: str, topic: str, counts_per_partition: Sequence[int], *,
            timestamp_ms: int | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Writes exactly ``counts_per_partition[p]`` records to partition p and waits for all acks.

    Records are addressed to explicit partitions so the log end offsets are known exactly;
    ``timestamp_ms`` sets every record's timestamp (for tests of lag in seconds).
    """
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    failures: list[str] = []

    def on_delivery(error, message) -> None:
        if error is not None:
            failures.append(f"{message.topic()}[{message.partition()}]: {error}")

    for partition, count in enumerate(counts_per_partition):
        for index in range(count):
            producer.produce(topic, key=f"key-{partition}-{index}".encode(),
                             value=f"value-{index}".encode(), partition=partition,
                             timestamp=timestamp_ms or 0, on_delivery=on_delivery)
            producer.poll(0)
    unsent = producer.flush(timeout)
    if unsent or failures:
        raise RuntimeError(f"producing to {topic}: {unsent} records unsent, failures {failures}")


def commit_without_joining(bootstrap: str, group: str,
                           offsets: Mapping[tuple[str, int], int],
                           timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Commits ``{(topic, partition): offset}`` for a group that never joins: a simple group.

    This is what a Flink KafkaSource does on checkpoint: assign() partitions, commit their
    offsets, and never subscribe, so the group has committed offsets but no members.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "socket.timeout.ms": int(timeout * 1000)})
    try:
        partitions = [TopicPartition(topic, partition, offset)
                      for (topic, partition), offset in offsets.items()]
        consumer.assign(partitions)
        committed = consumer.commit(offsets=partitions, asynchronous=False)
        failed = [tp for tp in committed if tp.error is not None]
        if failed:
            raise RuntimeError(f"commit for simple group {group} failed: {failed}")
    finally:
        consumer.close()


class SubscribedConsumer:
    """A real group member that consumes, commits once, then pauses and keeps heartbeating.

    While running, its group is active (Stable, one member) and its committed offsets are fixed at
    ``commit_at`` per partition (or the partition's end if smaller), so the lag Kafka reports
    stays constant however often it is read. ``stop()`` closes the consumer, which leaves the
    group: the group becomes Empty and keeps the committed offsets.

    ``protocol`` is the client's ``group.protocol``: "classic" (JoinGroup/SyncGroup) or
    "consumer" (the KIP-848 protocol, where the broker assigns partitions).
    """

    def __init__(self, bootstrap: str, group: str, topics: Sequence[str], commit_at: int,
                 protocol: str = "classic") -> None:
        self.group = group
        self.topics = list(topics)
        self.commit_at = commit_at
        self._config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        self._committed = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"consumer-{group}",
                                        daemon=True)

    def start(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> SubscribedConsumer:
        """Starts consuming; returns once the offsets are committed and the assignment paused."""
        self._thread.start()
        if not self._committed.wait(timeout) or self._error is not None:
            self.stop()
            raise RuntimeError(
                f"group {self.group} did not commit within {timeout} s") from self._error
        return self

    def stop(self, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        """Closes the consumer (leaving the group) and waits for its thread to finish."""
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"consumer of group {self.group} did not close in {timeout} s")

    def __enter__(self) -> SubscribedConsumer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        consumer = Consumer(self._config)
        try:
            consumer.subscribe(self.topics)
            targets = self._consume_up_to_targets(consumer)
            consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in targets.items()],
                            asynchronous=False)
            consumer.pause(consumer.assignment())
            self._committed.set()
            # Polling keeps the member alive (max.poll.interval.ms); paused, it reads nothing.
            while not self._stop.is_set():
                consumer.poll(0.2)
        except BaseException as error:  # surfaced to start() instead of dying silently
            self._error = error
        finally:
            consumer.close()

    def _consume_up_to_targets(self, consumer: Consumer) -> dict[tuple[str, int], int]:
        """Reads until every partition of the topics is assigned and read to its target.

        Waiting for the whole assignment matters with the "consumer" protocol, where the broker
        may hand partitions over in several steps. Returns the offsets to commit.
        """
        wanted = {(topic, partition)
                  for topic in self.topics
                  for partition in consumer.list_topics(
                      topic, timeout=DEFAULT_TIMEOUT_SECONDS).topics[topic].partitions}
        targets: dict[tuple[str, int], int] = {}
        positions: dict[tuple[str, int], int] = {}
        while not self._stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is not None:
                raise KafkaException(message.error())
            if message is not None:
                positions[(message.topic(), message.partition())] = message.offset() + 1
            if not targets:
                assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
                if assigned != wanted:
                    continue
                targets = {key: self._target(consumer, TopicPartition(*key)) for key in wanted}
            if all(positions.get(key, 0) >= target for key, target in targets.items()):
                return targets
        raise RuntimeError(f"group {self.group} stopped before reaching its commit targets")

    def _target(self, consumer: Consumer, partition: TopicPartition) -> int:
        _, high = consumer.get_watermark_offsets(partition, timeout=DEFAULT_TIMEOUT_SECONDS)
        return min(self.commit_at, high)


def delete_records_before(bootstrap: str, topic: str, offsets: Mapping[int, int],
                          timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Deletes records below ``offsets[partition]``, moving each partition's earliest offset.

    This is what retention does to an old log, without waiting for it.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)
                                    for partition, offset in offsets.items()],
                                   request_timeout=timeout)
    for future in futures.values():
        future.result(timeout=timeout)


def make_empty_group(bootstrap: str, group: str, topics: Sequence[str], commit_at: int,
                     protocol: str = "classic") -> None:
    """A group whose only member consumed, committed ``commit_at`` per partition, and left."""
    SubscribedConsumer(bootstrap, group, topics, commit_at, protocol).start().stop()


def add_partitions(bootstrap: str, topic: str, total: int,
                   timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Grows ``topic`` to ``total`` partitions and returns once each has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_partitions([NewPartitions(topic, total)], request_timeout=timeout)
    futures[topic].result(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic=topic, timeout=timeout).topics.get(topic)
        if (metadata is not None and len(metadata.partitions) == total
                and all(p.leader >= 0 for p in metadata.partitions.values())):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {topic} does not have {total} led partitions after {timeout} s")


REASSIGN_PARTITIONS_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def move_partitions(bootstrap: str, topic: str, partitions: range, to_broker: int,
                    work_dir: Path) -> None:
    """Moves each of ``partitions`` of ``topic`` to ``to_broker`` alone, as an operator does with
    kafka-reassign-partitions, and returns once the tool verifies the moves complete."""
    plan = work_dir / f"move-{topic}-to-{to_broker}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": [to_broker]}
        for partition in partitions]}))
    arguments = ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan)]
    run_kafka_tool(REASSIGN_PARTITIONS_COMMAND, *arguments, "--execute")
    deadline = time.monotonic() + 60
    while "is still in progress" in run_kafka_tool(REASSIGN_PARTITIONS_COMMAND, *arguments,
                                                   "--verify"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"moving {topic} to broker {to_broker} did not complete in 60 s")
        time.sleep(0.5)


def record_timestamp_ms(bootstrap: str, topic: str, partition: int, offset: int,
                        timeout: float = DEFAULT_TIMEOUT_SECONDS) -> int:
    """The timestamp the broker stored for the record at ``offset``, read with assign() and
    no group, so reading it commits nothing anywhere."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-never-committed",
                         "enable.auto.commit": False, "enable.auto.offset.store": False})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            if message.offset() != offset:
                raise RuntimeError(f"{topic}[{partition}]: asked for {offset}, "
                                   f"got {message.offset()}")
            return message.timestamp()[1]
        raise TimeoutError(f"no record at {topic}[{partition}]@{offset} within {timeout} s")
    finally:
        consumer.close()


class SimpleGroupCommitter:
    """A simple group (assign(), commit, never join) that commits many times over one client.

    Like ``commit_without_joining``, but keeps its connection, so a scenario can commit every
    second for minutes without paying a client start-up each time. Committing a lower offset
    than before is allowed, as it is in Kafka: that is how a rewind looks.
    """

    def __init__(self, bootstrap: str, group: str,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.group = group
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                   "enable.auto.commit": False,
                                   "socket.timeout.ms": int(timeout * 1000)})

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        partitions = [TopicPartition(topic, partition, offset)
                      for (topic, partition), offset in offsets.items()]
        self._consumer.assign(partitions)
        committed = self._consumer.commit(offsets=partitions, asynchronous=False)
        failed = [tp for tp in committed if tp.error is not None]
        if failed:
            raise RuntimeError(f"commit for simple group {self.group} failed: {failed}")

    def committed(self, topic: str, partitions: Sequence[int],
                  timeout: float = DEFAULT_TIMEOUT_SECONDS) -> dict[int, int | None]:
        """The group's committed offsets as the broker answers an OffsetFetch (None: none)."""
        answer = self._consumer.committed([TopicPartition(topic, p) for p in partitions],
                                          timeout=timeout)
        return {tp.partition: tp.offset if tp.offset >= 0 else None for tp in answer}

    def close(self) -> None:
        self._consumer.close()


class CountingProducer:
    """One idempotent producer that writes to explicit partitions and knows each log end.

    ``produce`` returns once every record is acknowledged, so ``log_end[(topic, p)]`` is exactly
    the partition's log end offset afterwards (for partitions only this producer writes to,
    starting from ``start_offsets``).
    """

    def __init__(self, bootstrap: str,
                 start_offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5})
        self.log_end: dict[tuple[str, int], int] = dict(start_offsets or {})

    def produce(self, counts: Mapping[tuple[str, int], int], *, timestamp_ms: int = 0,
                timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        failures: list[str] = []

        def on_delivery(error, message) -> None:
            if error is not None:
                failures.append(f"{message.topic()}[{message.partition()}]: {error}")

        for (topic, partition), count in counts.items():
            for index in range(count):
                self._producer.produce(topic, key=f"{partition}-{index}".encode(),
                                       value=b"x", partition=partition,
                                       timestamp=timestamp_ms, on_delivery=on_delivery)
                self._producer.poll(0)
        unsent = self._producer.flush(timeout)
        if unsent or failures:
            raise RuntimeError(f"{unsent} records unsent, failures {failures}")
        for key, count in counts.items():
            self.log_end[key] = self.log_end.get(key, 0) + count

    def learn_partitions(self, topic: str, total: int,
                         timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        """Refreshes the producer's metadata until it knows ``total`` partitions of ``topic``.

        After partitions are added, a producer refuses records for them ("Unknown partition")
        until its metadata is refreshed, which it otherwise does only every 5 minutes.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            metadata = self._producer.list_topics(topic, timeout=timeout).topics.get(topic)
            if metadata is not None and len(metadata.partitions) >= total:
                return
            time.sleep(0.1)
        raise TimeoutError(f"the producer does not see {total} partitions of {topic}")


class GroupExpiryWatch:
    """Asks the broker twice a second, in a thread, whether some groups still exist.

    Records per group (time.time()) when an OffsetFetch first returned no committed offset and
    when ListGroups first no longer listed it: when offsets retention took them, to within a
    poll, without the seconds a CLI tool's JVM start would add.
    """

    def __init__(self, bootstrap: str, groups: Sequence[str], interval: float = 0.5) -> None:
        self._admin = AdminClient({"bootstrap.servers": bootstrap})
        self._groups = list(groups)
        self._interval = interval
        self.offsets_gone: dict[str, float] = {}
        self.group_gone: dict[str, float] = {}
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="group-expiry")
        self._thread.start()

    def _has_offsets(self, group: str) -> bool:
        request = [ConsumerGroupTopicPartitions(group)]
        result = self._admin.list_consumer_group_offsets(request, request_timeout=10)[group]
        return any(tp.offset >= 0 for tp in result.result(timeout=10).topic_partitions or [])

    def _listed(self) -> set[str]:
        listing = self._admin.list_consumer_groups(request_timeout=10).result(timeout=10)
        return {group.group_id for group in listing.valid}

    def _run(self) -> None:
        try:
            while not self._stop.is_set() and len(self.group_gone) < len(self._groups):
                listed = self._listed()
                for group in self._groups:
                    now = time.time()
                    if group not in listed:
                        self.offsets_gone.setdefault(group, now)
                        self.group_gone.setdefault(group, now)
                    elif group not in self.offsets_gone and not self._has_offsets(group):
                        self.offsets_gone[group] = now
                self._stop.wait(self._interval)
        except BaseException as error:  # surfaced by wait_gone()
            self.error = error

    def wait_gone(self, group: str, timeout: float) -> tuple[float, float]:
        """Waits until the group is no longer listed; returns (offsets gone, group gone)."""
        deadline = time.monotonic() + timeout
        while group not in self.group_gone:
            if self.error is not None:
                raise RuntimeError(f"watching {group} failed") from self.error
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group} still exists after {timeout} s")
            time.sleep(0.2)
        return self.offsets_gone[group], self.group_gone[group]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(15)


class SteadyProducer:
    """Writes ``rate`` records per second to a topic, round robin over explicit partitions,
    until stopped. Records are ``value_bytes`` long: with 500, a few of them fill a 4 KiB
    network buffer, so a slowed Flink job backpressures its source soon. ``weights`` (one per
    partition) makes the round uneven: with [17, 1, 1, 1] partition 0 gets 17 of every 20
    records, as a hot key does."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float,
                 value_bytes: int = 500, weights: Sequence[int] | None = None) -> None:
        self.topic = topic
        self.partitions = partitions
        weights = weights or [1] * partitions
        assert len(weights) == partitions, (weights, partitions)
        self._round = [p for p, weight in enumerate(weights) for _ in range(weight)]
        self.rate = rate
        self.value_bytes = value_bytes
        self.sent = 0
        self.errors: list[str] = []
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "linger.ms": 5})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"produce-{topic}")
        self._thread.start()

    def _run(self) -> None:
        value = b"v" * self.value_bytes
        start = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due and not self._stop.is_set():
                try:
                    self._producer.produce(self.topic, value=value,
                                           partition=self._round[self.sent % len(self._round)],
                                           on_delivery=self._delivered)
                except BufferError:  # the client's queue is full: let deliveries drain it
                    self._producer.poll(0.1)
                    continue
                self.sent += 1
            self._producer.poll(0)
            self._stop.wait(0.05)
        self._producer.flush(10)
        self._producer = None   # closes the client: no reconnect attempts after the broker stops

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.errors.append(str(error))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(20)
        assert not self.errors, f"producing to {self.topic} failed: {self.errors[:5]}"


def make_topic(bootstrap: str, topic: str, partitions: int = 1, *, prefill: int = 0,
               rate: float = 0) -> SteadyProducer | None:
    """Creates ``topic``, writes ``prefill`` records spread evenly over its partitions, and
    starts steady traffic of ``rate`` records/s; returns that producer (to stop) if any."""
    create_topic(bootstrap, topic, partitions)
    if prefill:
        produce(bootstrap, topic, [prefill // partitions] * partitions)
    return SteadyProducer(bootstrap, topic, partitions, rate) if rate else None


def produce_transactional(bootstrap: str, topic: str, counts_per_partition: Sequence[int],
                          transactional_id: str, *,
                          timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Writes ``counts_per_partition[p]`` records to partition p in one transaction, committed.

    A real transactional producer (librdkafka's): each partition's log then ends with the
    transaction's commit marker, an offset no consumer ever receives.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "acks": "all", "linger.ms": 5})
    producer.init_transactions(timeout)
    producer.begin_transaction()
    for partition, count in enumerate(counts_per_partition):
        for index in range(count):
            producer.produce(topic, key=f"{partition}-{index}".encode(), value=b"x",
                             partition=partition)
    producer.commit_transaction(timeout)


class OpenTransaction:
    """A real transactional producer with one transaction begun and its records written
    (``counts_per_partition[p]`` to partition p, flushed to the log) but neither committed nor
    aborted: each such partition's last stable offset stays at the transaction's first record
    until ``commit()`` or ``abort()`` writes its marker."""

    def __init__(self, bootstrap: str, topic: str, counts_per_partition: Sequence[int],
                 transactional_id: str, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._timeout = timeout
        self._producer = Producer({"bootstrap.servers": bootstrap,
                                   "transactional.id": transactional_id, "acks": "all",
                                   "linger.ms": 5})
        self._producer.init_transactions(timeout)
        self._producer.begin_transaction()
        for partition, count in enumerate(counts_per_partition):
            for index in range(count):
                self._producer.produce(topic, key=f"open-{partition}-{index}".encode(),
                                       value=b"x", partition=partition)
        if self._producer.flush(timeout) != 0:
            raise TimeoutError(f"the open transaction's records to {topic} were not written")

    def commit(self) -> None:
        self._producer.commit_transaction(self._timeout)

    def abort(self) -> None:
        self._producer.abort_transaction(self._timeout)


def records_after(bootstrap: str, topic: str, partition: int, offset: int,
                  timeout: float = DEFAULT_TIMEOUT_SECONDS, *,
                  isolation: str = "read_committed") -> int:
    """How many records a real consumer of ``isolation`` (librdkafka's default read_committed,
    or read_uncommitted) receives from ``offset`` to the end of the partition: for
    read_committed the end is the last stable offset, and aborted records are never received."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lagsight-test-probe",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        received = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return received
                raise RuntimeError(f"reading {topic}[{partition}]@{offset}: {message.error()}")
            received += 1
        raise TimeoutError(f"no end of {topic}[{partition}] within {timeout} s")
    finally:
        consumer.close()
