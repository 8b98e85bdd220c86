"""A new job's Flink-only topic at lagsight's default polls: real Kafka, a real Flink 2.x job.

A job without group.id reads a topic no consumer group commits on, so lagsight's Kafka poll reads
that topic's log end only once a Flink poll has named it. Polled on schedule, the job's current
offsets were exported a poll or two before its Flink-side lag (up to a Kafka poll interval, 15 s
at the defaults). The Kafka cluster now polls early when a Flink job names a topic it has not
read: the lag follows the current offsets within seconds. Ground truth of the topic's existence
and the job's reading: Kafka's offsets and the Flink REST API (the job RUNNING with its reader's
partitions).
"""

from __future__ import annotations

import time
import uuid

import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures
from flink_job import FlinkJob, JobSpec
from workload import SteadyProducer, create_topic

PREFIX = f"flinkonly-{uuid.uuid4().hex[:6]}"
DEFAULT_POLL_SECONDS = 15.0  # lagsight's Kafka and Flink polls when not configured
# The early Kafka poll, its analysis and the render after the Flink poll that named the topic.
LAG_FOLLOWS_WITHIN_SECONDS = 5.0


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


def test_a_new_jobs_flink_only_topic_has_its_lag_with_its_offsets(session_broker, lagsight_binary,
                                                                  tmp_path, request):
    bootstrap = session_broker.bootstrap
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)
    anchor = f"{PREFIX}.anchor"
    create_topic(bootstrap, anchor, 1)
    producers = [SteadyProducer(bootstrap, anchor, 1, 20)]
    lagsight: LagsightProcess | None = None
    try:
        with FlinkJob("2.x", [JobSpec(f"{PREFIX}-anchor", [anchor], group=f"{PREFIX}-anchor")],
                      tmp_path / "flink", bootstrap=bootstrap) as flink:
            _register_log_for_failures(request, "flink log", flink.log_file)
            work_dir = tmp_path / "lagsight"
            work_dir.mkdir()
            lagsight = LagsightProcess(lagsight_binary, work_dir, {  # no poll_interval: defaults
                "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap,
                           "topics": {"allow": [f"{PREFIX}.*"]},
                           "groups": {"allow": [f"{PREFIX}.*"]}}],
                "flink": [{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": CLUSTER}]})
            _register_log_for_failures(request, "lagsight log", lagsight.log_file)
            lagsight.start()
            lagsight.wait_for(lambda m: promtext.select(m, "lagsight_flink_lag_records",
                                                        topic=anchor),
                              "the anchor job's Flink-side lag", timeout=4 * DEFAULT_POLL_SECONDS)

            # Two jobs one after the other: the Flink poll that first names a topic falls at a
            # different moment of the Kafka poll's schedule each time.
            gaps = []
            for key in ("first", "second"):
                topic = f"{PREFIX}.{key}"
                create_topic(bootstrap, topic, 2)
                producers.append(SteadyProducer(bootstrap, topic, 2, 20))
                jid = flink.submit(JobSpec(f"{PREFIX}-{key}", [topic], group=None,
                                           start="earliest"))
                current_at, lag_at = first_seen(lagsight, topic, timeout=6 * DEFAULT_POLL_SECONDS)
                gaps.append(lag_at - current_at)
                assert {p for _, p in flink.source_partitions(jid)} == {0, 1}
            print(f"Flink-side lag exported {', '.join(f'{g:.1f}' for g in gaps)} s after the "
                  f"current offsets")
            assert max(gaps) <= LAG_FOLLOWS_WITHIN_SECONDS, gaps
    finally:
        for producer in producers:
            producer.stop()
        if lagsight is not None:
            assert lagsight.stop() == 0
