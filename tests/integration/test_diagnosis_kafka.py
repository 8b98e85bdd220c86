"""The diagnosis on real Kafka for groups without a Flink job: the Kafka-only subset of causes.

Kafka-only groups get their own subset of causes (healthy, really_behind, stalled, rewinding,
partitions_uncommitted; offsets_expiring is test_diagnosis_retention.py's). Each scenario here
drives a real simple group (assign(), commit, never join: what a Flink KafkaSource leaves behind)
on a real broker, checks that the real systems show the situation (the broker's OffsetFetch
answers, Kafka's own tools), and then asserts the cause lagsight exports in ``lagsight_diagnosis``
for the pair, how many seconds after the fault it showed, and which other alarm causes showed.
Results go to docs/diagnosis-results.md (scenario_report.py).

- The subset runs as one module-wide run: every group is driven at once, one tick a second, by
  one thread, against one lagsight, so the whole subset costs one diagnosis window.
- Lag in seconds after a reset to old records, against the timestamps the broker stored.

``LAGSIGHT_DIAG_GROUND_TRUTH_ONLY=1`` runs only the real-system part (diagnosis_kafka_support.py).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
from conftest import LagsightProcess, _register_log_for_failures, wait_until
from diagnosis_kafka_support import (DETECT_TIMEOUT, GROUND_TRUTH_ONLY, LAG_THRESHOLD_RECORDS,
                                     WINDOW_SECONDS, Lagsights, assert_detected,
                                     diagnosis_config, one_value, tool_offsets, watch_pair)
from kafka_broker import KafkaBroker
from scenario_report import DiagnosisWatch
from workload import (CountingProducer, SimpleGroupCommitter, add_partitions,
                      commit_without_joining, create_topic, produce, record_timestamp_ms)

TICK_SECONDS = 1.0


# ----------------------------------------------------------------------------------------------
# The Kafka-only subset: every group driven at once, one tick a second


@dataclass
class GroupScenario:
    """One simple group on its own topic, driven once a tick by ``KafkaOnlyRun``.

    ``rate`` is records per tick per partition; ``plan(tick, log_end)`` returns the offsets to
    commit this tick (after the tick's records are acknowledged), or None to commit nothing.
    ``fault_tick`` is the tick at which the scenario's fault is injected (None: from the start);
    ``fault_at`` is then set (time.monotonic()) and the watch's clock restarted there.
    """
    key: str
    title: str
    cause: str
    topic: str
    group: str
    partitions: int
    plan: Callable[[int, dict[int, int]], dict[int, int] | None]
    rate: int = 0
    preload: int = 0
    fault_tick: int | None = None
    before_tick: Callable[[int], None] | None = None
    fault_at: float | None = None
    # (time.monotonic(), committed per partition from the broker, log end per partition) per tick
    truth: list[tuple[float, dict[int, int | None], dict[int, int]]] = field(default_factory=list)
    watch: DiagnosisWatch | None = None

    def committed_series(self, partition: int) -> list[int | None]:
        return [committed.get(partition) for _, committed, _ in self.truth]


class KafkaOnlyRun:
    """Every Kafka-only scenario on the shared broker, under one lagsight, for one window."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.bootstrap = bootstrap
        self.prefix = prefix
        self.scenarios: dict[str, GroupScenario] = {}
        self.producer: CountingProducer | None = None
        self.committers: dict[str, SimpleGroupCommitter] = {}
        self.lagsight: LagsightProcess | None = None
        self.started_at = 0.0
        self.tick = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="kafka-only-run")

    def name(self, key: str) -> str:
        return f"{self.prefix}-{key}"

    def add(self, key: str, title: str, cause: str, partitions: int,
            plan: Callable[[int, dict[int, int]], dict[int, int] | None], **options) -> None:
        self.scenarios[key] = GroupScenario(key, title, cause, self.name(key), self.name(key),
                                            partitions, plan, **options)

    def prepare(self) -> None:
        """Creates the topics and writes their preloaded records (before lagsight starts)."""
        start_offsets = {}
        for scenario in self.scenarios.values():
            create_topic(self.bootstrap, scenario.topic, scenario.partitions)
            if scenario.preload:
                produce(self.bootstrap, scenario.topic, [scenario.preload] * scenario.partitions)
            for partition in range(scenario.partitions):
                start_offsets[(scenario.topic, partition)] = scenario.preload
            self.committers[scenario.key] = SimpleGroupCommitter(self.bootstrap, scenario.group)
        self.producer = CountingProducer(self.bootstrap, start_offsets)

    def start(self, lagsight: LagsightProcess) -> None:
        self.lagsight = lagsight
        self.started_at = time.monotonic()
        for scenario in self.scenarios.values():
            scenario.watch = watch_pair(lagsight, scenario.group, t0=self.started_at,
                                        interval=1.0)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        for scenario in self.scenarios.values():
            if scenario.watch is not None:
                scenario.watch.close()
        for committer in self.committers.values():
            committer.close()

    def log_end(self, scenario: GroupScenario) -> dict[int, int]:
        assert self.producer is not None
        return {partition: offset for (topic, partition), offset in self.producer.log_end.items()
                if topic == scenario.topic}

    def _run(self) -> None:
        try:
            next_tick = time.monotonic()
            while not self._stop.is_set():
                for scenario in self.scenarios.values():
                    self._step(scenario)
                self.tick += 1
                next_tick += TICK_SECONDS
                self._stop.wait(max(0.0, next_tick - time.monotonic()))
        except BaseException as error:  # surfaced by check() in every test
            self.error = error

    def _step(self, scenario: GroupScenario) -> None:
        assert self.producer is not None
        if scenario.before_tick is not None:
            scenario.before_tick(self.tick)
        if scenario.rate:
            self.producer.produce({(scenario.topic, p): scenario.rate
                                   for p in range(scenario.partitions)})
        log_end = self.log_end(scenario)
        offsets = scenario.plan(self.tick, log_end)
        committer = self.committers[scenario.key]
        if offsets:
            committer.commit({(scenario.topic, p): o for p, o in offsets.items()})
        if scenario.fault_tick == self.tick:
            scenario.fault_at = time.monotonic()
            assert scenario.watch is not None
            scenario.watch.restart_clock(scenario.fault_at)
        committed = committer.committed(scenario.topic, sorted(log_end))
        scenario.truth.append((time.monotonic(), committed, log_end))

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"the scenario driver failed: {self.error!r}") from self.error
        assert self._thread.is_alive(), "the scenario driver stopped"

    def wait_for_fault(self, scenario: GroupScenario, timeout: float = 60.0) -> float:
        wait_until(lambda: self.check() or scenario.fault_at is not None, timeout,
                   f"the fault of {scenario.key}")
        assert scenario.fault_at is not None
        return scenario.fault_at

    def wait_until_run_for(self, seconds: float) -> None:
        """Keeps the run going until ``seconds`` have passed since lagsight started."""
        while time.monotonic() - self.started_at < seconds:
            self.check()
            time.sleep(0.5)


