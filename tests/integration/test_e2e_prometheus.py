"""End to end (issue 5): a real Prometheus scrapes lagsight, which polls a real Kafka broker and
a real Flink 2.x MiniCluster, and evaluates the SHIPPED rules file unchanged.

One module-scoped setup: two Flink jobs with steady production, so both have Kafka-side lag —
a healthy one, and one whose checkpoints start failing on demand (fail_checkpoints_file, with
enough tolerable failures that it keeps RUNNING) — plus a Kafka-only group that committed once
and left (no members: the offsets-expiry panel has something to show). Prometheus
(/usr/bin/prometheus, Debian 12) runs as a subprocess on a free loopback port with a 2 s scrape
and evaluation interval; the scrape job is named `lagsight`, as the rules' LagsightDown and
LagsightAbsent expect.

Checks, all through Prometheus's HTTP API:
- Prometheus loaded every rule of the shipped file and evaluates each without error;
- every query of the shipped dashboard returns data, with the template variables at "All" and
  at the concrete values of a repeated row (allow-list below: short, with a reason each);
- once the checkpoints fail, lagsight diagnoses checkpoints_failing for that job's pair, and
  LagsightCheckpointStaleLag (which reads that diagnosis) goes pending and then firing for it;
  no alert is ever pending or firing for the healthy job or its group (Prometheus's
  own ALERTS series, which it writes at every evaluation, is the record).

The rules' `for:` durations are what they are (LagsightCheckpointStaleLag: 2m), so the dashboard
checks run while the alert is pending. The module prints how long each phase took.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from kafka_broker import free_loopback_port
from processes import terminate
from workload import SteadyProducer, create_topic, make_empty_group, produce

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO_ROOT / "tests" / "deploy"))  # after tests/integration: its conftest wins
import promql_names  # noqa: E402  (the deploy checks' view of the rules and dashboard)
import test_dashboard as dashboard_checks  # noqa: E402

RULES_FILE = Path(promql_names.RULES)
DASHBOARD_FILE = Path(promql_names.DASHBOARD)
PROMETHEUS = "/usr/bin/prometheus"
SCRAPE_JOB = "lagsight"              # LagsightDown / LagsightAbsent read up{job="lagsight"}
INTERVAL_SECONDS = 2                 # scrape and rule evaluation
FLINK_LINE = "2.x"
FLINK_CLUSTER = "mini"
STALE_ALERT = "LagsightCheckpointStaleLag"
STALE_ALERT_FOR_SECONDS = 120        # its `for:` in the rules file (checked below)
# The stale alert needs lagsight's diagnosis checkpoints_failing: the newest completed checkpoint
# older than 3 expected gaps + 5 s (the healthy job, every 4 s: 17 s, which a loaded machine does
# not produce by accident), or 2 gaps + 5 s with failures in the window (the failing job, every
# 3 s: 11 s after the failures start, then 2 polls to confirm). Both intervals are at least two
# of lagsight's 1 s polls (with room for a late poll), so their sawtooth period can be measured.
HEALTHY_CHECKPOINT_MS = 4000
FAILING_CHECKPOINT_MS = 3000
RATE = 10                            # records per second into each job's topic
SETUP_TIMEOUT = 180.0                # generous: the machine is shared with builds and tests
DATA_TIMEOUT = 120.0

PREFIX = f"e2e-{uuid.uuid4().hex[:6]}"
HEALTHY = f"{PREFIX}-healthy"        # topic, group and job name
FAILING = f"{PREFIX}-failing"
KAFKA_ONLY = f"{PREFIX}-kafka-only"  # a classic group that committed once and left

# Panel queries that legitimately return nothing here: (panel title, refId, view) -> why.
# A view is "all" (every variable at All) or the group/job of a repeated row.
NO_DATA_ALLOWED = {
    ("Checkpoint sawtooth", "B", KAFKA_ONLY):
        "sawtooth period needs three regular commits; this Kafka-only group committed once",
    ("Checkpoint sawtooth", "C", KAFKA_ONLY):
        "sawtooth amplitude needs three regular commits; this Kafka-only group committed once",
    # A job's bottleneck and the parallelism that catches it up are read only for jobs that are
    # behind, and neither job here is (test_routine_operations' backpressure operation and
    # test_bottleneck have them on real Flink).
    **{("What holds the job back", ref, view): "only for a job that is behind; none is here"
       for ref in "ABCDEF" for view in ("all", HEALTHY, FAILING)},
    # Members are those of classic groups; here every group is a Flink job's (no members) or a
    # classic group that left (test_group_owners has them against Kafka's tool).
    **{("Who holds the partitions", ref, view): "no group here has members"
       for ref in "ABC" for view in ("all", HEALTHY, FAILING, KAFKA_ONLY)},
}


# ----------------------------------------------------------------------------------------------
# Prometheus


class Prometheus:
    """/usr/bin/prometheus with its own config, storage directory, port and log."""

    def __init__(self, work_dir: Path, target: str) -> None:
        self.work_dir = work_dir
        self.port = free_loopback_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_file = work_dir / "prometheus.yml"
        self.log_file = work_dir / "prometheus.log"
        self.config = {
            "global": {"scrape_interval": f"{INTERVAL_SECONDS}s",
                       "scrape_timeout": f"{INTERVAL_SECONDS}s",
                       "evaluation_interval": f"{INTERVAL_SECONDS}s"},
            "rule_files": [str(RULES_FILE)],
            "scrape_configs": [{"job_name": SCRAPE_JOB,
                                "static_configs": [{"targets": [target]}]}],
        }
        self._process: subprocess.Popen | None = None

    def start(self) -> Prometheus:
        self.config_file.write_text(yaml.safe_dump(self.config, sort_keys=False))
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                [PROMETHEUS, f"--config.file={self.config_file}",
                 f"--storage.tsdb.path={self.work_dir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=info"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: self._running_or_fail() and self._ready(), 60,
                   "Prometheus to answer /-/ready")
        return self

    def _running_or_fail(self) -> bool:
        if self._process.poll() is not None:
            raise AssertionError(f"prometheus exited with {self._process.returncode}; "
                                 f"see {self.log_file}")
        return True

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def api(self, path: str, **params: str) -> object:
        """GET /api/v1/<path>; returns `data` of a successful answer, raises on an error."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}",
                                        timeout=20) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"/api/v1/{path} {params}: HTTP {error.code}: "
                                 f"{error.read().decode(errors='replace')}") from None
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """Instant query at now: the vector's samples (a scalar comes back as one sample)."""
        data = self.api("query", query=expr)
        if data["resultType"] == "vector":
            return data["result"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        raise AssertionError(f"{expr}: unexpected result type {data['resultType']}")

    def alerts(self) -> list[dict]:
        return self.api("alerts")["alerts"]

    def stop(self) -> None:
        terminate(self._process, 30)


# ----------------------------------------------------------------------------------------------
# The module's systems


@dataclass
class Env:
    flink: FlinkJob
    lagsight: LagsightProcess
    prometheus: Prometheus
    fail_file: Path
    started: float                     # wall clock, module start
    prometheus_started: float          # wall clock
    failures_on: float = 0.0           # wall clock, when checkpoint failures were switched on
    phases: dict[str, float] = field(default_factory=dict)   # phase -> seconds

    def jid(self, job: str) -> str:
        return self.flink.jobs[job]


def lagsight_config(bootstrap: str, rest_url: str) -> dict:
    """Both sides polled every second; the diagnosis at its defaults (window 5m), with a
    lateness target for every job (the dashboard draws it; an hour: it never pages here)."""
    return {
        "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
                   "request_timeout": "5s",
                   "groups": {"allow": [f"{PREFIX}-.*"]},
                   "topics": {"allow": [f"{PREFIX}-.*"]}}],
        "flink": [{"name": FLINK_CLUSTER, "rest_url": rest_url, "kafka_cluster": CLUSTER,
                   "poll_interval": "1s", "request_timeout": "5s"}],
        "diagnosis": {"lateness_targets": [{"job": ".*", "target": "1h"}]},
    }


