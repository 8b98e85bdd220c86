"""The README's metrics reference against what lagsight exports (issue 5: "a test fails when
they drift").

Three views of "what lagsight exports" are compared with the README's metric tables (every
Markdown table whose first column is `metric`, in any section):
- the source: every string literal starting with `lagsight_` in lib/ (the MetricDef names);
- a live lagsight polling the session's real Kafka broker and a real Flink 2.x MiniCluster with
  one KafkaSource job, plus Kafka groups made to show the conditional series (a partition
  without commit, a committed offset that went back, one beyond the log end): every metric in
  its /metrics is documented, with the labels the README gives;
- tests/deploy/exported_metrics.txt, the list the shipped rules and dashboard are checked
  against: the same names as the source, the same labels as the README and the live run.

README conventions read here: a metric cell names metrics in full, in backticks, optionally
with `{label,...}` (labels the series carries besides the section's); a `labels` column, where
the table has one, lists a metric's labels exactly ("same" = the row above); without one, the
section's "Labels:" paragraph lists the labels its metrics may carry.
"""

from __future__ import annotations

import re
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from workload import (SteadyProducer, commit_without_joining, create_topic, make_empty_group,
                      produce)

REPO_ROOT = Path(__file__).resolve().parents[2]
METRICS_DOC = REPO_ROOT / "docs" / "metrics.md"
SOURCE_DIR = REPO_ROOT / "lib"
sys.path.append(str(REPO_ROOT / "tests" / "deploy"))  # after tests/integration: its conftest wins
import promql_names  # noqa: E402  (reads tests/deploy/exported_metrics.txt)

METRIC_NAME_LITERAL = re.compile(r'"(lagsight_[a-zA-Z0-9_]*)"')
CODE_SPAN = re.compile(r"`([^`]*)`")
DOC_NAME = re.compile(r"(lagsight_[a-z0-9_]+)(?:\{([a-z_, ]*)\})?")
FLINK_LINE = "2.x"
FLINK_CLUSTER = "mini"
PREFIX = f"mref-{uuid.uuid4().hex[:6]}"
LIVE_TIMEOUT = 150.0


# ----------------------------------------------------------------------------------------------
# What the README documents


@dataclass
class DocRow:
    section: str
    labels: set[str] | None          # the `labels` column; None where the table has none
    extra_labels: set[str]           # `{...}` after the name
    section_labels: set[str]         # the section's "Labels:" paragraph


def readme_metrics(text: str) -> dict[str, DocRow]:
    """metric name -> where and with which labels the README's metric tables document it.

    Raises AssertionError for a cell the convention does not cover (an abbreviated name, a
    metric documented twice), so a table nobody can check fails loudly."""
    docs: dict[str, DocRow] = {}
    section, section_labels = "", set()
    lines = text.splitlines()
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            section, section_labels = line.lstrip("#").strip(), set()
        elif not in_fence and line.startswith("Labels:"):
            paragraph = []
            while i < len(lines) and lines[i].strip():
                paragraph.append(lines[i])
                i += 1
            section_labels = set(CODE_SPAN.findall(" ".join(paragraph)))
            continue
        elif not in_fence and re.match(r"\|\s*metric\s*\|", line):
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            has_labels = len(header) > 1 and header[1] == "labels"
            i += 2                                   # the header and the |---| line
            previous_labels: set[str] | None = None
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                labels = None
                if has_labels:
                    column = cells[1]
                    labels = (set(previous_labels or ()) if column == "same" else
                              {x.strip() for x in column.split(",") if x.strip()})
                    previous_labels = labels
                for span in CODE_SPAN.findall(cells[0]):
                    assert not span.startswith("..."), (
                        f"README section {section!r}: write {span!r} as the full metric name")
                    match = DOC_NAME.fullmatch(span)
                    assert match, f"README section {section!r}: {span!r} is not a metric name"
                    name = match.group(1)
                    assert name not in docs, f"README documents {name} twice"
                    extra = {x.strip() for x in (match.group(2) or "").split(",") if x.strip()}
                    docs[name] = DocRow(section, labels, extra, section_labels)
                i += 1
            continue
        i += 1
    return docs


def source_metrics(root: Path) -> dict[str, list[str]]:
    """metric name -> the lib/ files whose string literals name it."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in (".cpp", ".h") and path.is_file():
            for name in METRIC_NAME_LITERAL.findall(path.read_text(errors="replace")):
                found.setdefault(name, []).append(str(path.relative_to(REPO_ROOT)))
    return found


@pytest.fixture(scope="module")
def documented() -> dict[str, DocRow]:
    return readme_metrics(METRICS_DOC.read_text())


@pytest.fixture(scope="module")
def in_source() -> dict[str, list[str]]:
    return source_metrics(SOURCE_DIR)


def label_problem(name: str, labels: set[str], doc: DocRow) -> str | None:
    """Why a series of ``name`` with ``labels`` does not match the README's row, or None."""
    if doc.labels is not None:
        if labels != doc.labels:
            return f"labels {sorted(labels)}, README's labels column says {sorted(doc.labels)}"
        return None
    if not doc.extra_labels <= labels:
        return f"labels {sorted(labels)} lack {sorted(doc.extra_labels - labels)} of the README"
    allowed = doc.section_labels | doc.extra_labels
    if not labels <= allowed:
        return (f"labels {sorted(labels - allowed)} are neither in {name}{{...}} nor in the "
                f"'Labels:' of section {doc.section!r}")
    return None


# ----------------------------------------------------------------------------------------------
# Static checks: source, README, exported_metrics.txt


def test_every_metric_in_the_source_is_documented_and_vice_versa(documented, in_source):
    assert len(in_source) >= 50, f"the source scan found only {sorted(in_source)}"
    assert len(documented) >= 50, f"the README scan found only {sorted(documented)}"
    undocumented = {name: files for name, files in in_source.items() if name not in documented}
    assert undocumented == {}, (
        f"metrics in lib/ without a row in README's metric tables: {undocumented}")
    unknown = {name: doc.section for name, doc in documented.items() if name not in in_source}
    assert unknown == {}, f"README documents metrics lib/ does not define: {unknown}"


def test_exported_metrics_list_agrees_with_the_source_and_readme(documented, in_source):
    listed = promql_names.exported_metrics()
    assert set(listed) == set(in_source), (
        f"tests/deploy/exported_metrics.txt lacks {sorted(set(in_source) - set(listed))}, "
        f"has extra {sorted(set(listed) - set(in_source))}")
    problems = {name: label_problem(name, labels, documented[name])
                for name, labels in listed.items() if name in documented}
    assert {k: v for k, v in problems.items() if v} == {}


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
                       "topics": {"allow": [f"{PREFIX}-.*"]}}],
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
    assert undocumented == [], f"exported but not in README's metric tables: {undocumented}"
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
