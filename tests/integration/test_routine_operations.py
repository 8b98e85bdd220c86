"""Routine operations of a Flink fleet on real Kafka + real Flink: the diagnosis must not cry wolf.

What a fleet does every day (failovers, upgrades and rescales from savepoints, fresh starts and
offset resets, slow checkpoints, a REST outage, quiet topics, shared group ids on disjoint
topics, restart loops, redeploys, new partitions) runs here as one scenario each, on both Flink
lines, with Flink's default configuration (metrics.fetcher.update-interval 10 s). The target is
**0 false causes**: after the operation lagsight may show only `healthy`,
`long_checkpoint_interval` and the causes that are true for it (`restarting` during a failover,
`replaying` during an intended replay, `really_behind` under a backlog that grows).

All scenarios of a Flink line run side by side in one MiniCluster, one broker and one lagsight
(the REST outage has its own lagsight behind a TCP proxy, so the outage touches nothing else);
each test waits for its own scenario and asserts its timeline. Ground truth comes from the real
systems (Flink REST: job states, numRestarts, savepoints; Kafka's offsets), never from lagsight.
Results go to the "Routine operations" table of docs/diagnosis-results.md.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from scenario_report import BASELINE_CAUSES, DiagnosisWatch
from tcp_proxy import TcpProxy
from workload import SteadyProducer, add_partitions, create_topic, make_topic

FLINK_LINES = ["2.x", "1.20"]
FLINK_CLUSTER = "mini"
WINDOW_SECONDS = 30
CONFIRM_POLLS = 2
LAG_THRESHOLD_RECORDS = 400
BASELINE_TIMEOUT = 150.0   # the first commit on a loaded 2-core machine takes a while
OBSERVE_SECONDS = 60.0     # after an operation ends, at least this long
SETTLE_TIMEOUT = 180.0     # until the pair is healthy again
RATE = 20                  # records/s of every scenario's topic
SCENARIO_TIMEOUT = 900.0
# Operations that replace the job with one of the same name: its pair must keep a diagnosis
# series throughout (before lagsight handed a successor that did not report yet its
# predecessor's pair, each was without one for 8-10 s). One poll, late by up to a second on a
# loaded machine, plus the watch's scrape spacing: a 2.x offset reset whose job had no group yet
# went from its group-less pair to its group's in one poll, 2.1 s between the watch's scrapes.
REPLACING_OPERATIONS = {"upgrade", "rescale", "fresh-start", "offset-reset", "redeploy"}
MAX_SECONDS_WITHOUT_DIAGNOSIS = 3.0

# One submission at a time: FlinkJob.submit reads the answers of the one harness JVM.
_SUBMIT = threading.Lock()


# ----------------------------------------------------------------------------------------------
# Watching a job whatever group it is paired with


class JobWatch(DiagnosisWatch):
    """A DiagnosisWatch of every pair of one job name (any group): a job whose group is not
    known yet, or ambiguous, is still watched."""

    def __init__(self, lagsight: LagsightProcess, job_name: str, t0: float | None = None) -> None:
        super().__init__(lagsight, kafka_cluster=CLUSTER, group="", job_name=job_name, t0=t0)

    def _causes_in(self, metrics: promtext.Samples) -> frozenset[str]:
        return frozenset(dict(labels)["cause"]
                         for labels, value in promtext.select(
                             metrics, "lagsight_diagnosis", kafka_cluster=CLUSTER,
                             job_name=self.labels["job_name"]).items()
                         if value == 1)

    def _related_in(self, metrics: promtext.Samples) -> frozenset[str]:
        return frozenset(f"{dict(labels)['group'] or '(no group)'}: {dict(labels)['cause']}"
                         for labels in promtext.select(metrics, "lagsight_diagnosis",
                                                       kafka_cluster=CLUSTER,
                                                       job_name=self.labels["job_name"]))


# ----------------------------------------------------------------------------------------------
# The module's systems and its scenarios


@dataclass
class Operation:
    """One routine operation: its timeline runs in a thread; the test reads what it saw."""
    key: str
    title: str
    run: Callable[[Env, Operation], None]
    expected: str = "healthy"          # the cause the operation must show (healthy: none)
    allowed: frozenset[str] = frozenset()   # causes that are true for it as well
    watch: DiagnosisWatch | None = None
    notes: list[str] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def note(self, text: str) -> None:
        self.notes.append(text)


@dataclass
class Env:
    line: str
    bootstrap: str
    prefix: str
    flink: FlinkJob
    lagsight: LagsightProcess
    work_dir: Path
    lagsight_binary: Path
    producers: list[SteadyProducer] = field(default_factory=list)
    extra_lagsights: list[LagsightProcess] = field(default_factory=list)
    proxies: list[TcpProxy] = field(default_factory=list)

    def name(self, key: str) -> str:
        return f"{self.prefix}-{key}"

    def topic(self, key: str, partitions: int = 1, rate: float = RATE, prefill: int = 0) -> str:
        topic = self.name(key)
        if producer := make_topic(self.bootstrap, topic, partitions, prefill=prefill, rate=rate):
            self.producers.append(producer)
        return topic

    def submit(self, spec: JobSpec) -> str:
        with _SUBMIT:
            return self.flink.submit(spec)


def lagsight_config(bootstrap: str, rest_url: str, prefix: str, jobs: str = ".*") -> dict:
    return {
        "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
                   "request_timeout": "5s",
                   "groups": {"allow": [f"{prefix}.*"]},
                   "topics": {"allow": [f"{prefix}.*"]}}],
        "flink": [{"name": FLINK_CLUSTER, "rest_url": rest_url, "kafka_cluster": CLUSTER,
                   "poll_interval": "1s", "request_timeout": "5s",
                   "jobs": {"allow": [jobs]}}],
        "diagnosis": {"window": f"{WINDOW_SECONDS}s", "confirm_polls": CONFIRM_POLLS,
                      "lag_threshold_records": LAG_THRESHOLD_RECORDS},
    }


def num_restarts(flink: FlinkJob, jid: str) -> int:
    status, body = flink.rest_get(f"/jobs/{jid}/metrics?get=numRestarts")
    if status != 200 or not body:
        return 0
    return int(float(body[0]["value"]))


def job_state(flink: FlinkJob, jid: str) -> str:
    overview = flink.job_overview(jid)
    return overview["state"] if overview else "UNKNOWN"


def baseline(env: Env, op: Operation, jid: str, job_name: str) -> None:
    """The job commits (REST) and lagsight calls it healthy; then the operation's clock starts."""
    wait_until(lambda: env.flink.source_commit_counters(jid)["commitsSucceeded"] >= 2,
               BASELINE_TIMEOUT, f"{job_name} to commit twice")
    op.watch = JobWatch(env.lagsight, job_name)
    op.watch.wait_for("healthy", BASELINE_TIMEOUT)
    op.watch.restart_clock()


