"""What the diagnosis scenarios saw, and the results file the test run writes from it.

Two parts, used by the scenario tests on real Kafka + real Flink:

- ``DiagnosisWatch`` scrapes lagsight's ``/metrics`` in a background thread and keeps, for one
  job<->group pair, which ``lagsight_diagnosis`` causes were active at each scrape. Tests ask it
  how long a cause took to show up after the fault was injected, and which other causes showed.
- ``record`` (or the ``diagnosis_results`` fixture) stores one result row per scenario; at the
  end of the session this plugin writes ``docs/diagnosis-results.md`` (for people) and
  ``docs/diagnosis-results.json`` (to merge with: rows of scenarios not run in this session are
  kept from the previous file). Nothing in those files is written by hand.

Register with ``pytest_plugins = ["scenario_report"]`` in conftest.py.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

import promtext

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_MD = REPO_ROOT / "docs" / "diagnosis-results.md"
RESULTS_JSON = REPO_ROOT / "docs" / "diagnosis-results.json"

DIAGNOSIS_METRIC = "lagsight_diagnosis"
# Causes that are not an alarm in any scenario: a false cause is anything else that is not the
# scenario's expected cause.
BASELINE_CAUSES = frozenset({"healthy", "long_checkpoint_interval"})
SCRAPE_INTERVAL_SECONDS = 0.5

_ROWS = pytest.StashKey[list["ScenarioRow"]]()
_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


# ----------------------------------------------------------------------------------------------
# Watching the exported diagnosis


@dataclass(frozen=True)
class Sighting:
    """One scrape: when (time.monotonic()), the pair's active causes, or why it failed.

    ``related`` are the other pairs of the same job name or group seen in that scrape, as
    ``group/job_name: cause`` strings (where lagsight put the job when not in the expected pair).
    ``bottlenecks``: the vertices lagsight named as the job's bottleneck in that scrape.
    """
    at: float
    causes: frozenset[str]
    error: str | None = None
    related: frozenset[str] = frozenset()
    bottlenecks: frozenset[str] = frozenset()


class DiagnosisWatch:
    """Scrapes lagsight every 0.5 s and remembers the causes exported for one job<->group pair.

    The pair is ``kafka_cluster`` + ``group`` + ``job_name``; ``job_name=None`` means the
    Kafka-only pair of that group (job_id="" and job_name=""), and ``group=""`` a Flink job for
    which lagsight found no group. Matching goes by job name, not id, so a job restarted under
    the same name (restore from a savepoint) stays the same pair.

    ``t0`` (time.monotonic(); default: now) is when the fault was injected: ``seen()`` counts
    from it and ignores earlier scrapes. Stop the thread with ``close()`` (or use ``with``).
    """

    def __init__(self, lagsight: Any, *, kafka_cluster: str, group: str,
                 job_name: str | None = None, t0: float | None = None,
                 interval: float = SCRAPE_INTERVAL_SECONDS) -> None:
        self.lagsight = lagsight
        self.labels = {"kafka_cluster": kafka_cluster, "group": group,
                       "job_name": job_name or ""}
        if job_name is None:
            self.labels["job_id"] = ""
        self.t0 = time.monotonic() if t0 is None else t0
        self.interval = interval
        self.lagsight_revision: str | None = None
        self._sightings: list[Sighting] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"diagnosis-watch-{group}-{job_name}")
        self._thread.start()

    def __enter__(self) -> DiagnosisWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def restart_clock(self, t0: float | None = None) -> None:
        """Moves t0 (e.g. to the moment the fault is injected, after a baseline phase)."""
        self.t0 = time.monotonic() if t0 is None else t0

    # -- reading ----------------------------------------------------------------------------

    def _causes_in(self, metrics: promtext.Samples) -> frozenset[str]:
        return frozenset(dict(labels)["cause"]
                         for labels, value in promtext.select(metrics, DIAGNOSIS_METRIC,
                                                              **self.labels).items()
                         if value == 1)

    def _related_in(self, metrics: promtext.Samples) -> frozenset[str]:
        related = set()
        for labels in promtext.select(metrics, DIAGNOSIS_METRIC,
                                      kafka_cluster=self.labels["kafka_cluster"]):
            pair = dict(labels)
            same_job = self.labels["job_name"] and pair["job_name"] == self.labels["job_name"]
            same_group = self.labels["group"] and pair["group"] == self.labels["group"]
            if (same_job or same_group) and not all(pair[k] == v
                                                    for k, v in self.labels.items()):
                related.add(f"{pair['group'] or '(no group)'}/{pair['job_name'] or '(no job)'}: "
                            f"{pair['cause']}")
        return frozenset(related)

    def _scrape_once(self) -> Sighting:
        try:
            metrics = self.lagsight.scrape()
        except (AssertionError, OSError, ValueError) as error:
            return Sighting(time.monotonic(), frozenset(), f"{type(error).__name__}: {error}")
        if self.lagsight_revision is None:
            for labels in promtext.select(metrics, "lagsight_build_info"):
                self.lagsight_revision = dict(labels).get("revision")
        bottlenecks = frozenset(
            dict(labels)["vertex"] for labels in promtext.select(
                metrics, "lagsight_flink_job_bottleneck_busy_ratio",
                job_name=self.labels["job_name"])) if self.labels["job_name"] else frozenset()
        return Sighting(time.monotonic(), self._causes_in(metrics), None,
                        self._related_in(metrics), bottlenecks)

    def _run(self) -> None:
        while not self._stop.is_set():
            sighting = self._scrape_once()
            with self._changed:
                self._sightings.append(sighting)
                self._changed.notify_all()
            self._stop.wait(self.interval)

    def causes(self) -> set[str]:
        """The causes active for the pair right now (a fresh scrape)."""
        sighting = self._scrape_once()
        if sighting.error:
            raise AssertionError(f"scraping lagsight failed: {sighting.error}")
        return set(sighting.causes)

    def sightings(self, since: float | None = None) -> list[Sighting]:
        start = self.t0 if since is None else since
        with self._lock:
            return [s for s in self._sightings if s.at >= start]

    def bottlenecks_named(self, since: float | None = None) -> set[str]:
        """Every vertex lagsight named as the job's bottleneck since t0 (or ``since``)."""
        return {vertex for s in self.sightings(since) for vertex in s.bottlenecks}

    def seen(self, since: float | None = None) -> dict[str, float]:
        """Every cause seen since t0 (or ``since``) with its first sighting, seconds from then."""
        start = self.t0 if since is None else since
        first: dict[str, float] = {}
        for sighting in self.sightings(start):
            for cause in sighting.causes:
                first.setdefault(cause, round(sighting.at - start, 1))
        return first

    def longest_without_diagnosis(self, since: float | None = None) -> float:
        """The longest time since t0 (or ``since``) between a scrape that showed the pair no
        cause and the next one that showed one, seconds (to the last scrape if none did)."""
        longest = 0.0
        gone_at: float | None = None
        sightings = [s for s in self.sightings(since) if not s.error]
        for sighting in sightings:
            if not sighting.causes:
                gone_at = sighting.at if gone_at is None else gone_at
            elif gone_at is not None:
                longest = max(longest, sighting.at - gone_at)
                gone_at = None
        if gone_at is not None:
            longest = max(longest, sightings[-1].at - gone_at)
        return longest

    def false_causes(self, expected: str, allowed: frozenset[str] | set[str] = BASELINE_CAUSES,
                     since: float | None = None) -> list[str]:
        """Causes seen since t0 other than ``expected`` and the ``allowed`` ones, sorted."""
        return sorted(set(self.seen(since)) - {expected} - set(allowed))

    def history(self, since: float | None = None, separator: str = "\n") -> str:
        """The cause changes since t0: ``+3.5s: {healthy}`` lines (or joined by
        ``separator``), for failure messages and the results' notes."""
        start = self.t0 if since is None else since
        lines, last = [], None
        for sighting in self.sightings(start):
            state = sighting.error or "{" + ", ".join(sorted(sighting.causes)) + "}"
            if sighting.related:
                state += " (other pairs: " + ", ".join(sorted(sighting.related)) + ")"
            if state != last:
                lines.append(f"+{sighting.at - start:.1f}s: {state}")
                last = state
        return separator.join(lines) or "(no scrape yet)"

    def wait_for(self, cause: str, timeout: float, since: float | None = None) -> float:
        """Seconds from ``since`` (time.monotonic(); default t0) to the first scrape at or
        after it that shows ``cause``. Raises AssertionError with the causes seen instead."""
        start = self.t0 if since is None else since
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for sighting in self._sightings:
                    if sighting.at >= start and cause in sighting.causes:
                        return round(sighting.at - start, 1)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    break
                self._changed.wait(min(remaining, 1.0))
        raise AssertionError(
            f"lagsight_diagnosis{self.labels} never showed cause {cause!r} within {timeout} s; "
            f"causes seen (first sighting, s): {self.seen(start)}; history:\n"
            f"{self.history(start)}")

    def hold(self, duration: float) -> None:
        """Keeps watching for ``duration`` seconds (the caller then checks ``seen()``)."""
        end = time.monotonic() + duration
        while time.monotonic() < end:
            if not self._thread.is_alive():
                raise AssertionError("the diagnosis watch stopped")
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))