def _follow_log_end(tick: int, log_end: dict[int, int]) -> dict[int, int]:
    return dict(log_end)


def _really_behind_plan() -> Callable[[int, dict[int, int]], dict[int, int] | None]:
    """Commits advance 8 records a tick while 20 arrive: the backlog grows 12 a tick a
    partition, and the group is never stuck."""
    position: dict[int, int] = {}

    def plan(tick: int, log_end: dict[int, int]) -> dict[int, int]:
        for partition, end in log_end.items():
            position[partition] = min(end, position.get(partition, 0) + 8)
        return dict(position)
    return plan


STALL_TICK = 10


def _stalled_plan(tick: int, log_end: dict[int, int]) -> dict[int, int] | None:
    """Follows the log end, then stops committing for good at STALL_TICK (records keep coming,
    one a tick a partition: after a window the lag is ~30, below the threshold, so only the
    frozen commit can make it an alarm)."""
    return dict(log_end) if tick < STALL_TICK else None


REWIND_TICK = 8
REWIND_BY = 300
CATCH_UP_PER_TICK = 60


def _rewinding_plan() -> Callable[[int, dict[int, int]], dict[int, int] | None]:
    """Follows the log end, then at REWIND_TICK commits partition 0 REWIND_BY records back (an
    operator reprocessing), then reads forward 60 a tick until caught up again."""
    position: dict[int, int] = {}

    def plan(tick: int, log_end: dict[int, int]) -> dict[int, int]:
        if tick < REWIND_TICK:
            position.update(log_end)
        elif tick == REWIND_TICK:
            position[0] = log_end[0] - REWIND_BY
            position[1] = log_end[1]
        else:
            position[0] = min(log_end[0], position[0] + CATCH_UP_PER_TICK)
            position[1] = log_end[1]
        return dict(position)
    return plan


ADD_PARTITIONS_TICK = 5


def _idle_plan(commit_at: int) -> Callable[[int, dict[int, int]], dict[int, int] | None]:
    """Commits once at the first tick, then never again; nothing is produced either."""
    def plan(tick: int, log_end: dict[int, int]) -> dict[int, int] | None:
        return {partition: commit_at for partition in log_end} if tick == 0 else None
    return plan