def settle(op: Operation, minimum: float = OBSERVE_SECONDS) -> None:
    """Watches at least ``minimum`` seconds and until the pair is healthy again."""
    start = time.monotonic()
    op.watch.hold(minimum)
    op.watch.wait_for("healthy", SETTLE_TIMEOUT, since=time.monotonic() - 1)
    op.note(f"observed {time.monotonic() - start:.0f} s after the operation")


def spec_for(env: Env, key: str, topics: list[str], **kwargs) -> JobSpec:
    return JobSpec(env.name(key), topics, group=kwargs.pop("group", env.name(key)), **kwargs)


def stop_with_savepoint(env: Env, jid: str) -> str:
    path = env.flink.trigger_savepoint(jid, cancel_job=True)
    env.flink.wait_for_state(jid, ("CANCELED",), 60)
    return path


# -- the operations ------------------------------------------------------------------------


def op_failover(env: Env, op: Operation) -> None:
    fail_file = env.work_dir / f"{op.key}.fail"
    spec = spec_for(env, op.key, [env.topic(op.key)], fail_once_file=fail_file)
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    before = num_restarts(env.flink, jid)
    fail_file.touch()
    wait_until(lambda: not fail_file.exists(), 60, "the job to fail once (it deletes the file)")
    wait_until(lambda: num_restarts(env.flink, jid) > before, 60, "a restart (numRestarts)")
    wait_until(lambda: job_state(env.flink, jid) == "RUNNING", 120, "RUNNING again")
    op.note(f"a task failed on purpose; REST numRestarts {before} -> "
            f"{num_restarts(env.flink, jid)}, restored from the latest checkpoint")
    settle(op)