def series_count(prometheus: Prometheus, expr: str) -> int:
    return len(prometheus.query(expr))


@pytest.fixture(scope="module")
def env(session_broker, lagsight_binary, tmp_path_factory) -> Iterator[Env]:
    started_monotonic = time.monotonic()
    started = time.time()
    bootstrap = session_broker.bootstrap
    work_dir = tmp_path_factory.mktemp("e2e-prometheus")
    fail_file = work_dir / "failing.fail"
    producers: list[SteadyProducer] = []
    flink = lagsight = prometheus = None
    code = 0
    try:
        for topic in (HEALTHY, FAILING):
            create_topic(bootstrap, topic, 1)
            producers.append(SteadyProducer(bootstrap, topic, 1, RATE))
        create_topic(bootstrap, KAFKA_ONLY, 1)
        produce(bootstrap, KAFKA_ONLY, [50])
        make_empty_group(bootstrap, KAFKA_ONLY, [KAFKA_ONLY], commit_at=20)

        flink = FlinkJob(FLINK_LINE, [
            JobSpec(HEALTHY, [HEALTHY], group=HEALTHY, checkpoint_ms=HEALTHY_CHECKPOINT_MS),
            JobSpec(FAILING, [FAILING], group=FAILING, checkpoint_ms=FAILING_CHECKPOINT_MS,
                    fail_checkpoints_file=fail_file, tolerable_failures=100_000),
        ], work_dir / "flink", bootstrap=bootstrap, slots=4, heap="1g")
        flink.start(timeout=SETUP_TIMEOUT)
        (work_dir / "lagsight").mkdir()
        lagsight = LagsightProcess(lagsight_binary, work_dir / "lagsight",
                                   lagsight_config(bootstrap, flink.rest_url))
        lagsight.start()
        (work_dir / "prometheus").mkdir()
        prometheus = Prometheus(work_dir / "prometheus", f"127.0.0.1:{lagsight.port}")
        prometheus_started = time.time()
        prometheus.start()
        env = Env(flink, lagsight, prometheus, fail_file, started, prometheus_started)
        env.phases["systems up"] = time.monotonic() - started_monotonic

        # Baseline, seen through Prometheus: each job is paired with its group, and each Flink
        # group showed lagsight three regular commits (sawtooth period known), so the dashboard's
        # group panels have their data before the failing job stops committing.
        wait_until(lambda: series_count(
            prometheus, f'lagsight_flink_job_group_info{{job_name=~"{HEALTHY}|{FAILING}"}}') == 2,
            SETUP_TIMEOUT, "Prometheus to see both jobs paired with their groups", interval=1)
        wait_until(lambda: series_count(
            prometheus,
            f'lagsight_kafka_group_sawtooth_period_seconds{{group=~"{HEALTHY}|{FAILING}"}}') == 2,
            SETUP_TIMEOUT, "Prometheus to see a sawtooth period for both Flink groups",
            interval=1)
        env.phases["baseline"] = time.monotonic() - started_monotonic - env.phases["systems up"]
        early = [a for a in prometheus.alerts() if a["labels"].get("alertname") == STALE_ALERT]
        assert not early, f"checkpoint-stale alert active before any checkpoint failed: {early}"

        fail_file.write_text("fail")
        env.failures_on = time.time()
        yield env
    finally:
        if lagsight is not None:
            code = lagsight.stop()
        if prometheus is not None:
            prometheus.stop()
        if flink is not None:
            flink.stop()
        for producer in producers:
            producer.stop()
        print(f"\n[e2e-prometheus] module took {time.monotonic() - started_monotonic:.0f} s")
        assert code in (0, None), f"lagsight exited with {code} on SIGTERM (see its log)"


