"""What the diagnosis modules on real Kafka share (test_diagnosis_kafka.py,
test_diagnosis_retention.py, test_diagnosis_cluster_mismatch.py): the diagnosis settings they run
lagsight with, a launcher for lagsight processes of their own, watching a pair's causes, and
reading the truth with Kafka's own tools.

``LAGSIGHT_DIAG_GROUND_TRUTH_ONLY=1`` runs only the real-system part of those modules (for a
lagsight without the diagnosis), as in test_diagnosis_flink.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures
from scenario_report import DiagnosisWatch

WINDOW_SECONDS = 30
CONFIRM_POLLS = 2
# Above every lag the healthy, stalled and idle-but-caught-up groups reach in a window, below the
# lag of the idle-behind group (400) and of the really-behind one after ~5 s (24 records/s).
LAG_THRESHOLD_RECORDS = 100
# Generous: the machine is shared with other builds and tests.
DETECT_TIMEOUT = 60.0
FLINK_LINE = "2.x"
FLINK_CLUSTER = "mini"
GROUND_TRUTH_ONLY = os.environ.get("LAGSIGHT_DIAG_GROUND_TRUTH_ONLY") == "1"

Metrics = promtext.Samples


def diagnosis_config(bootstrap: str, *, groups: list[str] | None = None,
                     flink: list[dict] | None = None,
                     expiry_warning_ratio: float | None = None) -> dict:
    """lagsight's config: conftest's shape plus the top-level ``diagnosis`` section."""
    cluster = {"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
               "request_timeout": "5s"}
    if groups:
        cluster["groups"] = {"allow": groups}
    config: dict = {"kafka": [cluster]}
    if flink:
        config["flink"] = flink
    if not GROUND_TRUTH_ONLY:
        config["diagnosis"] = {"window": f"{WINDOW_SECONDS}s", "confirm_polls": CONFIRM_POLLS,
                               "lag_threshold_records": LAG_THRESHOLD_RECORDS}
        if expiry_warning_ratio is not None:
            config["diagnosis"]["expiry_warning_ratio"] = expiry_warning_ratio
    return config


class Lagsights:
    """Starts lagsight processes for one test or module and checks they exit 0 on SIGTERM."""

    def __init__(self, binary: Path, work_dir: Path) -> None:
        self.binary = binary
        self.work_dir = work_dir
        self.processes: list[LagsightProcess] = []

    def start(self, config: dict, request: pytest.FixtureRequest | None = None
              ) -> LagsightProcess:
        work_dir = self.work_dir / f"lagsight-{len(self.processes)}"
        work_dir.mkdir(parents=True)
        process = LagsightProcess(self.binary, work_dir, config)
        self.processes.append(process)
        if request is not None:
            _register_log_for_failures(request, f"lagsight log #{len(self.processes)}",
                                       process.log_file)
        return process.start()

    def stop_all(self) -> None:
        codes = [process.stop() for process in self.processes]
        assert all(code == 0 for code in codes), (
            f"lagsight exit codes after SIGTERM: {codes} (expected 0)")



def watch_pair(lagsight: LagsightProcess, group: str, job_name: str | None = None,
               t0: float | None = None, interval: float = 0.5) -> DiagnosisWatch:
    return DiagnosisWatch(lagsight, kafka_cluster=CLUSTER, group=group, job_name=job_name,
                          t0=t0, interval=interval)


def assert_detected(watch: DiagnosisWatch, cause: str, timeout: float,
                    allowed: set[str] | None = None) -> float:
    """Waits for ``cause`` on the watched pair and asserts no other alarm cause showed since
    the watch's t0 (``allowed`` adds causes that are right before the fault takes effect).
    Returns the seconds from t0 to the first sighting."""
    seconds = watch.wait_for(cause, timeout)
    falses = watch.false_causes(cause, {"healthy"} | (allowed or set()))
    assert not falses, (f"false causes after the fault: {falses}; seen {watch.seen()}; "
                        f"history:\n{watch.history()}")
    return seconds


def series_naming(metrics: Metrics, label: str, value: str) -> list[promtext.SeriesKey]:
    return [key for key in metrics if (label, value) in key[1]]


def one_value(metrics: Metrics, name: str, **labels: str) -> float:
    series = promtext.select(metrics, name, **labels)
    assert len(series) == 1, f"expected one {name}{labels} series, got {series}"
    return next(iter(series.values()))


def tool_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int | None, int]]:
    """(topic, partition) -> (committed, log end) of ``group``, from kafka-consumer-groups."""
    return {(row.topic, row.partition): (row.current_offset, row.log_end_offset)
            for row in kafka.consumer_groups_describe_all(bootstrap) if row.group == group}


def tool_groups(bootstrap: str) -> set[str]:
    return {listing.group for listing in kafka.consumer_groups_list_with_state_and_type(bootstrap)}

