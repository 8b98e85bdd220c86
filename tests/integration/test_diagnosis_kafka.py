"""The diagnosis on real Kafka for groups without a Flink job, and the cluster-level causes.

Kafka-only groups get their own subset of causes (healthy, really_behind, stalled, rewinding,
offsets_expiring, partitions_uncommitted). Each scenario here drives a real simple group (assign(),
commit, never join: what a Flink KafkaSource leaves behind) on a real broker, checks that the real
systems show the situation (the broker's OffsetFetch answers, Kafka's own tools, the broker's
configuration, the Flink REST API), and then asserts the cause lagsight exports in
``lagsight_diagnosis`` for the pair, how many seconds after the fault it showed, and which other
alarm causes showed. Results go to docs/diagnosis-results.md (scenario_report.py).

- The Kafka-only subset runs as one module-wide run: every group is driven at once, one tick a
  second, by one thread, against one lagsight, so the whole subset costs one diagnosis window.
- Offsets expiring and expired: a broker of its own whose ``offsets.retention.minutes`` is 1.
- Cluster mismatch: two real single-node clusters, one bootstrap list naming both.
- Lag in seconds after a reset to old records, against the timestamps the broker stored.

``LAGSIGHT_DIAG_GROUND_TRUTH_ONLY=1`` runs only the real-system part (for a lagsight without the
diagnosis), as in test_diagnosis_flink.py.
"""

from __future__ import annotations

import os
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
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from kafka_broker import KafkaBroker
from scenario_report import DiagnosisWatch
from workload import (CountingProducer, GroupExpiryWatch, SimpleGroupCommitter, add_partitions,
                      commit_without_joining, create_topic, produce, record_timestamp_ms)

WINDOW_SECONDS = 30
CONFIRM_POLLS = 2
# Above every lag the healthy, stalled and idle-but-caught-up groups reach in a window, below the
# lag of the idle-behind group (400) and of the really-behind one after ~5 s (24 records/s).
LAG_THRESHOLD_RECORDS = 100
# Generous: the machine is shared with other builds and tests.
DETECT_TIMEOUT = 60.0
TICK_SECONDS = 1.0
FLINK_LINE = "2.x"
FLINK_CLUSTER = "mini"
# Kafka's minimum retention is one minute; offsets older than that go at the next check.
RETENTION_MINUTES = 1
RETENTION_CHECK_MS = 5000
# Warn when less than half the retention is left: 30 s after the last commit.
EXPIRY_WARNING_RATIO = 0.5
GROUND_TRUTH_ONLY = os.environ.get("LAGSIGHT_DIAG_GROUND_TRUTH_ONLY") == "1"

Metrics = promtext.Samples


def diagnosis_config(bootstrap: str, *, groups: list[str] | None = None,
                     flink: list[dict] | None = None,
                     expiry_warning_ratio: float | None = None) -> dict:
    """lagsight's config: conftest's shape plus the top-level ``diagnosis`` section."""
    cluster = {"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
               "request_timeout": "5s"}
    if groups:
        cluster["groups"] = {"allow": groups}
    config: dict = {"kafka": [cluster]}
    if flink:
        config["flink"] = flink
    if not GROUND_TRUTH_ONLY:
        config["diagnosis"] = {"window": f"{WINDOW_SECONDS}s", "confirm_polls": CONFIRM_POLLS,
                               "lag_threshold_records": LAG_THRESHOLD_RECORDS}
        if expiry_warning_ratio is not None:
            config["diagnosis"]["expiry_warning_ratio"] = expiry_warning_ratio
    return config


class Lagsights:
    """Starts lagsight processes for one test or module and checks they exit 0 on SIGTERM."""

    def __init__(self, binary: Path, work_dir: Path) -> None:
        self.binary = binary
        self.work_dir = work_dir
        self.processes: list[LagsightProcess] = []

    def start(self, config: dict, request: pytest.FixtureRequest | None = None
              ) -> LagsightProcess:
        work_dir = self.work_dir / f"lagsight-{len(self.processes)}"
        work_dir.mkdir(parents=True)
        process = LagsightProcess(self.binary, work_dir, config)
        self.processes.append(process)
        if request is not None:
            _register_log_for_failures(request, f"lagsight log #{len(self.processes)}",
                                       process.log_file)
        return process.start()

    def stop_all(self) -> None:
        codes = [process.stop() for process in self.processes]
        assert all(code == 0 for code in codes), (
            f"lagsight exit codes after SIGTERM: {codes} (expected 0)")