def op_upgrade(env: Env, op: Operation) -> None:
    spec = spec_for(env, op.key, [env.topic(op.key)])
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    path = stop_with_savepoint(env, jid)
    time.sleep(10)  # the new version is being rolled out
    new_jid = env.submit(dataclasses.replace(spec, restore=path))
    op.note(f"savepoint + cancel, 10 s, redeploy from it ({jid[:8]} -> {new_jid[:8]})")
    settle(op)


def op_rescale(env: Env, op: Operation) -> None:
    spec = spec_for(env, op.key, [env.topic(op.key, partitions=2)])
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    path = stop_with_savepoint(env, jid)
    env.submit(dataclasses.replace(spec, restore=path, parallelism=2))
    op.note("savepoint + cancel, redeploy from it with parallelism 1 -> 2")
    settle(op)


def op_fresh_start(env: Env, op: Operation) -> None:
    topic = env.topic(op.key, prefill=2000)
    spec = spec_for(env, op.key, [topic])
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    env.flink.cancel_job(jid)
    # Reprocess from the beginning, at 100 records/s against 20 arriving: a visible replay.
    env.submit(dataclasses.replace(spec, start="earliest", delay_us=10_000))
    op.note("cancelled, resubmitted on the same group with start=earliest (no restore), "
            "reading 100 records/s")
    settle(op)


def op_offset_reset(env: Env, op: Operation) -> None:
    topic = env.topic(op.key, prefill=1000)
    spec = spec_for(env, op.key, [topic])
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    env.flink.cancel_job(jid)
    admin = AdminClient({"bootstrap.servers": env.bootstrap})
    futures = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(spec.group, [TopicPartition(topic, 0, 0)])])
    for future in futures.values():
        future.result(timeout=30)
    env.submit(dataclasses.replace(spec, delay_us=10_000))
    op.note("job cancelled, its group's offset reset to 0 with the admin API, job restarted "
            "from the committed offsets at 100 records/s")
    settle(op)


def op_min_pause(env: Env, op: Operation) -> None:
    spec = spec_for(env, op.key, [env.topic(op.key)], checkpoint_ms=10_000, min_pause_ms=30_000)
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    op.note("checkpoint interval 10 s, min-pause 30 s: a checkpoint every ~30 s")
    op.watch.hold(120)


def op_backpressure(env: Env, op: Operation) -> None:
    # 20 records/s of capacity against 40 arriving, with small network buffers: the source is
    # backpressured and barriers queue behind the backlog, so checkpoints take long yet complete.
    topic = env.topic(op.key, rate=0)
    spec = spec_for(env, op.key, [topic], delay_us=50_000)
    jid = env.submit(spec)
    env.producers.append(SteadyProducer(env.bootstrap, topic, 1, 10))
    baseline(env, op, jid, spec.name)
    env.producers.append(SteadyProducer(env.bootstrap, topic, 1, 30))
    op.watch.wait_for("really_behind", 240)
    behind_at = time.monotonic()
    check_bottleneck(env, op, jid, spec.name, behind_at)
    op.watch.hold(max(0.0, 60 - (time.monotonic() - behind_at)))
    status, checkpoints = env.flink.checkpoints(jid)
    durations = [c.get("end_to_end_duration", 0) for c in checkpoints.get("history", [])
                 if c.get("status") == "COMPLETED"]
    op.note(f"10 then 40 records/s against 20/s of capacity; completed checkpoints "
            f"{checkpoints['counts']['completed']}, slowest {max(durations or [0]) / 1000:.1f} s "
            f"(interval 1 s)")


def flink_vertex_load(env: Env, jid: str, name_contains: str, metric: str) -> float:
    """Flink's own aggregate (max over subtasks) of one task metric of a vertex: ground truth."""
    vid = env.flink.vertex_id(jid, name_contains)
    status, body = env.flink.rest_get(
        f"/jobs/{jid}/vertices/{vid}/subtasks/metrics?get={metric}&agg=max")
    assert status == 200 and body, (status, body)
    return float(body[0]["max"])


