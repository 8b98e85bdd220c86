"""Judgements at lagsight's default polls (15 s, Flink's metrics refreshed every 10 s): real Kafka,
real Flink 2.x jobs, nothing tuned.

Two facts read at different moments and compared as if together showed only at these polls:
- A new job's Flink-only topic (no group.id, so no group's commits make the Kafka poll read it)
  had its current offsets exported a Kafka poll before its Flink-side lag. The Kafka cluster now
  polls early when a Flink job names a topic it has not read.
- A job checkpointing every 5 s, seen through a 15 s poll, was called long_checkpoint_interval
  with the poll's period (every poll sees a commit, and the drops mix three). A period shorter
  than two polls is known from Flink, not measured; one of 60 s is measured.

Ground truth: Kafka's own tools (kafka-consumer-groups lag climbing and dropping) and the Flink
REST API (the jobs' checkpoint intervals and completed checkpoints, the readers' partitions).
One Flink cluster and one lagsight for the module; the checkpointing jobs start with it, so the
slow sawtooth has built up by the time its test looks.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import kafka_broker as kafka
import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from scenario_report import DiagnosisWatch
from workload import SteadyProducer, create_topic

PREFIX = f"defaults-{uuid.uuid4().hex[:6]}"
DEFAULT_POLL_SECONDS = 15.0  # lagsight's Kafka and Flink polls when not configured
# The early Kafka poll, its analysis and the render after the Flink poll that named the topic.
LAG_FOLLOWS_WITHIN_SECONDS = 5.0
# (checkpoint interval, records/s): 750 records between checkpoints, below lagsight's default
# threshold of 1,000; 3,600 above it.
SHORT_INTERVAL = (5_000, 150)
LONG_INTERVAL = (60_000, 60)


@dataclass
class Env:
    bootstrap: str
    flink: FlinkJob
    lagsight: LagsightProcess
    short_watch: DiagnosisWatch
    long_watch: DiagnosisWatch
    producers: list[SteadyProducer]


def name(key: str) -> str:
    return f"{PREFIX}-{key}"


@pytest.fixture(scope="module")
def env(session_broker, lagsight_binary, tmp_path_factory) -> Iterator[Env]:
    bootstrap = session_broker.bootstrap
    work_dir = tmp_path_factory.mktemp("default-polls")
    producers = []
    specs = []
    for key, (interval_ms, rate) in (("short", SHORT_INTERVAL), ("long", LONG_INTERVAL)):
        topic = f"{PREFIX}.{key}"
        create_topic(bootstrap, topic, 1)
        producers.append(SteadyProducer(bootstrap, topic, 1, rate))
        specs.append(JobSpec(name(key), [topic], group=name(key), checkpoint_ms=interval_ms))
    lagsight = None
    try:
        with FlinkJob("2.x", specs, work_dir / "flink", bootstrap=bootstrap) as flink:
            (work_dir / "lagsight").mkdir()
            lagsight = LagsightProcess(lagsight_binary, work_dir / "lagsight", {
                # No poll_interval, no diagnosis settings: lagsight's defaults.
                "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap,
                           "topics": {"allow": [f"{PREFIX}.*"]},
                           "groups": {"allow": [f"{PREFIX}.*"]}}],
                "flink": [{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": CLUSTER}]})
            lagsight.start()
            watches = [DiagnosisWatch(lagsight, kafka_cluster=CLUSTER, group=name(key),
                                      job_name=name(key)) for key in ("short", "long")]
            try:
                yield Env(bootstrap, flink, lagsight, *watches, producers)
            finally:
                for watch in watches:
                    watch.close()
    finally:
        for producer in producers:
            producer.stop()
        if lagsight is not None:
            assert lagsight.stop() == 0


@pytest.fixture(autouse=True)
def logs_on_failure(request, env, session_broker) -> None:
    _register_log_for_failures(request, "lagsight log", env.lagsight.log_file)
    _register_log_for_failures(request, "flink log", env.flink.log_file)
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)


def first_seen(lagsight: LagsightProcess, topic: str, timeout: float) -> tuple[float, float]:
    """Scrapes every 0.25 s: when the job's current offset of `topic` and when its Flink-side lag
    were first exported (monotonic seconds)."""
    current_at = lag_at = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and lag_at is None:
        metrics = lagsight.scrape()
        now = time.monotonic()
        if current_at is None and promtext.select(metrics, "lagsight_flink_source_current_offset",
                                                  topic=topic):
            current_at = now
        if promtext.select(metrics, "lagsight_flink_lag_records", topic=topic):
            lag_at = now
        time.sleep(0.25)
    assert current_at is not None and lag_at is not None, (
        f"{topic}: current offset first seen at {current_at}, lag at {lag_at}")
    return current_at, lag_at


def test_a_new_jobs_flink_only_topic_has_its_lag_with_its_offsets(env):
    # Two jobs one after the other: the Flink poll that first names a topic falls at a different
    # moment of the Kafka poll's schedule each time.
    gaps = []
    for key in ("first", "second"):
        topic = f"{PREFIX}.only-{key}"
        create_topic(env.bootstrap, topic, 2)
        env.producers.append(SteadyProducer(env.bootstrap, topic, 2, 20))
        jid = env.flink.submit(JobSpec(name(f"only-{key}"), [topic], group=None,
                                       start="earliest"))
        current_at, lag_at = first_seen(env.lagsight, topic, timeout=6 * DEFAULT_POLL_SECONDS)
        gaps.append(lag_at - current_at)
        assert {p for _, p in env.flink.source_partitions(jid)} == {0, 1}
    print(f"Flink-side lag exported {', '.join(f'{g:.1f}' for g in gaps)} s after the current "
          f"offsets")
    assert max(gaps) <= LAG_FOLLOWS_WITHIN_SECONDS, gaps


def test_sawtooth_at_a_15_s_poll_is_judged_by_the_checkpoint_interval(env):
    """5 s checkpoints are not long_checkpoint_interval and have no measured period; 60 s ones
    are long_checkpoint_interval with a period of 60 s."""
    intervals = {}
    for key in ("short", "long"):
        _, body = env.flink.rest_get(f"/jobs/{env.flink.jobs[name(key)]}/checkpoints/config")
        intervals[key] = body["interval"]
    assert intervals == {"short": SHORT_INTERVAL[0], "long": LONG_INTERVAL[0]}, intervals

    # Ground truth of the long interval's sawtooth: Kafka's tool sees the lag climb above
    # lagsight's default threshold and drop at a commit.
    lags: list[int] = []

    def sawtooth_seen() -> bool:
        try:
            rows = kafka.parse_describe_offsets(kafka.run_kafka_tool(
                kafka.CONSUMER_GROUP_COMMAND, "--bootstrap-server", env.bootstrap, "--describe",
                "--group", name("long")))
        except ValueError:  # "Group ... not found": no checkpoint has committed yet
            return False
        lags.append(sum(row.lag or 0 for row in rows))
        return max(lags) >= 1000 and any(b < a - 1000 for a, b in zip(lags, lags[1:]))
    wait_until(sawtooth_seen, 240, "kafka-consumer-groups to see the long interval's lag climb "
               "and drop", interval=2)

    env.long_watch.wait_for("long_checkpoint_interval", 8 * 60)
    (period,) = promtext.select(env.lagsight.scrape(),
                                "lagsight_kafka_group_sawtooth_period_seconds",
                                group=name("long")).values()
    print(f"long interval: tool lag readings {lags[-8:]}; lagsight's period {period:.1f} s; "
          f"the short interval's causes: {sorted(env.short_watch.seen())}")
    assert abs(period - 60) <= 6, period
    env.short_watch.close()
    assert "long_checkpoint_interval" not in env.short_watch.seen(), env.short_watch.history()
    assert set(env.short_watch.seen()) <= {"healthy"}, env.short_watch.history()
    # Neither sawtooth is a job behind: no bottleneck named at any scrape.
    env.long_watch.close()
    assert not env.short_watch.bottlenecks_named() | env.long_watch.bottlenecks_named()
    assert not promtext.select(env.lagsight.scrape(),
                               "lagsight_kafka_group_sawtooth_period_seconds",
                               group=name("short"))