def build_kafka_only_run(bootstrap: str, prefix: str) -> KafkaOnlyRun:
    run = KafkaOnlyRun(bootstrap, prefix)
    run.add("healthy", "Kafka-only healthy: commits follow the log end", "healthy", 2,
            _follow_log_end, rate=5)
    run.add("behind", "Kafka-only really_behind: commits advance slower than production",
            "really_behind", 2, _really_behind_plan(), rate=20)
    run.add("stalled", "Kafka-only stalled: commits stop, production continues", "stalled", 2,
            _stalled_plan, rate=1, fault_tick=STALL_TICK)
    run.add("rewinding", "Kafka-only rewinding: a commit goes backwards", "rewinding", 2,
            _rewinding_plan(), rate=2, preload=400, fault_tick=REWIND_TICK)

    uncommitted_topic = run.name("uncommitted")

    def grow_topic(tick: int) -> None:
        if tick == ADD_PARTITIONS_TICK:
            add_partitions(bootstrap, uncommitted_topic, 4)
            assert run.producer is not None
            run.producer.learn_partitions(uncommitted_topic, 4)
            run.scenarios["uncommitted"].partitions = 4

    def commit_old_partitions(tick: int, log_end: dict[int, int]) -> dict[int, int]:
        return {0: log_end[0], 1: log_end[1]}
    run.add("uncommitted",
            "Kafka-only partitions_uncommitted: partitions added, the group commits the old ones",
            "partitions_uncommitted", 2, commit_old_partitions, rate=2,
            fault_tick=ADD_PARTITIONS_TICK, before_tick=grow_topic)
    run.add("idle-behind", "Kafka-only idle topic, lag 400 (no writes, no commits): healthy",
            "healthy", 2, _idle_plan(100), preload=500)
    run.add("idle-caught-up", "Kafka-only idle topic, lag 0 (no writes, no commits): healthy",
            "healthy", 2, _idle_plan(50), preload=50)
    return run


@pytest.fixture(scope="module")
def kafka_only(session_broker: KafkaBroker, lagsight_binary: Path,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaOnlyRun]:
    prefix = f"dk-{uuid.uuid4().hex[:6]}"
    run = build_kafka_only_run(session_broker.bootstrap, prefix)
    launcher = Lagsights(lagsight_binary, tmp_path_factory.mktemp("diagnosis-kafka-only"))
    try:
        run.prepare()
        lagsight = launcher.start(diagnosis_config(session_broker.bootstrap,
                                                   groups=[f"{prefix}-.*"]))
        run.start(lagsight)
        yield run
    finally:
        run.stop()
        launcher.stop_all()


@pytest.fixture
def kafka_only_logs(request, kafka_only: KafkaOnlyRun, session_broker: KafkaBroker
                    ) -> KafkaOnlyRun:
    assert kafka_only.lagsight is not None
    _register_log_for_failures(request, "lagsight log", kafka_only.lagsight.log_file)
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)
    return kafka_only


def kafka_only_result(run: KafkaOnlyRun, key: str, diagnosis_results):
    scenario = run.scenarios[key]
    result = diagnosis_results(scenario.title, scenario.cause)
    result.watch = scenario.watch
    return scenario, result


def test_kafka_only_really_behind(kafka_only_logs, diagnosis_results):
    run = kafka_only_logs
    scenario, result = kafka_only_result(run, "behind", diagnosis_results)
    result.note("20 records/s per partition, commits advance 8/s (simple group)")
    # Ground truth, from Kafka's tool: commits advance and the lag grows past the threshold.
    wait_until(lambda: run.check() or run.tick >= 12, 60, "12 ticks")
    first = tool_offsets(run.bootstrap, scenario.group)
    time.sleep(3)
    second = tool_offsets(run.bootstrap, scenario.group)
    assert set(first) == set(second) == {(scenario.topic, 0), (scenario.topic, 1)}
    for key in first:
        (committed_1, end_1), (committed_2, end_2) = first[key], second[key]
        assert committed_2 > committed_1, "the commits must advance"
        assert end_2 - committed_2 > end_1 - committed_1, "the lag must grow"
    assert sum(end - committed for committed, end in second.values()) > LAG_THRESHOLD_RECORDS
    result.note(f"kafka-consumer-groups: lag {sum(e - c for c, e in first.values())} -> "
                f"{sum(e - c for c, e in second.values())} in ~3 s, committed advancing")
    if GROUND_TRUTH_ONLY:
        return
    seconds = assert_detected(scenario.watch, "really_behind", DETECT_TIMEOUT + WINDOW_SECONDS)
    result.note(f"detected {seconds} s after the run started")