def check_bottleneck(env: Env, op: Operation, jid: str, job_name: str, behind_at: float) -> None:
    """The job that is behind has its slow map named as the bottleneck (Flink's REST API: the
    map busy, the source backpressured), never its source; at today's parallelism it never
    catches up (it handles 20 of the 40 records/s arriving), and no parallelism is recommended:
    the map reads its source through a FORWARD edge and the topic has one partition, so more
    map subtasks would idle. The anchor job, healthy, has no bottleneck series."""
    def named():
        series = promtext.select(env.lagsight.scrape(), "lagsight_flink_job_bottleneck_busy_ratio",
                                 job_name=job_name)
        return series or None
    series = wait_until(named, 60, f"a bottleneck named for {job_name}")
    op.note(f"bottleneck named {time.monotonic() - behind_at:.1f} s after really_behind")
    [(labels, busy)] = series.items()
    vertex = dict(labels)["vertex"]
    assert vertex.startswith(f"{job_name}-map"), f"bottleneck {vertex!r}, not the map"
    map_busy = flink_vertex_load(env, jid, f"{job_name}-map", "busyTimeMsPerSecond")
    source_waits = flink_vertex_load(env, jid, "Source:", "backPressuredTimeMsPerSecond")
    assert map_busy >= 500 and source_waits >= 500, (map_busy, source_waits)
    # The pair's judgement takes the bottleneck at the next Kafka poll after the Flink poll.
    def catch_up_now():
        scraped = env.lagsight.scrape()
        found = promtext.select(scraped,
                                "lagsight_diagnosis_catch_up_at_current_parallelism_seconds",
                                job_name=job_name, vertex=vertex)
        return (scraped, found) if found else None
    metrics, now = wait_until(catch_up_now, 30, f"the catch-up at today's parallelism of {job_name}")
    assert all(v == float("inf") for v in now.values()), now
    skewed = promtext.select(metrics, "lagsight_flink_job_bottleneck_skewed", job_name=job_name)
    assert list(skewed.values()) == [0], skewed
    recommended = promtext.select(metrics, "lagsight_diagnosis_recommended_parallelism",
                                  job_name=job_name)
    assert not recommended, recommended
    assert not promtext.select(metrics, "lagsight_flink_job_bottleneck_busy_ratio",
                               job_name=env.name("anchor"))
    op.note(f"bottleneck {vertex!r} busy {busy:.2f} (Flink: map busy {map_busy:.0f} ms/s, "
            f"source backpressured {source_waits:.0f} ms/s); never catches up at today's 1, "
            f"and no parallelism is recommended (one partition, read through a forward edge)")


def op_rest_outage(env: Env, op: Operation) -> None:
    spec = spec_for(env, op.key, [env.topic(op.key)])
    host, port = env.flink.rest_url.removeprefix("http://").split(":")
    proxy = TcpProxy((host, int(port)))
    env.proxies.append(proxy)
    own = LagsightProcess(env.lagsight_binary, env.work_dir / "lagsight-outage",
                          lagsight_config(env.bootstrap, f"http://127.0.0.1:{proxy.port}",
                                          env.name(op.key), jobs=f"{spec.name}"))
    (env.work_dir / "lagsight-outage").mkdir()
    own.start()
    env.extra_lagsights.append(own)
    jid = env.submit(spec)
    wait_until(lambda: env.flink.source_commit_counters(jid)["commitsSucceeded"] >= 2,
               BASELINE_TIMEOUT, f"{spec.name} to commit twice")
    op.watch = JobWatch(own, spec.name)
    op.watch.wait_for("healthy", BASELINE_TIMEOUT)
    op.watch.restart_clock()
    kafka_only: list[str] = []

    def watch_kafka_only() -> None:
        end = time.monotonic() + 70
        while time.monotonic() < end:
            for labels in promtext.select(own.scrape(), "lagsight_diagnosis",
                                          group=spec.group, job_id=""):
                kafka_only.append(dict(labels)["cause"])
            time.sleep(1)
    watcher = threading.Thread(target=watch_kafka_only, daemon=True)
    watcher.start()
    proxy.outage(60)
    watcher.join()
    assert not kafka_only, f"the group was judged Kafka-only during the outage: {kafka_only}"
    op.note("lagsight's Flink REST connection refused for 60 s (TCP proxy); the group was never "
            "judged Kafka-only meanwhile")
    settle(op, 30)


