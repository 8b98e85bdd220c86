#!/usr/bin/env python3
"""A real Flink cluster (in-process MiniCluster) running KafkaSource jobs, for tests and demos.

The JVM runs ``dev.lagsight.harness.KafkaLagJob`` (tests/harness/flink/), built against Flink 1.20
or Flink 2.x by ``tests/harness/flink/build.sh``. Its REST endpoint listens on 127.0.0.1 and is
the same REST API a production JobManager serves, so tests read the ground truth from it.

As a module::

    with FlinkJob("1.20", jobs=[JobSpec("orders", ["orders.v2"], group="orders-g",
                                        parallelism=2, checkpoint_ms=1000)],
                  bootstrap=broker.bootstrap, work_dir=tmp) as flink:
        jid = flink.jobs["orders"]
        flink.wait_for_completed_checkpoints(jid, 3)
        status, body = flink.rest_get(f"/jobs/{jid}/checkpoints")
        jid2 = flink.submit(JobSpec("orders", ["orders.v2"], restore=savepoint))  # a later job

As a CLI (foreground; prints ``rest=...`` and ``job name=... jid=...``; SIGTERM/SIGINT stop it)::

    python3 tests/harness/flink_job.py build [--version 1.20|2.x]
    python3 tests/harness/flink_job.py run --version 2.x --bootstrap 127.0.0.1:9092 \\
        --rest-port 8081 --job name=orders,topic=orders.v2,group=g,parallelism=2
"""

from __future__ import annotations

import argparse
import ctypes
import json
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from processes import terminate

HARNESS_DIR = Path(__file__).resolve().parent
FLINK_DIR = HARNESS_DIR / "flink"
BUILD_SCRIPT = FLINK_DIR / "build.sh"
MAIN_CLASS = "dev.lagsight.harness.KafkaLagJob"
VERSIONS = ("1.20", "2.x")

# What Flink's own launch scripts pass on Java 17: Kryo and the RPC layer reflect into these.
JAVA17_OPENS = [
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
]

REST_TIMEOUT_SECONDS = 10.0


def build(version: str | None = None) -> None:
    """Builds the job for one Flink line (or both); a no-op when nothing changed."""
    args = [str(BUILD_SCRIPT)] + ([version] if version else [])
    result = subprocess.run(args, capture_output=True, text=True, timeout=1200, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT} failed (exit {result.returncode}):\n"
                           f"{result.stdout}\n{result.stderr}")