def test_kafka_only_rewinding(kafka_only_logs, diagnosis_results):
    run = kafka_only_logs
    scenario, result = kafka_only_result(run, "rewinding", diagnosis_results)
    run.wait_for_fault(scenario)
    wait_until(lambda: run.check() or len(scenario.truth) > REWIND_TICK, 30, "the rewind tick")
    # Ground truth, the broker's OffsetFetch answer at each tick: partition 0 went back by 300.
    committed = scenario.committed_series(0)
    before, at = committed[REWIND_TICK - 1], committed[REWIND_TICK]
    assert before is not None and at is not None and before - at >= REWIND_BY - 2 * 2, (
        f"partition 0 committed {before} -> {at}")
    result.note(f"broker's committed offset of partition 0 went {before} -> {at} "
                f"(OffsetFetch), then forward {CATCH_UP_PER_TICK}/s")
    if GROUND_TRUTH_ONLY:
        return
    assert_detected(scenario.watch, "rewinding", DETECT_TIMEOUT)


def test_kafka_only_stalled(kafka_only_logs, diagnosis_results):
    run = kafka_only_logs
    scenario, result = kafka_only_result(run, "stalled", diagnosis_results)
    run.wait_for_fault(scenario)
    # Ground truth, Kafka's tool: committed offsets frozen while the log end grows.
    wait_until(lambda: run.check() or run.tick >= STALL_TICK + 3, 30, "ticks after the stall")
    first = tool_offsets(run.bootstrap, scenario.group)
    time.sleep(3)
    second = tool_offsets(run.bootstrap, scenario.group)
    assert set(first) == {(scenario.topic, 0), (scenario.topic, 1)}
    for key in first:
        assert second[key][0] == first[key][0], "the committed offset must not move"
        assert second[key][1] > first[key][1], "the log end must grow"
        assert second[key][1] - second[key][0] > 0
    result.note("1 record/s per partition; commits stop after 10 s; kafka-consumer-groups "
                "shows the committed offsets frozen while the log end grows")
    if GROUND_TRUTH_ONLY:
        return
    # Stalled means unchanged over a whole window, so it cannot show sooner than that.
    seconds = assert_detected(scenario.watch, "stalled", DETECT_TIMEOUT + WINDOW_SECONDS)
    assert seconds >= WINDOW_SECONDS - 2 * TICK_SECONDS, (
        f"stalled after {seconds} s: sooner than a window of frozen commits")


def test_kafka_only_partitions_uncommitted(kafka_only_logs, diagnosis_results):
    run = kafka_only_logs
    scenario, result = kafka_only_result(run, "uncommitted", diagnosis_results)
    run.wait_for_fault(scenario)
    wait_until(lambda: run.check() or run.tick >= ADD_PARTITIONS_TICK + 3, 30,
               "records in the added partitions")
    # Ground truth, Kafka's tools: 4 partitions with records, the group commits on 2 of them.
    ends = kafka.topic_offsets(run.bootstrap, re.escape(scenario.topic), "latest")
    assert sorted(ends) == [(scenario.topic, p) for p in range(4)]
    assert all(ends[(scenario.topic, p)] > 0 for p in (2, 3))
    rows = tool_offsets(run.bootstrap, scenario.group)
    assert {p for (_, p), (committed, _) in rows.items() if committed is not None} == {0, 1}
    result.note("topic grown 2 -> 4 partitions; records written to all 4; the group commits "
                "partitions 0 and 1 only (kafka-consumer-groups, GetOffsetShell)")
    if GROUND_TRUTH_ONLY:
        return
    assert_detected(scenario.watch, "partitions_uncommitted", DETECT_TIMEOUT + WINDOW_SECONDS)


def assert_healthy_all_along(run: KafkaOnlyRun, key: str, diagnosis_results) -> None:
    """The scenario's group shows healthy, and no other cause, for more than a window."""
    scenario, result = kafka_only_result(run, key, diagnosis_results)
    run.wait_until_run_for(WINDOW_SECONDS + 15)
    assert scenario.watch is not None
    if GROUND_TRUTH_ONLY:
        return
    seconds = scenario.watch.wait_for("healthy", DETECT_TIMEOUT)
    seen = scenario.watch.seen()
    assert set(seen) == {"healthy"}, (
        f"causes seen: {seen}; history:\n{scenario.watch.history()}")
    result.note(f"healthy {seconds} s after lagsight started, nothing else for "
                f"{time.monotonic() - run.started_at:.0f} s")