def op_quiet_topic(env: Env, op: Operation) -> None:
    topic = env.topic(op.key, rate=0, prefill=100)
    first = spec_for(env, f"{op.key}-a", [topic], start="earliest")
    second = spec_for(env, f"{op.key}-b", [topic], start="earliest")
    jid = env.submit(first)
    other = env.submit(second)
    wait_until(lambda: env.flink.source_commit_counters(other)["commitsSucceeded"] >= 2,
               BASELINE_TIMEOUT, "the second job to commit twice")
    op.watch = JobWatch(env.lagsight, second.name)
    second_watch = JobWatch(env.lagsight, first.name)
    try:
        op.watch.hold(90)
        second_watch.close()
        assert "offsets_missing" not in second_watch.seen(), second_watch.history()
    finally:
        second_watch.close()
    op.note(f"two caught-up jobs ({jid[:8]}, {other[:8]}), own groups, 100 records, nothing "
            f"arrives: both groups hold the same offsets")


def op_disjoint_topics(env: Env, op: Operation) -> None:
    group = env.name(op.key)
    first = spec_for(env, f"{op.key}-a", [env.topic(f"{op.key}-a")], group=group)
    second = spec_for(env, f"{op.key}-b", [env.topic(f"{op.key}-b")], group=group)
    env.submit(first)
    jid = env.submit(second)
    baseline(env, op, jid, second.name)
    op.note("two jobs, one group id, disjoint topics")
    op.watch.hold(90)


def op_restart_loop(env: Env, op: Operation) -> None:
    fail_file = env.work_dir / f"{op.key}.fail"
    spec = spec_for(env, op.key, [env.topic(op.key)], fail_records_file=fail_file)
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    before = num_restarts(env.flink, jid)
    fail_file.touch()
    op.watch.wait_for("restart_loop", 180)
    op.note(f"every record fails: REST numRestarts {before} -> {num_restarts(env.flink, jid)}")
    fail_file.unlink()


def op_redeploy(env: Env, op: Operation) -> None:
    spec = spec_for(env, op.key, [env.topic(op.key)])
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    env.flink.cancel_job(jid)
    new_jid = env.submit(spec)
    op.note(f"cancelled and resubmitted under the same name ({jid[:8]} -> {new_jid[:8]})")
    settle(op)


def op_new_partitions(env: Env, op: Operation) -> None:
    topic = env.topic(op.key, partitions=2)
    spec = spec_for(env, op.key, [topic], discovery_ms=5_000)
    jid = env.submit(spec)
    baseline(env, op, jid, spec.name)
    add_partitions(env.bootstrap, topic, 4)
    old = next(p for p in env.producers if p.topic == topic)
    env.producers.remove(old)
    old.stop()
    env.producers.append(SteadyProducer(env.bootstrap, topic, 4, RATE))
    op.note("2 -> 4 partitions while the job runs with partition discovery every 5 s")
    settle(op, 90)
    # Discovery assigned the new partitions (the REST API's reader metrics name all four), and
    # lagsight counts none of them unread.
    assert {p for _, p in env.flink.source_partitions(jid)} == {0, 1, 2, 3}
    unread = promtext.select(env.lagsight.scrape(), "lagsight_flink_topic_unread_partitions",
                             job_name=spec.name, topic=topic)
    assert list(unread.values()) == [0], unread


OPERATIONS = [
    Operation("failover", "task failure, automatic restart from the last checkpoint",
              op_failover, allowed=frozenset({"restarting"})),
    Operation("upgrade", "stop with savepoint, redeploy from it (upgrade)", op_upgrade),
    Operation("rescale", "rescale 1 -> 2 from a savepoint", op_rescale),
    Operation("fresh-start", "fresh start from earliest on an existing group", op_fresh_start,
              allowed=frozenset({"replaying"})),
    Operation("offset-reset", "offset reset of the stopped job's group, then restart",
              op_offset_reset, allowed=frozenset({"replaying"})),
    Operation("min-pause", "checkpoint interval 10 s with min-pause 30 s", op_min_pause),
    Operation("backpressure", "backpressure: checkpoints slow but completing", op_backpressure,
              expected="really_behind", allowed=frozenset({"steady_backlog"})),
    Operation("rest-outage", "Flink REST unreachable for 60 s", op_rest_outage),
    Operation("quiet", "two caught-up jobs with their own groups on a quiet topic",
              op_quiet_topic),
    Operation("disjoint", "two jobs sharing a group id on disjoint topics", op_disjoint_topics),
    Operation("restart-loop", "restart loop", op_restart_loop, expected="restart_loop",
              allowed=frozenset({"restarting"})),
    Operation("redeploy", "job cancelled and resubmitted under the same name", op_redeploy),
    Operation("partitions", "topic gains partitions while the job runs (discovery on)",
              op_new_partitions),
]