@pytest.fixture(autouse=True)
def logs_on_failure(request, env, session_broker) -> None:
    _register_log_for_failures(request, "lagsight log", env.lagsight.log_file)
    _register_log_for_failures(request, "prometheus log", env.prometheus.log_file)
    _register_log_for_failures(request, "flink log", env.flink.log_file)
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)


# ----------------------------------------------------------------------------------------------
# Dashboard queries


GRAFANA_REGEX_SPECIAL = re.compile(r"[$^*+?.()|\\{}\[\]]")


def fill(expr: str, values: dict[str, str]) -> str:
    """The query as Grafana sends it: each variable at its value in ``values`` or at "All"
    (`.*`). Grafana escapes regex characters of a selected value with a backslash, written
    doubled inside the PromQL string."""
    def value(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            return ".*"
        return GRAFANA_REGEX_SPECIAL.sub(lambda c: "\\\\" + c.group(0), values[name])
    return dashboard_checks.VARIABLE_REF.sub(value, expr)


def panel_targets(dashboard: dict) -> list[tuple[str, str, str, str | None]]:
    """(panel title, refId, expr, repeat variable of the row it sits in) for every target."""
    targets = []
    repeat = None
    for panel in dashboard["panels"]:          # rows and their panels, in layout order
        if panel["type"] == "row":
            repeat = panel.get("repeat")
            nested = panel.get("panels", [])   # a collapsed row holds its panels
        else:
            nested = [panel]
        for inner in dashboard_checks.all_panels(nested):
            for target in inner.get("targets", []):
                targets.append((inner["title"], target["refId"], target["expr"], repeat))
    return targets


def views() -> list[tuple[str, dict[str, str], str | None]]:
    """(view name, variable values, the row repeat it concerns; None = every panel)."""
    out = [("all", {}, None)]
    for job in (HEALTHY, FAILING):
        out.append((job, {"kafka_cluster": CLUSTER, "flink_cluster": FLINK_CLUSTER,
                          "job_name": job, "group": job}, "job_name"))
    for group in (HEALTHY, FAILING, KAFKA_ONLY):
        out.append((group, {"kafka_cluster": CLUSTER, "group": group}, "group"))
    return out


# ----------------------------------------------------------------------------------------------
# Tests


def test_prometheus_loaded_the_shipped_rules(env):
    with RULES_FILE.open() as f:
        shipped = yaml.safe_load(f)
    shipped_names = [rule.get("alert") or rule.get("record")
                     for group in shipped["groups"] for rule in group["rules"]]
    stale = [rule for group in shipped["groups"] for rule in group["rules"]
             if rule.get("alert") == STALE_ALERT]
    assert len(stale) == 1 and stale[0]["for"] == f"{STALE_ALERT_FOR_SECONDS // 60}m", (
        f"{STALE_ALERT}'s for: changed; adjust STALE_ALERT_FOR_SECONDS and the test's timing")

    # Every rule has been evaluated at least twice before its health counts.
    def evaluated() -> list[dict] | None:
        groups = env.prometheus.api("rules")["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        return groups if rules and all(r["health"] != "unknown" for r in rules) else None
    groups = wait_until(evaluated, 60, "every rule to be evaluated", interval=1)
    assert [g["file"] for g in groups] == [str(RULES_FILE)] * len(shipped["groups"])
    loaded = [rule["name"] for group in groups for rule in group["rules"]]
    assert loaded == shipped_names
    unhealthy = {rule["name"]: (rule["health"], rule.get("lastError"))
                 for group in groups for rule in group["rules"]
                 if rule["health"] != "ok" or rule.get("lastError")}
    assert unhealthy == {}
    # And the scrape itself is the one the rules assume.
    targets = env.prometheus.api("targets")["activeTargets"]
    assert [(t["labels"]["job"], t["health"]) for t in targets] == [(SCRAPE_JOB, "up")], targets


def test_every_dashboard_query_returns_data(env):
    with DASHBOARD_FILE.open() as f:
        dashboard = json.load(f)
    targets = panel_targets(dashboard)
    assert len(targets) == len([q for q in dashboard_checks.dashboard_queries(dashboard)
                                if q[0].startswith("panel")]), "every target is checked"
    variables = [(v["name"], re.fullmatch(r"label_values\((.*),\s*(\w+)\)", v["definition"]))
                 for v in dashboard["templating"]["list"] if v["type"] == "query"]

    checks: list[tuple[tuple[str, str, str], str]] = []   # ((title, refId, view), query)
    for view, values, row in views():
        for title, ref, expr, repeat in targets:
            if row is None or repeat == row:
                checks.append(((title, ref, view), fill(expr, values)))
    for name, match in variables:
        checks.append(((f"variable {name}", "-", "all"), fill(match.group(1), {})))

    # Some series need a few polls (increase() two samples, the sawtooth three commits): wait
    # until every check that must have data has it, then read the remaining ones once more.
    def returns_data(query: str) -> bool:
        return bool(env.prometheus.query(query))
    pending = {key: query for key, query in checks if key not in NO_DATA_ALLOWED}
    deadline = time.monotonic() + DATA_TIMEOUT
    while pending and time.monotonic() < deadline:
        pending = {key: query for key, query in pending.items() if not returns_data(query)}
        if pending:
            time.sleep(INTERVAL_SECONDS)
    assert pending == {}, "panel queries without data:\n" + "\n".join(
        f"  {key}: {query}" for key, query in pending.items())

    stale_entries = {key: query for key, query in checks
                     if key in NO_DATA_ALLOWED and returns_data(query)}
    assert stale_entries == {}, f"allow-listed queries that have data now: {stale_entries}"
    assert {key for key, _ in checks} >= set(NO_DATA_ALLOWED), "allow-list names no real query"

    # The diagnosis table at "All" lists the Kafka-only group too (job_name="" matches `.*`).
    # A job's row appears once lagsight paired it with its group, after its first commit: the
    # panel checks above can all be met by then (CI once read this 14 s after lagsight started,
    # before either job had committed), so it is waited for like them.
    diagnosis = next(expr for title, ref, expr, _ in targets if title == "Diagnosis" and ref == "A")
    expected = {(HEALTHY, HEALTHY), (FAILING, FAILING), (KAFKA_ONLY, "")}
    rows: list = []

    def diagnosis_rows() -> bool:
        rows[:] = env.prometheus.query(fill(diagnosis, {}))
        return {(r["metric"].get("group", ""), r["metric"].get("job_name", ""))
                for r in rows} >= expected
    try:
        wait_until(diagnosis_rows, DATA_TIMEOUT, "the diagnosis table to list every pair",
                   interval=INTERVAL_SECONDS)
    except AssertionError as error:
        raise AssertionError(f"{error}: {rows}") from None
    print(f"\n[e2e-prometheus] {len(checks)} dashboard queries checked "
          f"({len(NO_DATA_ALLOWED)} allow-listed without data)")


def test_checkpoint_stale_alert_fires_for_the_failing_job_only(env):
    prometheus, flink = env.prometheus, env.flink
    # Ground truth from Flink's REST API: checkpoints of the failing job fail, the job runs on.
    failing_jid = env.jid(FAILING)
    status, before = flink.checkpoints(failing_jid)
    assert status == 200, before
    wait_until(lambda: flink.checkpoints(failing_jid)[1]["counts"]["failed"]
               >= before["counts"]["failed"] + 2, 60, "two more failed checkpoints", interval=1)
    assert flink.job_overview(failing_jid)["state"] == "RUNNING"

    def stale_alert(state: str) -> dict | None:
        for alert in prometheus.alerts():
            labels = alert["labels"]
            if (labels.get("alertname") == STALE_ALERT and labels.get("job_name") == FAILING
                    and alert["state"] == state):
                return alert
        return None

    pending = wait_until(lambda: stale_alert("pending") or stale_alert("firing"), 90,
                         f"{STALE_ALERT} to go pending for {FAILING}", interval=1)
    pending_seen = time.time()
    firing = wait_until(lambda: stale_alert("firing"), STALE_ALERT_FOR_SECONDS + 90,
                        f"{STALE_ALERT} to fire for {FAILING}", interval=1)
    fired_seen = time.time()
    env.phases["failures on -> pending"] = pending_seen - env.failures_on
    env.phases["failures on -> firing"] = fired_seen - env.failures_on

    labels = firing["labels"]
    assert labels["severity"] == "critical"
    assert (labels["kafka_cluster"], labels["group"], labels["job_id"]) == (
        CLUSTER, FAILING, failing_jid), labels
    assert labels["job"] == SCRAPE_JOB
    assert float(firing["value"]) > 3, firing       # the age ratio the alert reports
    # The alert reads the diagnosis, so lagsight's verdict for the pair is checkpoints_failing.
    assert prometheus.query(
        f'lagsight_diagnosis{{job_name="{FAILING}",group="{FAILING}",cause="checkpoints_failing"}}'
        ' == 1'), "lagsight's diagnosis of the failing pair is not checkpoints_failing"
    assert "#runbook-checkpoint_stale_lag" in firing["annotations"]["runbook_url"]
    active_at = parse_rfc3339(pending["activeAt"])
    assert active_at >= env.failures_on - INTERVAL_SECONDS, (
        f"{STALE_ALERT} was active at {pending['activeAt']}, before checkpoints failed")
    assert fired_seen - active_at >= STALE_ALERT_FOR_SECONDS - INTERVAL_SECONDS

    # Silence for the healthy job, at every evaluation since Prometheus started: Prometheus
    # writes ALERTS{alertstate="pending"|"firing"} for each active alert at each evaluation.
    since = math.ceil(time.time() - env.prometheus_started) + 10
    healthy_alerts = prometheus.query(
        f'count_over_time(ALERTS{{job_name="{HEALTHY}"}}[{since}s])'
        f' or count_over_time(ALERTS{{group="{HEALTHY}"}}[{since}s])')
    assert healthy_alerts == [], f"alerts for the healthy job or its group: {healthy_alerts}"
    # ... which is not for want of data: its pair has an age ratio and its group had Kafka-side
    # lag (the sawtooth) during the test, so the alert's expression did see the healthy job.
    assert prometheus.query(
        f'flink_job_group:lagsight_flink_checkpoint_age_ratio:max{{job_name="{HEALTHY}"}}')
    assert prometheus.query(
        f'max_over_time(kafka_cluster_group:lagsight_kafka_group_lag_records:sum'
        f'{{group="{HEALTHY}"}}[{since}s]) > 0')
    # And the failing job's alert is in ALERTS too, so that query is the right one.
    assert prometheus.query(
        f'count_over_time(ALERTS{{alertname="{STALE_ALERT}",job_name="{FAILING}"}}[{since}s])')

    others = sorted({(a["labels"]["alertname"], a["labels"].get("job_name", ""), a["state"])
                     for a in prometheus.alerts()})
    total = time.time() - env.started
    print(f"\n[e2e-prometheus] phases: " + ", ".join(
        f"{name} {seconds:.0f} s" for name, seconds in env.phases.items())
          + f"; total so far {total:.0f} s; active alerts now: {others}")


def parse_rfc3339(text: str) -> float:
    """Prometheus's activeAt (e.g. 2026-11-30T19:58:01.123456789Z) as Unix time."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", text)
    assert match, text
    whole = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return whole.timestamp() + float(f"0.{match.group(2) or 0}")