def test_kafka_only_healthy(kafka_only_logs, diagnosis_results):
    run = kafka_only_logs
    scenario = run.scenarios["healthy"]
    run.wait_until_run_for(10)
    rows = tool_offsets(run.bootstrap, scenario.group)
    assert all(end - committed <= 2 * 5 for committed, end in rows.values()), rows
    assert_healthy_all_along(run, "healthy", diagnosis_results)


def test_kafka_only_idle_topic_with_lag_is_not_stalled(kafka_only_logs, diagnosis_results):
    """Burrow's false alarm: a group behind on a topic nobody writes to is not stalled."""
    run = kafka_only_logs
    scenario = run.scenarios["idle-behind"]
    run.wait_until_run_for(WINDOW_SECONDS + 15)
    rows = tool_offsets(run.bootstrap, scenario.group)
    assert {key: value for key, value in rows.items()} == {
        (scenario.topic, 0): (100, 500), (scenario.topic, 1): (100, 500)}
    first_end = scenario.truth[0][2]
    assert scenario.truth[-1][2] == first_end, "nothing may be written to the idle topic"
    assert_healthy_all_along(run, "idle-behind", diagnosis_results)


def test_kafka_only_idle_topic_caught_up(kafka_only_logs, diagnosis_results):
    run = kafka_only_logs
    scenario = run.scenarios["idle-caught-up"]
    run.wait_until_run_for(WINDOW_SECONDS + 15)
    rows = tool_offsets(run.bootstrap, scenario.group)
    assert rows == {(scenario.topic, 0): (50, 50), (scenario.topic, 1): (50, 50)}
    assert_healthy_all_along(run, "idle-caught-up", diagnosis_results)


# ----------------------------------------------------------------------------------------------
# Lag in seconds through a reset to old records


# The group reads one partition: its topic's series (what lagsight exports by default) are that
# partition's committed offset and lag in seconds.
TOPIC_COMMITTED = "lagsight_kafka_group_topic_committed_offsets"
TOPIC_LAG_SECONDS = "lagsight_kafka_group_topic_max_lag_seconds"


def test_lag_seconds_after_reset_to_old_records(kafka_only_logs):
    """Reprocessing: a group reset to hour-old records is an hour behind, not an absurd value.

    Records carry producer timestamps one hour and ten minutes in the past, then current ones.
    After Kafka's tool resets the group to an old offset, lagsight's lag in seconds must be now
    minus the timestamp the broker stored for the record at the committed offset.
    """
    run = kafka_only_logs
    assert run.lagsight is not None
    bootstrap, topic, group = run.bootstrap, run.name("replay"), run.name("replay")
    now_ms = int(time.time() * 1000)
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [100], timestamp_ms=now_ms - 3_600_000)
    produce(bootstrap, topic, [100], timestamp_ms=now_ms - 600_000)
    produce(bootstrap, topic, [20])
    commit_without_joining(bootstrap, group, {(topic, 0): 220})
    if not GROUND_TRUTH_ONLY:
        metrics = run.lagsight.wait_for(
            lambda m: promtext.select(m, TOPIC_LAG_SECONDS, group=group),
            "lag seconds of the caught-up group")
        assert one_value(metrics, TOPIC_LAG_SECONDS, group=group) == 0.0

    for offset, age in ((50, 3600), (150, 600)):
        kafka.reset_group_offsets(bootstrap, group, topic, 0, offset)
        assert tool_offsets(bootstrap, group) == {(topic, 0): (offset, 220)}
        stored_ms = record_timestamp_ms(bootstrap, topic, 0, offset)
        assert abs(stored_ms - (now_ms - age * 1000)) < 1000, "the broker kept our timestamps"
        if GROUND_TRUTH_ONLY:
            continue
        metrics = run.lagsight.wait_for(
            lambda m: promtext.select(m, TOPIC_COMMITTED, group=group) and
            one_value(m, TOPIC_COMMITTED, group=group) == offset,
            f"lagsight to see the reset to {offset}")
        scraped_at = time.time()
        lag_seconds = one_value(metrics, TOPIC_LAG_SECONDS, group=group)
        expected = scraped_at - stored_ms / 1000
        # lagsight computes the age at its poll, at most a couple of polls before the scrape. (An
        # age interpolated from the log end's history would be seconds: the records were
        # written moments ago, with old timestamps.)
        assert expected - 5 <= lag_seconds <= expected + 1, (
            f"lag seconds {lag_seconds}, expected about {expected:.1f}")
        max_lag = one_value(metrics, "lagsight_kafka_group_max_lag_seconds", group=group)
        assert max_lag == lag_seconds