def _run(env: Env, op: Operation) -> None:
    try:
        op.run(env, op)
    except BaseException as error:  # noqa: BLE001 - reported by the operation's test
        op.error = error
    finally:
        op.done.set()


@pytest.fixture(scope="module", params=FLINK_LINES)
def routine(request, session_broker, lagsight_binary, tmp_path_factory) -> Iterator[tuple[Env, dict]]:
    line = request.param
    bootstrap = session_broker.bootstrap
    prefix = f"ro{line.replace('.', '')}-{uuid.uuid4().hex[:5]}"
    work_dir = tmp_path_factory.mktemp(f"routine-{line}")
    # The harness starts with at least one job: a healthy one, which also shows that the
    # operations of its neighbours never leak into its pair.
    anchor = f"{prefix}-anchor"
    create_topic(bootstrap, anchor, 1)
    anchor_producer = SteadyProducer(bootstrap, anchor, 1, RATE)
    flink = FlinkJob(line, [JobSpec(anchor, [anchor], group=anchor)], work_dir / "flink",
                     bootstrap=bootstrap, savepoint_dir=work_dir / "savepoints", slots=40,
                     heap="1500m")
    env = None
    try:
        flink.start()
        lagsight = LagsightProcess(lagsight_binary, work_dir / "lagsight",
                                   lagsight_config(bootstrap, flink.rest_url, prefix))
        (work_dir / "lagsight").mkdir()
        lagsight.start()
        env = Env(line, bootstrap, prefix, flink, lagsight, work_dir, lagsight_binary,
                  producers=[anchor_producer])
        operations = {op.key: dataclasses.replace(op, notes=[], done=threading.Event())
                      for op in OPERATIONS}
        for op in operations.values():
            threading.Thread(target=_run, args=(env, op), daemon=True,
                             name=f"routine-{op.key}").start()
            time.sleep(2)  # staggered: thirteen submissions at once only queue up
        yield env, operations
    finally:
        if env is not None:
            for other in env.extra_lagsights:
                other.stop()
            for proxy in env.proxies:
                proxy.close()
            code = env.lagsight.stop()
        flink.stop()
        for producer in env.producers if env is not None else [anchor_producer]:
            producer.stop()
        if env is not None:
            assert code == 0, f"lagsight exited with {code} on SIGTERM (see its log)"


@pytest.fixture(autouse=True)
def logs_on_failure(request, routine, session_broker) -> None:
    env, _ = routine
    _register_log_for_failures(request, "lagsight log", env.lagsight.log_file)
    _register_log_for_failures(request, "flink log", env.flink.log_file)


@pytest.mark.parametrize("key", [op.key for op in OPERATIONS])
def test_routine_operation(routine, key, diagnosis_results):
    env, operations = routine
    op = operations[key]
    result = diagnosis_results(f"routine: {op.title}", op.expected, env.line,
                               allowed=BASELINE_CAUSES | op.allowed)
    assert op.done.wait(SCENARIO_TIMEOUT), f"{key} did not finish in {SCENARIO_TIMEOUT} s"
    result.watch = op.watch
    for text in op.notes:
        result.note(text)
    if op.error is not None:
        history = op.watch.history() if op.watch else "(no watch)"
        raise AssertionError(f"{key} failed: {op.error!r}; lagsight's causes:\n{history}") \
            from op.error
    assert op.watch is not None
    seen = op.watch.seen()
    if op.expected != "healthy":
        assert op.expected in seen, f"{op.expected} never shown:\n{op.watch.history()}"
    falses = op.watch.false_causes(op.expected, BASELINE_CAUSES | op.allowed)
    assert not falses, f"false causes {falses}:\n{op.watch.history()}"
    # A checkpoint sawtooth and a quiet topic are not a job behind: no bottleneck named. (Jobs
    # that replay or catch up after a restore may have one, rightly, while they do.)
    if key in ("min-pause", "quiet"):
        assert not op.watch.bottlenecks_named(), op.watch.bottlenecks_named()
    if key in REPLACING_OPERATIONS:
        without = op.watch.longest_without_diagnosis()
        result.note(f"longest without a diagnosis series {without:.1f} s")
        assert without <= MAX_SECONDS_WITHOUT_DIAGNOSIS, \
            f"{without:.1f} s without a diagnosis:\n{op.watch.history()}"