@pytest.fixture
def lagsights(lagsight_binary, tmp_path) -> Iterator[Lagsights]:
    launcher = Lagsights(lagsight_binary, tmp_path)
    yield launcher
    launcher.stop_all()


def watch_pair(lagsight: LagsightProcess, group: str, job_name: str | None = None,
               t0: float | None = None, interval: float = 0.5) -> DiagnosisWatch:
    return DiagnosisWatch(lagsight, kafka_cluster=CLUSTER, group=group, job_name=job_name,
                          t0=t0, interval=interval)


def assert_detected(watch: DiagnosisWatch, cause: str, timeout: float,
                    allowed: set[str] | None = None) -> float:
    """Waits for ``cause`` on the watched pair and asserts no other alarm cause showed since
    the watch's t0 (``allowed`` adds causes that are right before the fault takes effect).
    Returns the seconds from t0 to the first sighting."""
    seconds = watch.wait_for(cause, timeout)
    falses = watch.false_causes(cause, {"healthy"} | (allowed or set()))
    assert not falses, (f"false causes after the fault: {falses}; seen {watch.seen()}; "
                        f"history:\n{watch.history()}")
    return seconds


def series_naming(metrics: Metrics, label: str, value: str) -> list[promtext.SeriesKey]:
    return [key for key in metrics if (label, value) in key[1]]


def one_value(metrics: Metrics, name: str, **labels: str) -> float:
    series = promtext.select(metrics, name, **labels)
    assert len(series) == 1, f"expected one {name}{labels} series, got {series}"
    return next(iter(series.values()))


def tool_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int | None, int]]:
    """(topic, partition) -> (committed, log end) of ``group``, from kafka-consumer-groups."""
    return {(row.topic, row.partition): (row.current_offset, row.log_end_offset)
            for row in kafka.consumer_groups_describe_all(bootstrap) if row.group == group}


def tool_groups(bootstrap: str) -> set[str]:
    return {listing.group for listing in kafka.consumer_groups_list_with_state_and_type(bootstrap)}


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


# ----------------------------------------------------------------------------------------------
# Offsets expiring, then expired, under a short broker retention


def retention_seconds_from_broker(bootstrap: str) -> float:
    """offsets.retention.minutes as the broker itself reports it, in seconds."""
    configs = kafka.broker_configs(bootstrap)
    assert configs["offsets.retention.minutes"] == str(RETENTION_MINUTES)
    assert configs["offsets.retention.check.interval.ms"] == str(RETENTION_CHECK_MS)
    return RETENTION_MINUTES * 60.0


def rest_source_state(flink: FlinkJob, jid: str) -> tuple[dict[int, int], float]:
    """The reader's currentOffset per partition and commitsSucceeded (summed), from REST."""
    vertex = next(v["id"] for v in flink.rest_get(f"/jobs/{jid}")[1]["vertices"]
                  if "Source" in v["name"])
    ids = [m["id"] for m in flink.vertex_metrics(jid, vertex)
           if m["id"].endswith((".currentOffset", ".KafkaSourceReader.commitsSucceeded"))]
    offsets: dict[int, int] = {}
    commits = 0.0
    for metric in flink.vertex_metrics(jid, vertex, ids) if ids else []:
        if metric["id"].endswith(".commitsSucceeded"):
            commits += float(metric["value"])
        else:
            partition = int(re.search(r"\.partition\.(\d+)\.currentOffset$", metric["id"])[1])
            offsets[partition] = int(float(metric["value"]))
    return offsets, commits


