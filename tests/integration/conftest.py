"""Fixtures for the integration tests: a real Kafka broker, and lagsight run as a process.

The lagsight binary is build/cmd/lagsight/lagsight, or the path in LAGSIGHT_BIN. A missing binary
fails every test that needs it: a skipped integration suite looks green and proves nothing.
When a test fails, the tails of lagsight's and the broker's logs are added to its report.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

import promtext

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests" / "harness"))

from kafka_broker import KafkaBroker, free_loopback_port  # noqa: E402
pytest_plugins = ["scenario_report"]  # diagnosis scenario results -> docs/diagnosis-results.md

DEFAULT_BINARY = REPO_ROOT / "build" / "cmd" / "lagsight" / "lagsight"
CLUSTER = "local"
# The opt-in per-partition families (off by default: a Prometheus pays for each series). A test
# that checks each partition's committed offset or lag in seconds against Kafka asks for them
# with the marker ``partition_series``; every other test runs on the defaults.
PARTITION_SERIES = {"partition_committed_offsets": True, "partition_lag_seconds": True}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "partition_series: start_lagsight exports the opt-in "
                            "per-partition committed offsets and lag in seconds")
# Long enough for several polls (1 s apart) and one request timeout (5 s) against a dead broker.
POLL_DEADLINE_SECONDS = 60.0
# Each daemon's analysis trace (two files at most: this and the one rotated before it).
TRACE_MAX_BYTES = 64 * 1024 * 1024
HTTP_TIMEOUT_SECONDS = 5.0
LOG_TAIL_LINES = 150

Metrics = promtext.Samples

_FAILURE_LOGS = pytest.StashKey[list[tuple[str, Path]]]()


def _register_log_for_failures(request: pytest.FixtureRequest, title: str, path: Path) -> None:
    request.node.stash.setdefault(_FAILURE_LOGS, []).append((title, path))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Appends the tail of every registered log to the report of a failed test phase."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for title, path in item.stash.get(_FAILURE_LOGS, []):
        text = path.read_text(errors="replace") if path.exists() else "(no log written)"
        tail = "\n".join(text.splitlines()[-LOG_TAIL_LINES:])
        report.sections.append((f"{title} ({path}, last {LOG_TAIL_LINES} lines)", tail))


def wait_until(condition: Callable[[], object], timeout: float, description: str,
               interval: float = 0.25) -> object:
    """Calls ``condition`` until it returns something truthy, and returns that.

    Raises AssertionError naming ``description`` when the deadline passes first.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {description}")
        time.sleep(interval)