# ----------------------------------------------------------------------------------------------
# Result rows and the results file


@dataclass
class ScenarioRow:
    scenario: str
    cause: str
    detected: bool
    seconds: float | None
    false_causes: list[str]
    notes: str = ""
    test: str = ""               # node id of the test that produced the row
    outcome: str = "unknown"     # passed / failed (filled in at session end)
    date: str = ""
    commit: str = ""             # this repository's HEAD when the tests ran
    lagsight_revision: str = ""  # lagsight_build_info{revision} of the binary under test
    flink: str = ""              # Flink line of the scenario ("" for Kafka-only ones)


def _git_head() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def record(request: pytest.FixtureRequest, *, scenario: str, cause: str, detected: bool,
           seconds: float | None, false_causes: list[str], notes: str = "",
           flink: str = "", lagsight_revision: str | None = None) -> None:
    """Stores one scenario's result for the results file written at the end of the session.

    Record failed scenarios too (``detected=False``); the row also says whether its test passed.
    """
    rows = request.config.stash.setdefault(_ROWS, [])
    rows.append(ScenarioRow(
        scenario=scenario, cause=cause, detected=detected,
        seconds=None if seconds is None else round(seconds, 1),
        false_causes=sorted(false_causes), notes=notes, test=request.node.nodeid,
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        commit=_git_head(), lagsight_revision=lagsight_revision or "", flink=flink))


