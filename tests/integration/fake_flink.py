"""A FAKE Flink REST server for the faults real Flink will not produce on demand, and the helpers
the tests that use it share (test_flink_faults.py, test_flink_rest_security.py).

The fake replays the responses recorded from a real Flink 2.2 MiniCluster in
tests/fixtures/flink-2.x/ (manifest.json says which request each file answers), so its healthy
answers are real Flink's; a fault mode replaces one answer. It can serve TLS and ask for
credentials.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import promtext
from conftest import REPO_ROOT, wait_until

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "flink-2.x"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())

ORDERS_JID = MANIFEST["jobs"]["orders-enrichment"]["jid"]
AUDIT_JID = MANIFEST["jobs"]["audit-trail"]["jid"]
LEDGER_JID = MANIFEST["jobs"]["ledger-sync"]["jid"]
SOURCE_VERTEX = MANIFEST["jobs"]["orders-enrichment"]["source_vertex"]

REQUEST_TIMEOUT_SECONDS = 2.0
MAX_RESPONSE_BYTES = 65536
# Detecting a fault needs at most one poll interval (1 s) plus one request timeout (2 s); the
# rest is slack for a loaded CI machine.
FAULT_DEADLINE_SECONDS = 20.0


def fixture_json(name: str):
    return json.loads((FIXTURES / name).read_text())


def recorded_path(name: str) -> str:
    """The request path (with query) the manifest says fixture file ``name`` answers."""
    entry = MANIFEST["files"][name]
    assert entry["status"] == 200, f"{name} was recorded with status {entry['status']}"
    method, path = entry["request"].split(" ", 1)
    assert method == "GET"
    return path


# The recorded overview lists these RUNNING jobs, and their checkpoint files these counts.
RUNNING_JOBS = {job["jid"]: job["name"] for job in fixture_json("jobs_overview.json")["jobs"]
                if job["state"] == "RUNNING"}
EXPECTED_COMPLETED = {
    ORDERS_JID: fixture_json("checkpoints.json")["counts"]["completed"],
    LEDGER_JID: fixture_json("checkpoints_failing.json")["counts"]["completed"],
}
# audit-trail runs without checkpointing: no checkpoint counters for it, only enabled = 0.
RECORDED_METRIC_VALUES = {item["id"]: item["value"]
                          for item in fixture_json("vertex_metrics_values.json")}


def stand_in_job_details(jid: str) -> bytes:
    """A job-details answer for a job the recording has none for (only orders-enrichment's was
    recorded): the overview's id, name and state, and no vertices, so lagsight reads the job's
    checkpoints but no source. Marked as a stand-in so nobody mistakes it for Flink's."""
    (job,) = [j for j in fixture_json("jobs_overview.json")["jobs"] if j["jid"] == jid]
    return json.dumps({"jid": jid, "name": job["name"], "state": job["state"], "vertices": [],
                       "lagsight-test-stand-in": True}).encode()


def _routes() -> dict[str, bytes]:
    """Path -> body of every answer the healthy fake gives (the metric-values query aside)."""
    routes = {recorded_path(name): (FIXTURES / name).read_bytes() for name in (
        "jobs_overview.json", "job.json", "checkpoints.json", "checkpoints_config.json",
        "checkpoints_disabled.json", "checkpoints_config_disabled.json", "checkpoints_failing.json",
        "vertex_metrics_list.json")}
    routes[f"/jobs/{AUDIT_JID}"] = stand_in_job_details(AUDIT_JID)
    routes[f"/jobs/{LEDGER_JID}"] = stand_in_job_details(LEDGER_JID)
    # ledger-sync's checkpoint configuration was not recorded; the recorder configured it like
    # orders-enrichment (checkpoint_ms=1000), whose recorded configuration stands in for it.
    routes[f"/jobs/{LEDGER_JID}/checkpoints/config"] = (
        FIXTURES / "checkpoints_config.json").read_bytes()
    # The restart count of every job (real Flink answers this id for each job) and the
    # JobManager's configuration, as Flink 2.2 answers them (see jobmanager_config.json).
    for jid in RUNNING_JOBS:
        routes[f"/jobs/{jid}/metrics?get=numRestarts"] = b'[{"id":"numRestarts","value":"0"}]'
    routes["/jobmanager/config"] = _jobmanager_config()
    return routes


def _jobmanager_config() -> bytes:
    recorded = FIXTURES / "jobmanager_config.json"
    if recorded.exists():
        return recorded.read_bytes()
    return json.dumps([{"key": "rest.port", "value": "8081"}]).encode()