@dataclass
class RetentionRun:
    """A broker whose offsets retention is one minute, with two groups racing it at once.

    - ``kafka_group``: a simple group without a job, committed once just after lagsight
      started (so lagsight saw the commit happen): offsets_expiring, then gone.
    - ``flink_group``: the configured group of a Flink job with commits switched off, committed
      once just before the job started from those offsets: once they expire the pair has no
      offsets, offsets_missing.
    Both retention clocks run during one minute, which is why they share one module run.
    """
    broker: KafkaBroker
    retention: float
    lagsight: LagsightProcess
    flink: FlinkJob
    job: str
    jid: str
    topic: str
    kafka_group: str
    kafka_committed_wall: float
    kafka_committed_at: float
    flink_group: str
    flink_committed_wall: float
    launched_at: float
    kafka_watch: DiagnosisWatch
    flink_watch: DiagnosisWatch
    expiry: GroupExpiryWatch

    def wait_for_expiry(self, group: str) -> tuple[float, float]:
        """(offsets gone, group gone) as the broker answered (time.time()), once Kafka's own
        tool agrees that the group is gone."""
        offsets_gone, group_gone = self.expiry.wait_gone(group, self.retention + 90)
        assert group not in tool_groups(self.broker.bootstrap)
        assert tool_offsets(self.broker.bootstrap, group) == {}
        return offsets_gone, group_gone