class ScenarioResult:
    """One scenario's pending result; recorded when its test ends, whatever the outcome.

    Set ``watch`` (a DiagnosisWatch whose t0 is the fault injection) and the row is filled from
    what it saw: detected = the expected cause was seen, seconds = its first sighting, false
    causes = causes other than the expected one and ``allowed``. ``notes`` is free text (how the
    fault was made, what the real systems showed).
    """

    def __init__(self, request: pytest.FixtureRequest, scenario: str, cause: str,
                 flink: str = "", allowed: frozenset[str] | set[str] = BASELINE_CAUSES) -> None:
        self.request = request
        self.scenario = scenario
        self.cause = cause
        self.flink = flink
        self.allowed = set(allowed)
        self.watch: DiagnosisWatch | None = None
        # False causes count from the watch's t0, or from this time.monotonic() when set (e.g.
        # the healthy scenario's first confirmation: before it the pair is still warming up).
        self.false_causes_since: float | None = None
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def finish(self) -> None:
        watch = self.watch
        seen = watch.seen() if watch else {}
        seconds = seen.get(self.cause)
        if watch:
            self.notes.append(f"exported causes after t0: {watch.history(separator=' → ')}")
        record(self.request, scenario=self.scenario, cause=self.cause,
               detected=seconds is not None, seconds=seconds,
               false_causes=(watch.false_causes(self.cause, self.allowed,
                                                self.false_causes_since) if watch else []),
               notes="; ".join(self.notes) or ("" if watch else "fault never injected"),
               flink=self.flink,
               lagsight_revision=watch.lagsight_revision if watch else None)
        if watch:
            watch.close()


@pytest.fixture
def diagnosis_results(request: pytest.FixtureRequest):
    """``diagnosis_results(scenario, cause, flink="2.x")`` -> ScenarioResult, recorded at
    teardown (so a failed test still leaves its row)."""
    results: list[ScenarioResult] = []

    def start(scenario: str, cause: str, flink: str = "",
              allowed: frozenset[str] | set[str] = BASELINE_CAUSES) -> ScenarioResult:
        result = ScenarioResult(request, scenario, cause, flink, allowed)
        results.append(result)
        return result

    yield start
    for result in results:
        result.finish()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Keeps a failed phase's report per test (else the first), for the outcome column."""
    outcome = yield
    report = outcome.get_result()
    reports = item.config.stash.setdefault(_REPORTS, {})
    if report.failed or item.nodeid not in reports:
        reports[item.nodeid] = report


ROUTINE_PREFIX = "routine: "


def _row_key(row: dict) -> str:
    """Cause scenarios are one row each; routine operations one row per Flink line."""
    if row["scenario"].startswith(ROUTINE_PREFIX):
        return f"{row['scenario']} @ {row.get('flink', '')}"
    return row["scenario"]