ROUTES = _routes()
OVERVIEW = ROUTES["/jobs/overview"]
METRIC_VALUES_PATH = recorded_path("vertex_metrics_values.json").split("?", 1)[0]
assert METRIC_VALUES_PATH == f"/jobs/{ORDERS_JID}/vertices/{SOURCE_VERTEX}/metrics"

OVERVIEW_FAULTS = {"garbage", "truncated_json", "wrong_shape", "cut_connection", "oversized",
                   "oversized_chunked", "hang", "http_500", "huge_content_length",
                   "endless_body", "trickle"}
# How long a hostile answer goes on at most, so the fake always stops by itself.
HOSTILE_ANSWER_SECONDS = 60.0


class FakeFlink:
    """A Flink REST API on 127.0.0.1 (HTTP or HTTPS) replaying the recorded answers, with faults
    switched on and off by ``set_faults``. Thread-safe; answers requests concurrently."""

    def __init__(self, tls_context: ssl.SSLContext | None = None) -> None:
        self.tls_context = tls_context
        self._lock = threading.Lock()
        self._overview_fault: str | None = None
        self._failing_checkpoints_job: str | None = None
        self._metric_overrides: dict[str, str] = {}
        self._release_hung = threading.Event()
        # None: no authentication required; else the Authorization values accepted.
        self.accepted_authorizations: set[str] | None = None
        self.requests: list[tuple[str, str | None]] = []  # (path, Authorization header)
        self.not_found: list[str] = []
        self.unknown_metric_ids: set[str] = set()
        self.hung_requests = 0
        self._jvm_cpu_time_ns = 0
        self.tls_failures: list[str] = []
        # Seconds every answer waits, so overlapping requests can be seen; and how many overlapped.
        self.response_delay = 0.0
        self._in_flight = 0
        self.max_in_flight = 0
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        self.url = f"{'https' if tls_context else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self) -> FakeFlink:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release_hung.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def set_faults(self, overview: str | None = None, failing_checkpoints_job: str | None = None,
                   metric_overrides: dict[str, str] | None = None) -> None:
        """Switches the fault modes; no arguments means healthy. Hung requests are released."""
        assert overview is None or overview in OVERVIEW_FAULTS, overview
        with self._lock:
            self._overview_fault = overview
            self._failing_checkpoints_job = failing_checkpoints_job
            self._metric_overrides = dict(metric_overrides or {})
            self._release_hung.set()
            self._release_hung = threading.Event()

    def faults(self) -> tuple[str | None, str | None, dict[str, str], threading.Event]:
        with self._lock:
            return (self._overview_fault, self._failing_checkpoints_job, self._metric_overrides,
                    self._release_hung)

    def record_request(self, path: str, authorization: str | None) -> bool:
        """Records a request; returns whether its Authorization header is accepted."""
        with self._lock:
            self.requests.append((path, authorization))
            accepted = self.accepted_authorizations
        return accepted is None or authorization in accepted

    def request_started(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        time.sleep(self.response_delay)

    def request_finished(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def note_unknown_metric_ids(self, ids: set[str]) -> None:
        with self._lock:
            self.unknown_metric_ids |= ids

    def note_tls_failure(self, error: str) -> None:
        with self._lock:
            self.tls_failures.append(error)

    def jvm_cpu_time(self) -> bytes:
        """The JobManager's CPU time, lagsight's sign that the metric store refreshed: in the
        format of Flink's ?get= answers (as numRestarts above), a value that grows at every
        request (this fake's store is always fresh)."""
        with self._lock:
            self._jvm_cpu_time_ns += 1_000_000
            return json.dumps([{"id": "Status.JVM.CPU.Time",
                                "value": str(self._jvm_cpu_time_ns)}]).encode()

    def note_not_found(self, path: str) -> None:
        with self._lock:
            self.not_found.append(path)

    def note_hung_request(self) -> None:
        with self._lock:
            self.hung_requests += 1

    def authorizations_sent(self) -> set[str | None]:
        with self._lock:
            return {authorization for _, authorization in self.requests}

    def paths_requested(self) -> set[str]:
        with self._lock:
            return {path for path, _ in self.requests}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeFlink) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def finish_request(self, request, client_address) -> None:
        """Does the TLS handshake here, in the connection's own thread, so a client that fails
        or stalls the handshake holds up no other connection."""
        context = self.fake.tls_context
        if context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(10)
        try:
            tls_socket = context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as error:
            self.fake.note_tls_failure(str(error))
            return
        try:
            super().finish_request(tls_socket, client_address)
        finally:
            tls_socket.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Flink's REST server
    timeout = 30  # idle keep-alive connections are dropped after this
    server: _Server

    def log_message(self, format, *args) -> None:  # noqa: A002 - quiet; tests read fake.requests
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.fake.request_started()
        try:
            self._answer()
        finally:
            self.server.fake.request_finished()

    def _answer(self) -> None:
        fake = self.server.fake
        if not fake.record_request(self.path, self.headers.get("Authorization")):
            self._send(401, b'{"errors":["Unauthorized"]}',
                       extra_headers={"WWW-Authenticate": 'Basic realm="flink"'})
            return
        overview_fault, failing_checkpoints_job, overrides, release_hung = fake.faults()
        path, _, query = self.path.partition("?")
        if path == "/jobs/overview" and overview_fault:
            self._overview_fault(overview_fault, release_hung)
        elif failing_checkpoints_job and path == f"/jobs/{failing_checkpoints_job}/checkpoints":
            self._send(500, b'{"errors":["Internal server error."]}')
        elif path == METRIC_VALUES_PATH and query:
            self._metric_values(query, overrides)
        elif self.path == "/jobmanager/metrics?get=Status.JVM.CPU.Time":
            self._send(200, fake.jvm_cpu_time())
        elif path in ROUTES and not query:
            self._send(200, ROUTES[path])
        elif self.path in ROUTES:
            self._send(200, ROUTES[self.path])
        else:
            fake.note_not_found(self.path)
            self._send(404, json.dumps({"errors": [f"Not found: {path}"]}).encode())

    def _metric_values(self, query: str, overrides: dict[str, str]) -> None:
        """Answers ``?get=a,b,...`` as Flink does: the requested metrics it has, in any order."""
        wanted = urllib.parse.parse_qs(query).get("get", [""])[0].split(",")
        unknown = {i for i in wanted if i not in RECORDED_METRIC_VALUES}
        if unknown:
            self.server.fake.note_unknown_metric_ids(unknown)
        values = [{"id": i, "value": overrides.get(i, RECORDED_METRIC_VALUES[i])}
                  for i in wanted if i in RECORDED_METRIC_VALUES]
        self._send(200, json.dumps(values).encode())

    def _overview_fault(self, fault: str, release_hung: threading.Event) -> None:
        if fault == "garbage":
            self._send(200, b"\x00\xff\xfe<html>\x89PNG\r\n" + bytes(range(256)) * 4)
        elif fault == "truncated_json":
            self._send(200, OVERVIEW[:len(OVERVIEW) // 2])
        elif fault == "wrong_shape":
            self._send(200, b'{"jobs": 5}')
        elif fault == "cut_connection":
            # The headers promise the whole body; the connection closes after half of it.
            self._send(200, OVERVIEW, body_bytes_to_write=len(OVERVIEW) // 2)
            self.close_connection = True
        elif fault == "oversized":
            self._send(200, self._padded_overview())
        elif fault == "oversized_chunked":
            self._send_chunked(self._padded_overview())
        elif fault == "hang":
            # Reads the request, then never answers; the connection closes when released.
            self.server.fake.note_hung_request()
            release_hung.wait(timeout=120)
            self.close_connection = True
        elif fault == "http_500":
            self._send(500, b'{"errors":["Internal server error."]}')
        elif fault in ("huge_content_length", "endless_body", "trickle"):
            self._hostile_answer(fault, release_hung)

    def _hostile_answer(self, fault: str, release_hung: threading.Event) -> None:
        """(a) declares 100 GB and sends a little of it, (b) streams a chunked body without end,
        (c) trickles one byte a second; each until lagsight hangs up (or a bounded time)."""
        self.close_connection = True
        until = time.monotonic() + HOSTILE_ANSWER_SECONDS
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            if fault == "endless_body":
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length",
                                 "100000000000" if fault == "huge_content_length" else "1000")
            self.end_headers()
            chunk = b"x" * 65536
            while time.monotonic() < until and not release_hung.is_set():
                if fault == "endless_body":
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                elif fault == "trickle":
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(1.0)
                else:
                    self.wfile.write(b'{"jobs":[')
                    self.wfile.flush()
                    release_hung.wait(timeout=until - time.monotonic())
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError, OSError):
            pass

    @staticmethod
    def _padded_overview() -> bytes:
        """Valid JSON of the overview's shape, 200 KB: too large, yet not malformed."""
        overview = json.loads(OVERVIEW)
        overview["padding"] = "x" * 200_000
        return json.dumps(overview).encode()

    def _send(self, status: int, body: bytes, extra_headers: dict[str, str] | None = None,
              body_bytes_to_write: int | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (extra_headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body if body_bytes_to_write is None else body[:body_bytes_to_write])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            self.close_connection = True  # the client gave up (e.g. at its size limit)

    def _send_chunked(self, body: bytes) -> None:
        """No Content-Length: the size limit must hold while the body streams in."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(body), 16384):
                chunk = body[start:start + 16384]
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            self.close_connection = True



def flink_cluster(url: str, name: str = "fake", **extra) -> dict:
    """One entry of the config's ``flink`` list, polling every second with a 2 s timeout."""
    return {"name": name, "rest_url": url, "kafka_cluster": "local", "poll_interval": "1s",
            "request_timeout": f"{REQUEST_TIMEOUT_SECONDS:g}s",
            "max_response_bytes": MAX_RESPONSE_BYTES, **extra}


# --- reading /metrics -----------------------------------------------------------------------

def single(metrics, name: str, **labels) -> float | None:
    values = list(promtext.select(metrics, name, **labels).values())
    assert len(values) <= 1, f"{name}{labels}: {len(values)} series"
    return values[0] if values else None


def flink_up(metrics, cluster: str = "fake") -> float | None:
    return single(metrics, "lagsight_flink_up", flink_cluster=cluster)


def per_job(metrics, name: str, cluster: str = "fake") -> dict[str, float]:
    return {dict(key)["job_id"]: value for key, value in
            promtext.select(metrics, name, flink_cluster=cluster).items()}


def is_healthy(metrics, cluster: str = "fake") -> bool:
    """Up, every RUNNING job exported, and the recorded checkpoint counts."""
    return (flink_up(metrics, cluster) == 1
            and set(per_job(metrics, "lagsight_flink_job_info", cluster)) == set(RUNNING_JOBS)
            and per_job(metrics, "lagsight_flink_checkpoints_completed_total", cluster)
            == EXPECTED_COMPLETED)


def wait_healthy(lagsight, cluster: str = "fake"):
    return lagsight.wait_for(lambda m: is_healthy(m, cluster),
                             f"flink cluster {cluster!r} up with the recorded jobs and counts",
                             timeout=FAULT_DEADLINE_SECONDS)


def assert_kafka_half_fresh(lagsight) -> None:
    """The Kafka half is untouched by Flink's troubles: up, and polls completing after now."""
    metrics = lagsight.wait_for_fresh_poll(time.time())
    assert single(metrics, "lagsight_kafka_up", kafka_cluster="local") == 1


def log_since(lagsight, offset: int) -> str:
    with lagsight.log_file.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def log_size(lagsight) -> int:
    return lagsight.log_file.stat().st_size


_LOGFMT_MSG = re.compile(r'\bmsg="((?:[^"\\]|\\.)*)"')


def log_messages(lagsight, offset: int) -> list[str]:
    """The ``msg`` values (unescaped) of the logfmt lines written after ``offset``."""
    messages = []
    for line in log_since(lagsight, offset).splitlines():
        match = _LOGFMT_MSG.search(line)
        if match:
            messages.append(re.sub(r"\\(.)", r"\1", match.group(1)))
    return messages


def wait_for_log(lagsight, offset: int, *fragments: str) -> list[str]:
    """Waits for log messages (written after ``offset``) containing all ``fragments``."""
    def matching():
        return [message for message in log_messages(lagsight, offset)
                if all(fragment in message for fragment in fragments)]
    return wait_until(matching, FAULT_DEADLINE_SECONDS, f"a log message with {fragments}")


def run_cluster_fault(lagsight, fake: FakeFlink, log_fragment: str, **fault) -> list[str]:
    """Switches a fault that makes the whole poll fail on, checks the contract, switches it off
    and checks the recovery; returns the log lines naming the failure."""
    before = lagsight.scrape()
    failures_before = single(before, "lagsight_flink_poll_failures_total", flink_cluster="fake")
    offset = log_size(lagsight)
    fake.set_faults(**fault)
    down = lagsight.wait_for(lambda m: flink_up(m) == 0, f"lagsight_flink_up 0 under {fault}",
                             timeout=FAULT_DEADLINE_SECONDS)
    # Stale job data is not served as fresh: the jobs' series go with the failed poll.
    assert per_job(down, "lagsight_flink_job_info") == {}
    assert per_job(down, "lagsight_flink_checkpoints_completed_total") == {}
    assert single(down, "lagsight_flink_poll_failures_total", flink_cluster="fake") > \
        failures_before
    lines = wait_for_log(lagsight, offset, 'flink cluster "fake": poll failed', log_fragment)
    assert_kafka_half_fresh(lagsight)
    assert lagsight.running
    fake.set_faults()
    wait_healthy(lagsight)
    return lines