@pytest.fixture(scope="module")
def retention_run(lagsight_binary: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[RetentionRun]:
    work_dir = tmp_path_factory.mktemp("short-retention")
    prefix = f"dr-{uuid.uuid4().hex[:6]}"
    topic, kafka_group, flink_group = f"{prefix}-t", f"{prefix}-alone", f"{prefix}-flink"
    job = f"{prefix}-job"
    broker = KafkaBroker(work_dir / "kafka", extra_properties={
        "offsets.retention.minutes": str(RETENTION_MINUTES),
        "offsets.retention.check.interval.ms": str(RETENTION_CHECK_MS)})
    launcher = Lagsights(lagsight_binary, work_dir)
    flink: FlinkJob | None = None
    watches: list[DiagnosisWatch] = []
    expiry: GroupExpiryWatch | None = None
    try:
        broker.start()
        bootstrap = broker.bootstrap
        retention = retention_seconds_from_broker(bootstrap)
        create_topic(bootstrap, topic, 2)
        produce(bootstrap, topic, [100, 100])
        # Offsets from an earlier life of the job's group; the job starts from them.
        commit_without_joining(bootstrap, flink_group, {(topic, 0): 20, (topic, 1): 20})
        flink_committed_wall = time.time()
        spec = JobSpec(job, [topic], group=flink_group, start="committed", commit=False,
                       checkpoint_ms=1000)
        flink = FlinkJob(FLINK_LINE, [spec], work_dir / "flink", bootstrap=bootstrap)
        flink.start()
        lagsight = launcher.start(diagnosis_config(
            bootstrap, groups=[f"{prefix}-.*"], expiry_warning_ratio=EXPIRY_WARNING_RATIO,
            flink=[{"name": FLINK_CLUSTER, "rest_url": flink.rest_url, "kafka_cluster": CLUSTER,
                    "poll_interval": "1s", "request_timeout": "5s",
                    "groups": [{"job": job, "group": flink_group}]}]))
        launched_at = time.monotonic()
        flink_watch = watch_pair(lagsight, flink_group, job, t0=launched_at)
        watches.append(flink_watch)
        commit_without_joining(bootstrap, kafka_group, {(topic, 0): 10, (topic, 1): 10})
        kafka_committed_wall, kafka_committed_at = time.time(), time.monotonic()
        kafka_watch = watch_pair(lagsight, kafka_group, t0=kafka_committed_at)
        watches.append(kafka_watch)
        expiry = GroupExpiryWatch(bootstrap, [kafka_group, flink_group])
        yield RetentionRun(broker, retention, lagsight, flink, job, flink.jobs[job], topic,
                           kafka_group, kafka_committed_wall, kafka_committed_at, flink_group,
                           flink_committed_wall, launched_at, kafka_watch, flink_watch, expiry)
    finally:
        if expiry is not None:
            expiry.close()
        for watch in watches:
            watch.close()
        try:
            launcher.stop_all()
        finally:
            if flink is not None:
                flink.stop()
            broker.stop()


@pytest.fixture
def retention_logs(request, retention_run: RetentionRun) -> RetentionRun:
    _register_log_for_failures(request, "lagsight log", retention_run.lagsight.log_file)
    _register_log_for_failures(request, "short-retention broker log",
                               retention_run.broker.log_file)
    _register_log_for_failures(request, "flink log", retention_run.flink.log_file)
    return retention_run


def test_offsets_expiring_then_expired(retention_logs, diagnosis_results):
    """A simple group committed once: offsets_expiring before the broker's retention runs out,
    then Kafka drops the group and lagsight drops it too."""
    run = retention_logs
    bootstrap, group, topic, lagsight = run.broker.bootstrap, run.kafka_group, run.topic, \
        run.lagsight
    result = diagnosis_results("Kafka-only offsets_expiring: a group committed once under a "
                               f"{RETENTION_MINUTES}-minute offsets retention",
                               "offsets_expiring")
    result.watch = run.kafka_watch
    result.note(f"broker offsets.retention.minutes={RETENTION_MINUTES} (kafka-configs), "
                f"expiry_warning_ratio {EXPIRY_WARNING_RATIO}: warning due "
                f"{run.retention * (1 - EXPIRY_WARNING_RATIO):.0f} s after the commit")
    if time.time() < run.kafka_committed_wall + run.retention - 10:
        assert tool_offsets(bootstrap, group) == {(topic, 0): (10, 100), (topic, 1): (10, 100)}

    if not GROUND_TRUTH_ONLY:
        expiry = "lagsight_kafka_group_offsets_expiry_seconds"
        metrics = lagsight.wait_for(lambda m: promtext.select(m, expiry, group=group),
                                    "the group's expiry estimate")
        assert one_value(metrics, "lagsight_kafka_offsets_retention_seconds",
                         kafka_cluster=CLUSTER) == run.retention
        first = one_value(metrics, expiry, group=group)
        first_expected = run.retention - (time.time() - run.kafka_committed_wall)
        # lagsight first sees the commit at its next poll: up to a poll (and a scrape) late.
        assert first_expected - 1 <= first <= first_expected + 4, (first, first_expected)
        time.sleep(3)
        second = one_value(lagsight.scrape(), expiry, group=group)
        assert first - 5 <= second < first, f"the expiry estimate must count down: {first} {second}"

        seconds = assert_detected(run.kafka_watch, "offsets_expiring", run.retention + 30)
        earliest = run.retention * (1 - EXPIRY_WARNING_RATIO)
        assert earliest - 2 <= seconds, f"offsets_expiring after {seconds} s, before {earliest} s"
        # Still there in Kafka at the warning: it warned before the loss, not after.
        assert group in tool_groups(bootstrap)

    offsets_gone, group_gone = run.wait_for_expiry(group)
    result.note(f"broker: offsets gone {offsets_gone - run.kafka_committed_wall:.0f} s and the "
                f"group gone {group_gone - run.kafka_committed_wall:.0f} s after the commit "
                f"(OffsetFetch/ListGroups every 0.5 s; kafka-consumer-groups agrees)")
    if GROUND_TRUTH_ONLY:
        return
    metrics = lagsight.wait_for_fresh_poll(group_gone)
    assert series_naming(metrics, "group", group) == [], "lagsight still exports the group"


def test_offsets_missing_after_expiry_flink(retention_logs, diagnosis_results):
    """A Flink job with commits off and a configured group whose old offsets expire under the
    broker's retention: the pair loses its group's offsets, cause offsets_missing."""
    run = retention_logs
    bootstrap, group, topic, flink, jid = run.broker.bootstrap, run.flink_group, run.topic, \
        run.flink, run.jid
    result = diagnosis_results("offsets_missing: the group's offsets expired under the broker's "
                               "retention (commits off, group configured)", "offsets_missing",
                               FLINK_LINE)
    result.watch = run.flink_watch
    # Ground truth before the expiry: the job read everything from offset 20 on and
    # committed nothing; Kafka still holds the group's old offsets.
    flink.wait_for_completed_checkpoints(jid, 3)
    wait_until(lambda: rest_source_state(flink, jid)[0] == {0: 99, 1: 99}, 60,
               "the job to read both partitions to the end")
    assert rest_source_state(flink, jid)[1] == 0, "a job with commits off committed"
    if time.time() < run.flink_committed_wall + run.retention - 10:
        assert tool_offsets(bootstrap, group) == {(topic, 0): (20, 100), (topic, 1): (20, 100)}

    offsets_gone, group_gone = run.wait_for_expiry(group)
    assert flink.job_overview(jid)["state"] == "RUNNING"
    result.note(f"commit=false, the job started from the committed 20; commitsSucceeded 0 "
                f"(REST); offsets.retention.minutes={RETENTION_MINUTES}; broker: offsets gone "
                f"{offsets_gone - run.flink_committed_wall:.0f} s, group gone "
                f"{group_gone - run.flink_committed_wall:.0f} s after the last commit; t0 = "
                f"offsets gone")
    # The fault is the loss of the offsets, whenever the broker got to it.
    run.flink_watch.restart_clock(time.monotonic() - (time.time() - offsets_gone))
    if GROUND_TRUTH_ONLY:
        return
    # Commits off is itself a reason for offsets_missing (README), so the cause may show
    # before the expiry too; what it showed is recorded, the assertion is about after it.
    result.note(f"offsets gone {run.flink_watch.t0 - run.launched_at:.0f} s after lagsight "
                f"started; causes from its start: "
                f"{run.flink_watch.history(since=run.launched_at, separator='; ')}")
    assert_detected(run.flink_watch, "offsets_missing", DETECT_TIMEOUT,
                    allowed={"offsets_expiring"})
    metrics = run.lagsight.wait_for_fresh_poll(group_gone)
    assert promtext.select(metrics, "lagsight_flink_job_group_info", job_name=run.job,
                           group=group, association="configured")


# ----------------------------------------------------------------------------------------------
# Two real clusters behind one bootstrap list


def exported_groups(metrics: Metrics, prefix: str) -> set[str]:
    return {dict(labels)["group"]
            for labels in promtext.select(metrics, "lagsight_kafka_group_info",
                                          kafka_cluster=CLUSTER)
            if dict(labels)["group"].startswith(prefix)}


def test_cluster_mismatch(lagsights, unique_prefix, tmp_path, request, diagnosis_results):
    """Two single-node clusters (both with node id 1, as real clusters often have) named in one
    bootstrap list: lagsight reports the mismatch, and the Flink job's pair gets
    cluster_mismatch. What a client sees of the groups through the mixed list is recorded."""
    brokers = [KafkaBroker(tmp_path / "kafka-a"), KafkaBroker(tmp_path / "kafka-b")]
    for label, broker in zip("ab", brokers):
        _register_log_for_failures(request, f"broker {label} log", broker.log_file)
    a, b = brokers
    try:
        # One after the other, from this thread: a broker is SIGTERMed when the thread that
        # started it ends (kafka_broker._die_with_parent), so no worker threads here.
        for broker in brokers:
            broker.start()
        run_cluster_mismatch(a, b, lagsights, unique_prefix, tmp_path, request,
                             diagnosis_results)
    finally:
        for broker in brokers:
            broker.stop()


def run_cluster_mismatch(a: KafkaBroker, b: KafkaBroker, lagsights: Lagsights, prefix: str,
                         tmp_path: Path, request, diagnosis_results) -> None:
    result = diagnosis_results("cluster_mismatch: two clusters in one bootstrap list",
                               "cluster_mismatch", FLINK_LINE)
    # The same topic name on both clusters (as with a mirror), different partition counts.
    topic = f"{prefix}-orders"
    group_a, group_b, group_job = f"{prefix}-on-a", f"{prefix}-on-b", f"{prefix}-job"
    job = f"{prefix}-job"
    create_topic(a.bootstrap, topic, 3)
    produce(a.bootstrap, topic, [30, 30, 30])
    create_topic(b.bootstrap, topic, 2)
    produce(b.bootstrap, topic, [80, 80])
    commit_without_joining(a.bootstrap, group_a, {(topic, p): 10 for p in range(3)})
    commit_without_joining(b.bootstrap, group_b, {(topic, p): 5 for p in range(2)})

    # Ground truth: two clusters, each id as the tool reads it and as StorageTool wrote it.
    ids = {broker.bootstrap: kafka.cluster_id(broker.bootstrap) for broker in (a, b)}
    assert ids[a.bootstrap] == a.stored_cluster_id() and ids[b.bootstrap] == b.stored_cluster_id()
    assert ids[a.bootstrap] != ids[b.bootstrap]
    groups_on = {broker.bootstrap: {g for g in tool_groups(broker.bootstrap)
                                    if g.startswith(prefix)} for broker in (a, b)}
    assert groups_on == {a.bootstrap: {group_a}, b.bootstrap: {group_b}}
    mixed = f"{a.bootstrap},{b.bootstrap}"
    tool_through_mixed = {g for g in tool_groups(mixed) if g.startswith(prefix)}
    result.note(f"cluster ids {ids[a.bootstrap]} (A) and {ids[b.bootstrap]} (B) "
                f"(kafka-cluster cluster-id = meta.properties); kafka-consumer-groups --list "
                f"through 'A,B' shows {sorted(tool_through_mixed)} of {{{group_a}, {group_b}}}")

    spec = JobSpec(job, [topic], group=group_job, checkpoint_ms=1000)
    with FlinkJob(FLINK_LINE, [spec], tmp_path / "flink", bootstrap=a.bootstrap) as flink:
        _register_log_for_failures(request, "flink log", flink.log_file)
        flink.wait_for_completed_checkpoints(flink.jobs[job], 2)
        wait_until(lambda: tool_offsets(a.bootstrap, group_job) == {
            (topic, p): (30, 30) for p in range(3)}, 60, "the job to commit on cluster A")
        launched_at = time.monotonic()
        lagsight = lagsights.start(diagnosis_config(mixed, groups=[f"{prefix}-.*"], flink=[{
            "name": FLINK_CLUSTER, "rest_url": flink.rest_url, "kafka_cluster": CLUSTER,
            "poll_interval": "1s", "request_timeout": "5s",
            "groups": [{"job": job, "group": group_job}]}]), request)
        watch = watch_pair(lagsight, group_job, job, t0=launched_at)
        result.watch = watch
        kafka_only_a = watch_pair(lagsight, group_a, t0=launched_at)
        kafka_only_b = watch_pair(lagsight, group_b, t0=launched_at)
        try:
            metrics = lagsight.wait_for_fresh_poll(time.time())
            if not GROUND_TRUTH_ONLY:
                info = {dict(labels)["bootstrap"]: dict(labels)["cluster_id"]
                        for labels in promtext.select(
                            metrics, "lagsight_kafka_bootstrap_cluster_info",
                            kafka_cluster=CLUSTER)}
                assert info == ids
                assert one_value(metrics, "lagsight_kafka_cluster_mismatch",
                                 kafka_cluster=CLUSTER) == 1
            # The seed case: through the mixed list a client silently misses one cluster's
            # groups (Kafka's own tool above). lagsight reads no group through it at all: one
            # librdkafka client connected to both crashed lagsight (SIGSEGV) within seconds.
            assert one_value(metrics, "lagsight_kafka_up", kafka_cluster=CLUSTER) == 1
            seen_groups = exported_groups(metrics, prefix)
            result.note(f"lagsight_kafka_up 1 while exporting groups {sorted(seen_groups)} of "
                        f"{sorted({group_a, group_b, group_job})}")
            if not GROUND_TRUTH_ONLY:
                assert seen_groups == set(), "lagsight read groups through a mixed list"
            if GROUND_TRUTH_ONLY:
                return
            seconds = assert_detected(watch, "cluster_mismatch", DETECT_TIMEOUT)
            result.note(f"pair cause cluster_mismatch {seconds} s after lagsight started")
            watch.hold(5)
            kafka_only_causes = {group_a: kafka_only_a.seen(), group_b: kafka_only_b.seen()}
            result.note(f"Kafka-only pairs (no cluster_mismatch in their subset) showed "
                        f"{kafka_only_causes}")
        finally:
            kafka_only_a.close()
            kafka_only_b.close()