def _load_previous() -> dict[str, dict]:
    if not RESULTS_JSON.exists():
        return {}
    try:
        return {_row_key(row): row for row in json.loads(RESULTS_JSON.read_text())["rows"]}
    except (ValueError, KeyError, TypeError):  # empty (just created) or unreadable: start over
        return {}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: list[dict], written: str, commit: str, flink_lines: list[str]) -> str:
    lines = [
        "# Diagnosis scenarios: results",
        "",
        "Written by the test run (`tests/integration/scenario_report.py`), never by hand. Each row",
        "is one scenario on a real Kafka broker (and a real Flink MiniCluster where the Flink",
        "column names a line): the cause lagsight's `lagsight_diagnosis` should export for the",
        "scenario's job<->group pair, whether it did, how many seconds after the fault was",
        "injected it first showed, and any other alarm cause seen after the fault",
        "(`healthy` and `long_checkpoint_interval` are not alarms). Rows of scenarios not run in",
        "the latest session are kept from earlier runs; their date and commit say when.",
        "",
        f"Last written: {written}; repository commit {commit}; "
        f"Flink line(s) this session: {', '.join(flink_lines) or 'none'}.",
        "",
        "| scenario | expected cause | detected | seconds to detect | false causes seen | test "
        "| notes | run (date, commit, lagsight revision, Flink) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    routine = [row for row in rows if row["scenario"].startswith(ROUTINE_PREFIX)]
    for row in rows:
        if row in routine:
            continue
        seconds = "—" if row.get("seconds") is None else f"{row['seconds']:.1f}"
        falses = ", ".join(row.get("false_causes") or []) or "none"
        run = ", ".join(x for x in (row.get("date", ""), row.get("commit", ""),
                                    row.get("lagsight_revision", ""),
                                    row.get("flink") or "Kafka only") if x)
        lines.append(
            f"| {_cell(row['scenario'])} | `{row['cause']}` | "
            f"{'yes' if row['detected'] else 'no'} | {seconds} | {_cell(falses)} | "
            f"{row.get('outcome', '')} | {_cell(row.get('notes', ''))} | {_cell(run)} |")
    if routine:
        lines += [
            "",
            "## Routine operations",
            "",
            "What a Flink fleet does every day (tests/integration/test_routine_operations.py),",
            "on both Flink lines with Flink's defaults. The causes lagsight exported for the job",
            "after the operation, in order, with seconds since it; a false cause is any other",
            "than `healthy`, `long_checkpoint_interval` and the ones true for the operation. The",
            "target is 0 false causes.",
            "",
            "| operation | Flink | causes seen in order (s after the operation) | false causes "
            "| verdict | how it was done | run (date, commit) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in sorted(routine, key=lambda r: (r["scenario"], r.get("flink", ""))):
            notes = row.get("notes", "")
            marker = "exported causes after t0: "
            timeline = notes[notes.index(marker) + len(marker):] if marker in notes else "—"
            how = notes[:notes.index(marker)].rstrip("; ") if marker in notes else notes
            falses = row.get("false_causes") or []
            passed = row.get("outcome") == "passed"
            verdict = ("0 false causes" if passed and not falses
                       else f"{len(falses)} false" if falses else row.get("outcome", ""))
            lines.append(
                f"| {_cell(row['scenario'][len(ROUTINE_PREFIX):])} | {row.get('flink', '')} | "
                f"{_cell(timeline)} | {_cell(', '.join(falses) or 'none')} | {verdict} | "
                f"{_cell(how)} | {_cell(row.get('date', '') + ', ' + row.get('commit', ''))} |")
    return "\n".join(lines) + "\n"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rows: list[ScenarioRow] = session.config.stash.get(_ROWS, [])
    if not rows:
        return
    RESULTS_MD.parent.mkdir(parents=True, exist_ok=True)
    # Two test sessions (Kafka-only and Flink scenarios) may end at once: merge under a lock.
    with RESULTS_JSON.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _write_results(session, rows)


def _write_results(session: pytest.Session, rows: list[ScenarioRow]) -> None:
    reports = session.config.stash.get(_REPORTS, {})
    merged = _load_previous()
    for row in rows:
        report = reports.get(row.test)
        row.outcome = "unknown" if report is None else ("failed" if report.failed else "passed")
        merged[_row_key(asdict(row))] = asdict(row)
    written = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = _git_head()
    flink_lines = sorted({row.flink for row in rows if row.flink})
    ordered = list(merged.values())
    RESULTS_JSON.write_text(json.dumps({"written": written, "commit": commit,
                                        "rows": ordered}, indent=2) + "\n")
    RESULTS_MD.write_text(render_markdown(ordered, written, commit, flink_lines))