class LagsightProcess:
    """One lagsight daemon with its own config file, port and log file.

    Scrapes never trigger I/O in lagsight, so tests wait for polls through
    ``lagsight_kafka_last_poll_timestamp_seconds`` rather than sleeping.
    """

    def __init__(self, binary: Path, work_dir: Path, config: dict,
                 args: list[str] | None = None) -> None:
        self.cluster = CLUSTER
        self.args = list(args or [])
        self.binary = binary
        self.work_dir = work_dir
        self.config = config
        self.config_file = work_dir / "lagsight.yaml"
        self.log_file = work_dir / "lagsight.log"
        self.trace_file = work_dir / "analysis.trace"
        self.port = free_loopback_port()
        self._process: subprocess.Popen | None = None

    def start(self) -> LagsightProcess:
        """Starts lagsight and returns once /readyz says every source completed a poll."""
        self.config_file.write_text(yaml.safe_dump(self.config, sort_keys=False))
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), f"--config.file={self.config_file}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=debug",
                 # What the analysis was handed, for replaying a scenario through it later
                 # (lagsight replay); every daemon of the suite records, so recording is
                 # exercised wherever lagsight runs.
                 f"--trace.record={self.trace_file}", f"--trace.max-bytes={TRACE_MAX_BYTES}",
                 *self.args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: self._running_or_fail() and self.get("/healthz")[0] == 200,
                   15, "/healthz to answer 200")
        wait_until(lambda: self._running_or_fail() and self.get("/readyz")[0] == 200,
                   POLL_DEADLINE_SECONDS, "/readyz to answer 200 after the first poll")
        return self

    def cpu_seconds(self) -> float:
        """User + system CPU time the process has used so far (from /proc)."""
        assert self._process is not None, "lagsight was never started"
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        assert self._process is not None, "lagsight was never started"
        return self._process.pid

    def send_signal(self, signum: int) -> None:
        """Signals the daemon, e.g. SIGHUP to make it reload its config file."""
        assert self._process is not None, "lagsight was never started"
        self._process.send_signal(signum)

    def _running_or_fail(self) -> bool:
        if not self.running:
            raise AssertionError(f"lagsight exited with {self._process.returncode}; its log ends:"
                                 f"\n{self.log_tail(12)}")
        return True

    def get(self, path: str) -> tuple[int, str]:
        """GETs a path; returns (status, body), or (0, error) when nothing answered."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}",
                                        timeout=HTTP_TIMEOUT_SECONDS) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            return 0, str(error)

    def scrape(self) -> Metrics:
        status, body = self.get("/metrics")
        assert status == 200, f"/metrics answered {status}: {body[:500]}"
        return promtext.parse(body)

    def wait_for(self, condition: Callable[[Metrics], bool], description: str,
                 timeout: float = POLL_DEADLINE_SECONDS) -> Metrics:
        """Scrapes until ``condition`` holds for a scrape, and returns that scrape."""
        def satisfied() -> Metrics | None:
            self._running_or_fail()
            metrics = self.scrape()
            return metrics if condition(metrics) else None
        return wait_until(satisfied, timeout, description)

    def last_poll(self, metrics: Metrics) -> float:
        """The completion time of lagsight's last successful poll, or 0 before the first."""
        series = promtext.select(metrics, "lagsight_kafka_last_poll_timestamp_seconds",
                                 kafka_cluster=self.cluster)
        return max(series.values(), default=0.0)

    def wait_for_fresh_poll(self, since: float) -> Metrics:
        """Returns a scrape whose data came from a poll that *started* after ``since``.

        Only completion times are exported. Polls of one source run one after another, so the
        second poll completing after ``since`` started after the first one had completed.
        """
        first = self.wait_for(lambda m: self.last_poll(m) > since,
                              f"a successful poll completing after {since:.3f}")
        first_completion = self.last_poll(first)
        return self.wait_for(lambda m: self.last_poll(m) > first_completion,
                             f"a successful poll completing after {first_completion:.3f}")

    def log_tail(self, lines: int) -> str:
        """The log's last lines, for a failure's message."""
        if not self.log_file.exists():
            return f"({self.log_file} is missing)"
        tail = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join([f"- {self.log_file}:", *tail])

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 10 s; returns the exit code (None if never started)."""
        if self._process is None:
            return None
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
                raise AssertionError("lagsight did not exit within 10 s of SIGTERM") from None
        return self._process.returncode


def lagsight_config(bootstrap: str, groups: dict | None = None,
                    topics: dict | None = None, flink: list[dict] | None = None,
                    properties: dict[str, str] | None = None,
                    diagnosis: dict | None = None, more_kafka: list[dict] | None = None,
                    kafka_settings: dict | None = None) -> dict:
    """A one-cluster config polling every second, in the YAML shape lagsight reads.

    ``flink`` is the config's list of Flink clusters, if any; ``properties`` the cluster's
    librdkafka properties (security settings); ``diagnosis`` its diagnosis section;
    ``more_kafka`` further Kafka clusters, as the config lists them; ``kafka_settings`` more
    keys of the one cluster (e.g. ``read_committed_groups``).
    """
    cluster = {"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
               "request_timeout": "5s"}
    if properties is not None:
        cluster["properties"] = properties
    if groups is not None:
        cluster["groups"] = groups
    if topics is not None:
        cluster["topics"] = topics
    cluster.update(kafka_settings or {})
    config = {"kafka": [cluster] + (more_kafka or [])}
    if flink:
        config["flink"] = flink
    if diagnosis:
        config["diagnosis"] = diagnosis
    return config


@pytest.fixture(scope="session")
def lagsight_binary() -> Path:
    binary = Path(os.environ.get("LAGSIGHT_BIN", DEFAULT_BINARY))
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(f"lagsight binary not found or not executable at {binary}: build it "
                    f"(cmake) or point LAGSIGHT_BIN at it", pytrace=False)
    return binary


@pytest.fixture(scope="session")
def session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(tmp_path_factory.mktemp("kafka")) as broker:
        yield broker


@pytest.fixture
def kafka_broker(session_broker: KafkaBroker, request: pytest.FixtureRequest) -> KafkaBroker:
    """The broker shared by the session; tests keep apart by unique topic and group names."""
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)
    return session_broker


@pytest.fixture
def own_broker(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KafkaBroker]:
    """A broker for this test alone, for tests that stop and restart it."""
    broker = KafkaBroker(tmp_path / "kafka")
    _register_log_for_failures(request, "own kafka broker log", broker.log_file)
    with broker:
        yield broker


@pytest.fixture
def unique_prefix(request: pytest.FixtureRequest) -> str:
    """A topic and group name prefix no other test (or run on the same broker) uses."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.removeprefix("test_").lower())
    return f"{name[:24]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def start_lagsight(lagsight_binary: Path, tmp_path: Path, request: pytest.FixtureRequest
                   ) -> Iterator[Callable[..., LagsightProcess]]:
    """Starts lagsight on a broker: ``start_lagsight(bootstrap, groups=..., topics=...)``.

    ``groups`` and ``topics`` are the config's ``{allow: [...], deny: [...]}`` filters,
    ``properties`` its librdkafka properties, ``args`` more command-line flags. At teardown
    each process must exit 0 on SIGTERM, which also catches a lagsight that crashed mid-test.
    """
    processes: list[LagsightProcess] = []

    def start(bootstrap: str, groups: dict | None = None, topics: dict | None = None,
              flink: list[dict] | None = None, properties: dict[str, str] | None = None,
              diagnosis: dict | None = None, more_kafka: list[dict] | None = None,
              kafka_settings: dict | None = None, args: list[str] | None = None
              ) -> LagsightProcess:
        work_dir = tmp_path / f"lagsight-{len(processes)}"
        work_dir.mkdir()
        if request.node.get_closest_marker("partition_series") is not None:
            kafka_settings = {"series": PARTITION_SERIES, **(kafka_settings or {})}
        process = LagsightProcess(
            lagsight_binary, work_dir,
            lagsight_config(bootstrap, groups, topics, flink, properties, diagnosis, more_kafka,
                            kafka_settings), args)
        processes.append(process)
        _register_log_for_failures(request, f"lagsight log #{len(processes)}", process.log_file)
        return process.start()

    yield start
    exit_codes = [process.stop() for process in processes]
    # The log's end goes into the message itself: CI shows a failure's first lines, and a
    # crash's reason (libstdc++'s "terminate called after...", a librdkafka assertion) is
    # the last thing the process wrote.
    assert all(code == 0 for code in exit_codes), (
        f"lagsight exit codes after SIGTERM: {exit_codes} (expected 0); the logs end:\n" +
        "\n".join(process.log_tail(12) for process, code in zip(processes, exit_codes)
                  if code != 0))