def classpath(version: str) -> str:
    out = FLINK_DIR / "target" / version
    return f"{out / 'classes'}:{(out / 'classpath.txt').read_text().strip()}"


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM the JVM when the thread that started it dies."""
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@dataclass
class JobSpec:
    """One streaming job: KafkaSource -> map (delay) -> discarding sink. See KafkaLagJob.java.

    ``checkpoint_ms=0`` disables checkpointing; ``group=None`` sets no group.id (then the
    connector commits nothing). Operator names default to ``<name>-source``/``-map``/``-sink``.
    """
    name: str
    topics: list[str]
    group: str | None = None
    start: str = "committed"          # committed (else earliest) | earliest | latest
    commit: bool = True               # commit.offsets.on.checkpoint
    checkpoint_ms: int = 1000
    parallelism: int = 1
    delay_us: int = 0
    delay_file: Path | None = None    # while it exists, its integer content is the delay
    fail_checkpoints_file: Path | None = None  # while it exists, checkpoints fail
    fail_records_file: Path | None = None  # while it exists, every record fails: a restart loop
    fail_once_file: Path | None = None  # when it appears, one record fails: a single failover
    min_pause_ms: int | None = None   # execution.checkpointing.min-pause
    tolerable_failures: int | None = None
    source: str | None = None
    map: str | None = None
    sink: str | None = None
    bootstrap: str | None = None
    restore: str | None = None        # savepoint or retained checkpoint path
    allow_non_restored: bool = False
    discovery_ms: int | None = None
    watermarks: str = "monotonous"    # monotonous | none
    chain: bool = False
    connector: str = "source"         # source (KafkaSource) | legacy (FlinkKafkaConsumer, 1.20 only)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def source_name(self) -> str:
        return self.source or f"{self.name}-source"

    def to_arg(self) -> str:
        items = [("name", self.name)] + [("topic", t) for t in self.topics]
        optional = {
            "group": self.group, "start": self.start, "commit": str(self.commit).lower(),
            "checkpoint": self.checkpoint_ms, "parallelism": self.parallelism,
            "delay-us": self.delay_us, "delay-file": self.delay_file,
            "fail-checkpoints-file": self.fail_checkpoints_file,
            "fail-records-file": self.fail_records_file, "fail-once-file": self.fail_once_file,
            "min-pause": self.min_pause_ms,
            "tolerable-failures": self.tolerable_failures, "source": self.source,
            "map": self.map, "sink": self.sink,
            # Several addresses travel joined by '|' (the spec separates items by ',').
            "bootstrap": self.bootstrap.replace(",", "|") if self.bootstrap else None,
            "restore": self.restore,
            "allow-non-restored": "true" if self.allow_non_restored else None,
            "discovery-ms": self.discovery_ms, "watermarks": self.watermarks,
            "chain": str(self.chain).lower(),
            "connector": None if self.connector == "source" else self.connector,
        }
        items += [(k, v) for k, v in optional.items() if v is not None]
        items += list(self.extra.items())
        for key, value in items:
            if "," in str(value):
                raise ValueError(f"job {self.name}: {key}={value!r} must not contain ','")
        return ",".join(f"{key}={value}" for key, value in items)


class FlinkStartError(RuntimeError):
    """The JVM or a job did not come up in time; the message carries the log tail."""


class FlinkJob:
    """One JVM: a MiniCluster with its REST endpoint on 127.0.0.1, running ``jobs``."""

    def __init__(self, version: str, jobs: list[JobSpec], work_dir: Path | None = None, *,
                 bootstrap: str | None = None, rest_port: int | None = None,
                 savepoint_dir: Path | None = None, checkpoint_dir: Path | None = None,
                 slots: int | None = None, heap: str = "768m",
                 conf: dict[str, str] | None = None,
                 extra_args: list[str] | None = None,
                 extra_jvm_args: list[str] | None = None) -> None:
        if version not in VERSIONS:
            raise ValueError(f"Flink version must be one of {VERSIONS}, not {version!r}")
        self.version = version
        self.job_specs = list(jobs)
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix=f"flink-{version}-")).resolve()
        self.bootstrap = bootstrap
        self.rest_port = rest_port
        self.savepoint_dir = savepoint_dir
        self.checkpoint_dir = checkpoint_dir
        self.slots = slots
        self.heap = heap
        self.conf = dict(conf or {})
        self.extra_args = list(extra_args or [])
        self.extra_jvm_args = list(extra_jvm_args or [])
        self.log_file = self.work_dir / f"flink-{version}.log"
        self.rest_url: str | None = None
        self.jobs: dict[str, str] = {}      # job name -> job id
        self._process: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    # -- lifecycle -------------------------------------------------------------------------

    def command(self) -> list[str]:
        args = ["--rest-port", str(self.rest_port or 0)]
        if self.bootstrap:
            args += ["--bootstrap", self.bootstrap]
        if self.savepoint_dir:
            args += ["--savepoint-dir", str(Path(self.savepoint_dir).resolve())]
        if self.checkpoint_dir:
            args += ["--checkpoint-dir", str(Path(self.checkpoint_dir).resolve())]
        if self.slots:
            args += ["--slots", str(self.slots)]
        for key, value in self.conf.items():
            args += ["--conf", f"{key}={value}"]
        for spec in self.job_specs:
            args += ["--job", spec.to_arg()]
        tmp = self.work_dir / "tmp"
        return ["java", f"-Xmx{self.heap}", "-XX:+UseSerialGC", f"-Djava.io.tmpdir={tmp}",
                *JAVA17_OPENS, *self.extra_jvm_args, "-cp", classpath(self.version),
                MAIN_CLASS, *args, *self.extra_args]

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 180.0, wait_tasks_running: bool = True) -> FlinkJob:
        """Builds if needed, starts the JVM, returns once every job is RUNNING.

        With ``wait_tasks_running`` it also waits until every task of every job runs (the
        source readers then exist and register their metrics). Raises FlinkStartError with
        the log tail on exit or deadline.
        """
        if self.running:
            raise RuntimeError("Flink is already running")
        build(self.version)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "tmp").mkdir(exist_ok=True)
        deadline = time.monotonic() + timeout
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                cwd=self.work_dir, text=True, start_new_session=True,
                preexec_fn=_die_with_parent)
        self._lines = queue.Queue()
        threading.Thread(target=self._pump_stdout, args=(self._process, self._lines),
                         daemon=True, name="flink-stdout").start()
        try:
            self._read_announcements(deadline)
            for name, jid in self.jobs.items():
                self.wait_for_state(jid, ("RUNNING",), max(0.0, deadline - time.monotonic()),
                                    tasks_running=wait_tasks_running)
        except BaseException:
            self.stop()
            raise
        return self

    def _pump_stdout(self, process: subprocess.Popen, lines: queue.Queue) -> None:
        assert process.stdout is not None
        with self.log_file.open("a") as log:
            for line in process.stdout:
                log.write(f"[stdout] {line}")
                log.flush()
                lines.put(line.rstrip("\n"))
        lines.put(None)

    def _read_announcements(self, deadline: float) -> None:
        self.jobs = {}
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FlinkStartError(f"Flink {self.version} not ready before the deadline; "
                                      f"log {self.log_file}:\n{self.log_tail()}")
            try:
                line = self._lines.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if line is None:
                raise FlinkStartError(
                    f"Flink {self.version} exited with {self._process.wait()} while starting; "
                    f"log {self.log_file}:\n{self.log_tail()}")
            if line.startswith("rest="):
                self.rest_url = line[len("rest="):]
            elif line.startswith("job "):
                fields = dict(item.split("=", 1) for item in line.split()[1:])
                self.jobs[fields["name"]] = fields["jid"]
            elif line == "ready":
                return

    def submit(self, spec: JobSpec, timeout: float = 120.0,
               wait_tasks_running: bool = True) -> str:
        """Submits one more job to the running cluster; returns its id once it is RUNNING.

        A job submitted under the name of an earlier one (a restore) replaces it in ``jobs``.
        """
        if not self.running or self._process.stdin is None:
            raise RuntimeError("Flink is not running")
        deadline = time.monotonic() + timeout
        self._process.stdin.write(f"submit {spec.to_arg()}\n")
        self._process.stdin.flush()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FlinkStartError(f"no answer to the submission of {spec.name} within "
                                      f"{timeout} s; log {self.log_file}:\n{self.log_tail()}")
            try:
                line = self._lines.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if line is None:
                raise FlinkStartError(f"Flink exited while submitting {spec.name}; log "
                                      f"{self.log_file}:\n{self.log_tail()}")
            fields = line.split()
            if line.startswith("error ") and f"name={spec.name}" in fields[1:2]:
                raise FlinkStartError(f"submitting {spec.name} failed: {line}")
            if line.startswith("job ") and f"name={spec.name}" in fields[1:2]:
                jid = dict(item.split("=", 1) for item in fields[1:])["jid"]
                break
        self.jobs[spec.name] = jid
        self.job_specs.append(spec)
        self.wait_for_state(jid, ("RUNNING",), max(1.0, deadline - time.monotonic()),
                            tasks_running=wait_tasks_running)
        return jid

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM (the JVM closes the MiniCluster and exits); SIGKILL after ``timeout``."""
        terminate(self._process, timeout)
        self._process = None

    def log_tail(self, lines: int = 80) -> str:
        if not self.log_file.exists():
            return "(no Flink log)"
        return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> FlinkJob:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- REST ------------------------------------------------------------------------------

    def rest_request(self, method: str, path: str, body: Any = None,
                     timeout: float = REST_TIMEOUT_SECONDS) -> tuple[int, Any]:
        """One REST call; returns (HTTP status, parsed JSON or the raw text if not JSON)."""
        if self.rest_url is None:
            raise RuntimeError("Flink is not started")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.rest_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        text = raw.decode(errors="replace")
        try:
            return status, json.loads(text) if text else None
        except json.JSONDecodeError:
            return status, text

    def rest_get(self, path: str, timeout: float = REST_TIMEOUT_SECONDS) -> tuple[int, Any]:
        return self.rest_request("GET", path, timeout=timeout)

    def _get_ok(self, path: str) -> Any:
        status, body = self.rest_get(path)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {body}")
        return body

    def job_overview(self, jid: str) -> dict | None:
        for job in self._get_ok("/jobs/overview")["jobs"]:
            if job["jid"] == jid:
                return job
        return None

    def wait_for_state(self, jid: str, states: tuple[str, ...] = ("RUNNING",),
                       timeout: float = 60.0, tasks_running: bool = False) -> dict:
        """Polls /jobs/overview until the job is in one of ``states``; returns its entry."""
        deadline = time.monotonic() + timeout
        job = None
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise FlinkStartError(f"Flink {self.version} exited with {self._process.poll()}"
                                      f"; log {self.log_file}:\n{self.log_tail()}")
            try:
                job = self.job_overview(jid)
            except (OSError, RuntimeError):
                job = None
            if job is not None and job["state"] in states:
                tasks = job.get("tasks", {})
                if not tasks_running or tasks.get("running") == tasks.get("total"):
                    return job
            if time.monotonic() > deadline:
                raise FlinkStartError(
                    f"job {jid} not in {states} (tasks running) within {timeout} s, last seen "
                    f"{json.dumps(job)}; log {self.log_file}:\n{self.log_tail()}")
            time.sleep(0.2)

    def checkpoints(self, jid: str) -> tuple[int, Any]:
        return self.rest_get(f"/jobs/{jid}/checkpoints")

    def wait_for_completed_checkpoints(self, jid: str, n: int, timeout: float = 60.0) -> dict:
        """Waits until at least ``n`` checkpoints completed (counts.completed); returns the
        /checkpoints body. Note the REST statistics cache (500 ms here)."""
        deadline = time.monotonic() + timeout
        body = None
        while True:
            status, body = self.checkpoints(jid)
            if status == 200 and body["counts"]["completed"] >= n:
                return body
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {jid}: fewer than {n} completed checkpoints within "
                                   f"{timeout} s; last {status} {json.dumps(body)[:2000]}")
            time.sleep(0.25)

    def vertex_id(self, jid: str, name_contains: str) -> str:
        """The id of the job's first vertex whose name contains ``name_contains``."""
        for vertex in self._get_ok(f"/jobs/{jid}")["vertices"]:
            if name_contains in vertex["name"]:
                return vertex["id"]
        raise KeyError(f"job {jid} has no vertex named like {name_contains!r}")

    def vertex_metrics(self, jid: str, vid: str, ids: list[str] | None = None) -> list[dict]:
        """/jobs/:jid/vertices/:vid/metrics: the list of ids, or their values (``get``)."""
        path = f"/jobs/{jid}/vertices/{vid}/metrics"
        if ids:
            path += "?get=" + ",".join(urllib.request.quote(i, safe="") for i in ids)
        return self._get_ok(path)

    def source_vertex_id(self, jid: str, timeout: float = 30.0) -> str:
        """The source vertex's id. Right after a submission Flink 2.x's REST can answer
        /jobs/:jid without the vertex for a moment (seen under load), so this retries."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.vertex_id(jid, "Source")
            except KeyError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.5)

    def source_commit_counters(self, jid: str) -> dict[str, float]:
        """The KafkaSourceReader's commitsSucceeded / commitsFailed, summed over subtasks."""
        vid = self.source_vertex_id(jid)
        ids = [m["id"] for m in self.vertex_metrics(jid, vid)
               if m["id"].endswith((".KafkaSourceReader.commitsSucceeded",
                                    ".KafkaSourceReader.commitsFailed"))]
        totals = {"commitsSucceeded": 0.0, "commitsFailed": 0.0}
        for metric in self.vertex_metrics(jid, vid, ids) if ids else []:
            totals[metric["id"].rsplit(".", 1)[1]] += float(metric["value"])
        return totals

    def source_partitions(self, jid: str) -> set[tuple[str, int]]:
        """(escaped topic, partition) of every split a subtask of the source holds: the
        partitions its KafkaSourceReader registered a currentOffset metric for."""
        vid = self.source_vertex_id(jid)
        pattern = re.compile(r".*\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)"
                             r"\.currentOffset$")
        return {(match.group(1), int(match.group(2))) for metric in self.vertex_metrics(jid, vid)
                if (match := pattern.match(metric["id"]))}

    def cancel_job(self, jid: str, timeout: float = 60.0) -> None:
        """Cancels a job (PATCH /jobs/:jid?mode=cancel) and waits until it is CANCELED."""
        status, body = self.rest_request("PATCH", f"/jobs/{jid}?mode=cancel")
        if status not in (200, 202):
            raise RuntimeError(f"cancel {jid}: HTTP {status}: {body}")
        self.wait_for_state(jid, ("CANCELED",), timeout)

    def trigger_savepoint(self, jid: str, target_dir: Path | None = None,
                          cancel_job: bool = False, timeout: float = 120.0) -> str:
        """Takes a savepoint (POST /jobs/:jid/savepoints) and returns its path once done.

        Without ``target_dir`` Flink uses the cluster's ``--savepoint-dir``.
        """
        body: dict[str, Any] = {"cancel-job": cancel_job}
        if target_dir is not None:
            body["target-directory"] = Path(target_dir).resolve().as_uri()
        status, answer = self.rest_request("POST", f"/jobs/{jid}/savepoints", body)
        if status != 202:
            raise RuntimeError(f"savepoint of {jid}: HTTP {status}: {answer}")
        trigger = answer["request-id"]
        deadline = time.monotonic() + timeout
        while True:
            status, answer = self.rest_get(f"/jobs/{jid}/savepoints/{trigger}")
            if status == 200 and answer["status"]["id"] == "COMPLETED":
                operation = answer["operation"]
                if "location" in operation:
                    return operation["location"]
                raise RuntimeError(f"savepoint of {jid} failed: {json.dumps(operation)[:4000]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"savepoint of {jid} not done in {timeout} s: {answer}")
            time.sleep(0.25)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="build the job (only what changed)")
    build_cmd.add_argument("--version", choices=VERSIONS)
    run_cmd = sub.add_parser("run", help="run in the foreground until SIGTERM/SIGINT")
    run_cmd.add_argument("--version", choices=VERSIONS, required=True)
    run_cmd.add_argument("--work-dir", type=Path)
    run_cmd.add_argument("java_args", nargs=argparse.REMAINDER,
                         help="arguments of KafkaLagJob (--bootstrap, --rest-port, --job ...)")
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.version)
        return 0
    build(args.version)
    work_dir = (args.work_dir or Path(tempfile.mkdtemp(prefix="flink-"))).resolve()
    (work_dir / "tmp").mkdir(parents=True, exist_ok=True)
    command = ["java", "-Xmx768m", "-XX:+UseSerialGC", f"-Djava.io.tmpdir={work_dir / 'tmp'}",
               *JAVA17_OPENS, "-cp", classpath(args.version), MAIN_CLASS, *args.java_args]
    process = subprocess.Popen(command, cwd=work_dir)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: process.terminate())
    return process.wait()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
