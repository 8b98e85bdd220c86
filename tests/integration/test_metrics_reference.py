"""docs/metrics.md against what a live lagsight exports (issue 5: "a test fails when they drift").

A live lagsight polling the session's real Kafka broker and a real Flink 2.x MiniCluster with one
KafkaSource job, plus Kafka groups made to show the conditional series (a partition without
commit, a committed offset that went back, one beyond the log end): every metric in its /metrics
is documented in docs/metrics.md's tables, with the labels they give, and has the labels
tests/deploy/exported_metrics.txt lists. The static checks (every metric name in lib/ documented
and the reverse, exported_metrics.txt against both) run in the unit lane: tests/docs/test_docs.py.
The page's conventions are read by tests/docs/metrics_doc.py.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures
from flink_job import FlinkJob, JobSpec
from workload import (SteadyProducer, commit_without_joining, create_topic, make_empty_group,
                      produce)

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO_ROOT / "tests" / "deploy"))  # after tests/integration: its conftest wins
sys.path.append(str(REPO_ROOT / "tests" / "docs"))
import promql_names  # noqa: E402  (reads tests/deploy/exported_metrics.txt)
from metrics_doc import (DocRow, METRICS_DOC, documented_metrics, label_problem,  # noqa: E402
                         source_metrics)

FLINK_LINE = "2.x"
FLINK_CLUSTER = "mini"
PREFIX = f"mref-{uuid.uuid4().hex[:6]}"
LIVE_TIMEOUT = 150.0


@pytest.fixture(scope="module")
def documented() -> dict[str, DocRow]:
    return documented_metrics(METRICS_DOC.read_text())


@pytest.fixture(scope="module")
def in_source() -> dict[str, list[str]]:
    return source_metrics()


# ----------------------------------------------------------------------------------------------
# Live: what a running lagsight exports


@dataclass
class Live:
    metrics: promtext.Samples
    families: set[str]               # names from # TYPE lines (a family may have no series)


def group_name(kind: str) -> str:
    return f"{PREFIX}-{kind}"


@pytest.fixture(scope="module")
def live(session_broker, lagsight_binary, tmp_path_factory, request) -> Iterator[Live]:
    """lagsight on the session broker and a Flink 2.x MiniCluster with one job, scraped once
    every series the setup creates is there."""
    bootstrap = session_broker.bootstrap
    work_dir = tmp_path_factory.mktemp("metrics-reference")
    job, side = group_name("job"), group_name("side")
    producer = flink = lagsight = None
    code = 0
    try:
        create_topic(bootstrap, job, 1)
        producer = SteadyProducer(bootstrap, job, 1, 10)
        create_topic(bootstrap, side, 2)
        produce(bootstrap, side, [50, 50])
        make_empty_group(bootstrap, group_name("empty"), [side], commit_at=20)
        # A simple group committed on partition 0 only: partition 1 is uncommitted.
        commit_without_joining(bootstrap, group_name("partial"), {(side, 0): 40})
        # Committed beyond the log end of partition 1.
        commit_without_joining(bootstrap, group_name("beyond"), {(side, 1): 1000})
        commit_without_joining(bootstrap, group_name("rewind"), {(side, 0): 30})

        # Checkpoints every 3 s: a sawtooth period shorter than two 1 s polls cannot be measured.
        flink = FlinkJob(FLINK_LINE, [JobSpec(job, [job], group=job, checkpoint_ms=3000)],
                         work_dir / "flink", bootstrap=bootstrap, slots=2)
        flink.start()
        (work_dir / "lagsight").mkdir()
        lagsight = LagsightProcess(lagsight_binary, work_dir / "lagsight", {
            "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
                       "request_timeout": "5s", "groups": {"allow": [f"{PREFIX}-.*"]},
                       "topics": {"allow": [f"{PREFIX}-.*"]},
                       # The opt-in per-partition families too: every metric is to be seen.
                       "series": {"partition_committed_offsets": True,
                                  "partition_lag_seconds": True}}],
            "flink": [{"name": FLINK_CLUSTER, "rest_url": flink.rest_url,
                       "kafka_cluster": CLUSTER, "poll_interval": "1s",
                       "request_timeout": "5s"}],
        })
        _register_log_for_failures(request, "lagsight log", lagsight.log_file)
        lagsight.start()
        # The rewind group's offset goes back once lagsight has seen it forward.
        lagsight.wait_for(lambda m: promtext.select(
            m, "lagsight_kafka_group_committed_offset", group=group_name("rewind")),
            "lagsight to see the rewind group's first commit")
        commit_without_joining(bootstrap, group_name("rewind"), {(side, 0): 10})

        wanted = {
            ("lagsight_flink_job_group_info", job),             # the job is paired
            ("lagsight_kafka_group_sawtooth_period_seconds", job),
            ("lagsight_flink_source_commit_failure_ratio", job),
            ("lagsight_diagnosis", job),
            ("lagsight_kafka_group_partition_uncommitted", group_name("partial")),
            ("lagsight_kafka_group_offset_out_of_range", group_name("beyond")),
            ("lagsight_kafka_group_offset_regressions_total", group_name("rewind")),
            ("lagsight_kafka_group_lag_seconds", group_name("empty")),
        }

        def missing(metrics: promtext.Samples) -> set[tuple[str, str]]:
            present = {(name, value) for name, labels in metrics for key, value in labels
                       if key in ("group", "job_name")}
            return wanted - present
        lagsight.wait_for(lambda m: not missing(m),
                          f"every series the setup creates ({sorted(wanted)})", LIVE_TIMEOUT)
        status, body = lagsight.get("/metrics")
        assert status == 200
        families = {line.split()[2] for line in body.splitlines() if line.startswith("# TYPE ")}
        yield Live(promtext.parse(body), families)
    finally:
        if lagsight is not None:
            code = lagsight.stop()
        if flink is not None:
            flink.stop()
        if producer is not None:
            producer.stop()
        assert code in (0, None), f"lagsight exited with {code} on SIGTERM (see its log)"


def test_everything_a_live_lagsight_exports_is_documented(live, documented, in_source):
    names = {name for name, _ in live.metrics} | live.families
    assert {n for n in names if n.startswith("lagsight_flink_")}, "no Flink series: setup broken"
    undocumented = sorted(n for n in names if n not in documented)
    assert undocumented == [], f"exported but not in docs/metrics.md's tables: {undocumented}"
    listed = promql_names.exported_metrics()
    problems = set()
    for name, labels in live.metrics:
        label_names = {key for key, _ in labels}
        problem = label_problem(name, label_names, documented[name])
        if problem:
            problems.add(f"{name}: {problem}")
        if name in listed and label_names != listed[name]:
            problems.add(f"{name}: labels {sorted(label_names)}, exported_metrics.txt says "
                         f"{sorted(listed[name])}")
    assert sorted(problems) == []
    not_seen = sorted(set(in_source) - names)
    print(f"\n[metrics-reference] live: {len(names)} metric names checked; defined in lib/ but "
          f"not exported in this run: {not_seen}")


def test_a_live_lagsight_reports_how_long_its_render_took(live):
    # The only evidence of lagsight_exposition_render_duration_seconds beyond the benchmark: after
    # many renders it is one series holding a real duration (a render cannot take no time, and a
    # few thousand series do not take a minute; no speed is asserted here).
    durations = promtext.select(live.metrics, "lagsight_exposition_render_duration_seconds")
    assert len(durations) == 1, durations
    assert 0 < next(iter(durations.values())) < 60, durations
