"""The Flink half against a FAKE Flink REST server (fake_flink.py), for the faults real Flink will
not produce on demand: garbage, truncated and oddly shaped answers, oversized bodies, a server
that hangs, HTTP errors, non-finite metric values, a hostile body, SIGTERM mid-poll. TLS and
authentication against the same fake are test_flink_rest_security.py.

The fake's healthy answers are real Flink's (recorded from a real Flink 2.2 MiniCluster); a fault
mode replaces one answer. The real-Flink tests are in test_flink.py; this file is additional
evidence for the fault cases only.

Every fault case checks the same contract: lagsight keeps running, the bad cluster's
``lagsight_flink_up`` drops to 0 (or, for a fault in one job, stays 1 with the job left out and
counted in ``lagsight_flink_poll_partial_errors``), the Kafka half keeps polling fresh, and once
the fake is healthy again ``lagsight_flink_up`` is 1 and the jobs' series are back with the
recorded values.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import promtext
from conftest import wait_until
from fake_flink import (AUDIT_JID, EXPECTED_COMPLETED, FAULT_DEADLINE_SECONDS, LEDGER_JID,
                        MAX_RESPONSE_BYTES, METRIC_VALUES_PATH, ORDERS_JID, OVERVIEW,
                        RECORDED_METRIC_VALUES, REQUEST_TIMEOUT_SECONDS, ROUTES, RUNNING_JOBS,
                        FakeFlink, assert_kafka_half_fresh, flink_cluster, flink_up,
                        is_healthy, log_size, per_job, run_cluster_fault, single,
                        stand_in_job_details, wait_for_log, wait_healthy)


@pytest.fixture
def fake_flink() -> Iterator[FakeFlink]:
    with FakeFlink() as fake:
        yield fake


# --- the cases ------------------------------------------------------------------------------

def test_healthy_replay_exports_the_recorded_jobs(kafka_broker, start_lagsight, fake_flink):
    """The fake's healthy answers are real Flink's, so lagsight must export exactly what they
    say: the RUNNING jobs with their names, the recorded checkpoint counts, and the source
    reader's recorded metric values. Also proves the fake answers every request lagsight makes,
    so the fault cases below differ from a healthy poll only by their fault."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    metrics = wait_healthy(lagsight)

    info = {dict(key)["job_id"]: dict(key) for key in
            promtext.select(metrics, "lagsight_flink_job_info", flink_cluster="fake")}
    assert {jid: (labels["job_name"], labels["state"]) for jid, labels in info.items()} == {
        jid: (name, "RUNNING") for jid, name in RUNNING_JOBS.items()}
    assert per_job(metrics, "lagsight_flink_checkpoints_completed_total") == EXPECTED_COMPLETED
    assert per_job(metrics, "lagsight_flink_checkpointing_enabled") == {
        ORDERS_JID: 1, LEDGER_JID: 1, AUDIT_JID: 0}
    assert single(metrics, "lagsight_flink_poll_partial_errors", flink_cluster="fake") == 0

    # The source reader's values, as the recording has them (sums and maxima over subtasks).
    def source(name: str) -> float | None:
        return single(metrics, name, flink_cluster="fake", job_id=ORDERS_JID)
    recorded = {k: float(v) for k, v in RECORDED_METRIC_VALUES.items()}
    assert source("lagsight_flink_source_records_lag_max") == max(
        v for k, v in recorded.items() if k.endswith("records-lag-max"))
    assert source("lagsight_flink_source_pending_records") == sum(
        v for k, v in recorded.items() if k.endswith(".pendingRecords"))
    assert source("lagsight_flink_source_busy_ratio") == pytest.approx(max(
        v for k, v in recorded.items() if k.endswith(".busyTimeMsPerSecond")) / 1000)

    requested = fake_flink.paths_requested()
    expected_paths = {"/jobs/overview", METRIC_VALUES_PATH} | {
        f"/jobs/{jid}{suffix}" for jid in RUNNING_JOBS
        for suffix in ("", "/checkpoints", "/checkpoints/config")}
    assert expected_paths <= {path.split("?", 1)[0] for path in requested}
    assert any(path.startswith(METRIC_VALUES_PATH + "?get=") for path in requested)
    assert fake_flink.not_found == []
    assert fake_flink.unknown_metric_ids == set()
    assert_kafka_half_fresh(lagsight)


def test_malformed_job_list_fails_the_poll_not_the_daemon(kafka_broker, start_lagsight,
                                                          fake_flink):
    """A proxy's error page, a body cut short, or an API change must not crash lagsight nor be
    read as "no jobs": the poll fails (up 0, series dropped) and recovers once answers are good."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    wait_healthy(lagsight)
    run_cluster_fault(lagsight, fake_flink, "jobs overview: not JSON", overview="garbage")
    run_cluster_fault(lagsight, fake_flink, "jobs overview: not JSON", overview="truncated_json")
    run_cluster_fault(lagsight, fake_flink, '"jobs" list', overview="wrong_shape")
    run_cluster_fault(lagsight, fake_flink, "/jobs/overview", overview="cut_connection")


def test_oversized_response_is_refused(kafka_broker, start_lagsight, fake_flink):
    """max_response_bytes bounds lagsight's memory whatever the server sends, whether it
    announces the size (Content-Length) or streams it (chunked)."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    wait_healthy(lagsight)
    for mode in ("oversized", "oversized_chunked"):
        run_cluster_fault(lagsight, fake_flink, f"larger than {MAX_RESPONSE_BYTES} bytes",
                          overview=mode)


def test_hanging_server_times_out_and_scrapes_stay_fast(kafka_broker, start_lagsight,
                                                        fake_flink):
    """A JobManager that accepts and never answers must cost a poll no more than
    request_timeout, and never a scrape: /metrics is served from the last rendering."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    wait_healthy(lagsight)
    offset = log_size(lagsight)
    fake_flink.set_faults(overview="hang")

    slowest_scrape = 0.0
    def down_with_fast_scrapes():
        nonlocal slowest_scrape
        started = time.monotonic()
        metrics = lagsight.scrape()
        slowest_scrape = max(slowest_scrape, time.monotonic() - started)
        return metrics if flink_up(metrics) == 0 else None
    down = wait_until(down_with_fast_scrapes, FAULT_DEADLINE_SECONDS, "lagsight_flink_up 0")
    assert fake_flink.hung_requests >= 1
    duration = single(down, "lagsight_flink_poll_duration_seconds", flink_cluster="fake")
    assert REQUEST_TIMEOUT_SECONDS * 0.9 <= duration <= REQUEST_TIMEOUT_SECONDS + 1.0, duration
    assert per_job(down, "lagsight_flink_job_info") == {}

    # Scrapes while polls keep hanging (several in a row, spanning more than one timeout).
    until = time.monotonic() + REQUEST_TIMEOUT_SECONDS * 1.5
    while time.monotonic() < until:
        for path in ("/metrics", "/healthz"):
            started = time.monotonic()
            status, _ = lagsight.get(path)
            assert status == 200
            slowest_scrape = max(slowest_scrape, time.monotonic() - started)
        time.sleep(0.1)
    # A scrape that waited on the poll would take the request timeout; well below it, none did.
    assert slowest_scrape < REQUEST_TIMEOUT_SECONDS * 0.75, (
        f"a scrape took {slowest_scrape:.3f} s while Flink hung")
    assert fake_flink.hung_requests >= 2, "lagsight stopped polling the hanging server"
    wait_for_log(lagsight, offset, 'flink cluster "fake": poll failed', "/jobs/overview")
    assert_kafka_half_fresh(lagsight)
    fake_flink.set_faults()
    wait_healthy(lagsight)


def test_requests_in_flight_stay_within_max_concurrent_requests(kafka_broker, start_lagsight,
                                                               fake_flink):
    """Jobs are polled concurrently, but never with more requests at once than configured: a
    large Flink cluster must not be flooded. Slow answers make the overlap observable."""
    fake_flink.response_delay = 0.3
    lagsight = start_lagsight(kafka_broker.bootstrap,
                              flink=[flink_cluster(fake_flink.url, max_concurrent_requests=2)])
    wait_healthy(lagsight)
    assert fake_flink.max_in_flight == 2  # concurrent (3 jobs' requests overlap), and bounded


def test_http_500_for_the_cluster_or_for_one_job(kafka_broker, start_lagsight, fake_flink):
    """A 500 on the job list fails the poll; a 500 on one job's checkpoints is that job's
    problem only: the others are exported, the bad one is left out (not served stale) and
    counted in lagsight_flink_poll_partial_errors."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    wait_healthy(lagsight)
    run_cluster_fault(lagsight, fake_flink, "GET /jobs/overview: HTTP 500", overview="http_500")

    offset = log_size(lagsight)
    fake_flink.set_faults(failing_checkpoints_job=LEDGER_JID)
    partial = lagsight.wait_for(
        lambda m: flink_up(m) == 1
        and single(m, "lagsight_flink_poll_partial_errors", flink_cluster="fake") == 1,
        "a partial poll", timeout=FAULT_DEADLINE_SECONDS)
    assert set(per_job(partial, "lagsight_flink_job_info")) == {ORDERS_JID, AUDIT_JID}
    assert per_job(partial, "lagsight_flink_checkpoints_completed_total") == {
        ORDERS_JID: EXPECTED_COMPLETED[ORDERS_JID]}
    assert single(partial, "lagsight_flink_source_records_lag_max", job_id=ORDERS_JID) is not None
    wait_for_log(lagsight, offset, LEDGER_JID, "HTTP 500")
    # Partial polls are successful polls: they keep completing.
    last = single(partial, "lagsight_flink_last_poll_timestamp_seconds", flink_cluster="fake")
    lagsight.wait_for(lambda m: single(m, "lagsight_flink_last_poll_timestamp_seconds",
                                       flink_cluster="fake") > last,
                      "another Flink poll completing", timeout=FAULT_DEADLINE_SECONDS)
    assert_kafka_half_fresh(lagsight)
    fake_flink.set_faults()
    healthy = wait_healthy(lagsight)
    lagsight.wait_for(lambda m: single(m, "lagsight_flink_poll_partial_errors",
                                       flink_cluster="fake") == 0,
                      "no partial errors", timeout=FAULT_DEADLINE_SECONDS)
    assert is_healthy(healthy)


def test_non_finite_metric_values_are_left_out(kafka_broker, start_lagsight, fake_flink):
    """Flink serves gauges as strings and a gauge can be NaN or infinite. Such a value is no
    measurement: its series is absent (not NaN, not a crash), and a finite value of another
    subtask still wins the max over subtasks."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    wait_healthy(lagsight)
    lag_max_ids = [i for i in RECORDED_METRIC_VALUES if i.endswith("records-lag-max")]
    emit_lag_ids = [i for i in RECORDED_METRIC_VALUES if i.endswith("currentEmitEventTimeLag")]
    busy_ids = sorted(i for i in RECORDED_METRIC_VALUES if i.endswith(".busyTimeMsPerSecond"))
    assert len(lag_max_ids) == len(emit_lag_ids) == len(busy_ids) == 2
    overrides = {**{i: "NaN" for i in lag_max_ids}, **{i: "-Infinity" for i in emit_lag_ids},
                 busy_ids[0]: "Infinity"}
    fake_flink.set_faults(metric_overrides=overrides)

    def source(metrics, name):
        return single(metrics, name, flink_cluster="fake", job_id=ORDERS_JID)
    metrics = lagsight.wait_for(
        lambda m: flink_up(m) == 1 and source(m, "lagsight_flink_source_records_lag_max") is None,
        "the NaN series to vanish", timeout=FAULT_DEADLINE_SECONDS)
    assert lagsight.running
    assert source(metrics, "lagsight_flink_source_emit_event_time_lag_seconds") is None
    assert source(metrics, "lagsight_flink_source_busy_ratio") == pytest.approx(
        float(RECORDED_METRIC_VALUES[busy_ids[1]]) / 1000)
    assert source(metrics, "lagsight_flink_source_pending_records") == sum(
        float(v) for k, v in RECORDED_METRIC_VALUES.items() if k.endswith(".pendingRecords"))
    assert source(metrics, "lagsight_flink_source_watermark_lag_seconds") == pytest.approx(max(
        float(v) for k, v in RECORDED_METRIC_VALUES.items() if k.endswith(".watermarkLag")) / 1000)
    assert all(math.isfinite(value) for (name, _), value in metrics.items()
               if name.startswith("lagsight_flink_"))
    assert is_healthy(metrics)
    assert single(metrics, "lagsight_flink_poll_partial_errors", flink_cluster="fake") == 0
    assert_kafka_half_fresh(lagsight)

    fake_flink.set_faults()
    lagsight.wait_for(lambda m: source(m, "lagsight_flink_source_records_lag_max") == max(
        float(RECORDED_METRIC_VALUES[i]) for i in lag_max_ids), "records_lag_max back",
        timeout=FAULT_DEADLINE_SECONDS)


# --- TLS ------------------------------------------------------------------------------------

def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("fault", ["huge_content_length", "endless_body", "trickle"])
def test_hostile_body_is_cut_off_by_cap_and_deadline(kafka_broker, start_lagsight, fake_flink,
                                                    fault):
    """(a) ``Content-Length: 100000000000`` once aborted lagsight with an uncaught std::bad_alloc;
    (b) an endless streamed body grew it to gigabytes; (c) a body trickling one byte a second held
    a request far past request_timeout. Each now ends the poll (up 0, a clear error) by the
    deadline, lagsight stays up, and its peak RSS stays small. The figures are printed (-s)."""
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)])
    wait_healthy(lagsight)
    pid = lagsight._process.pid
    rss_before = peak_rss_mib(pid)
    expected = {"huge_content_length": f"larger than {MAX_RESPONSE_BYTES} bytes",
                "endless_body": f"larger than {MAX_RESPONSE_BYTES} bytes",
                "trickle": "no complete response within the deadline"}[fault]
    lines = run_cluster_fault(lagsight, fake_flink, expected, overview=fault)
    # Several polls ran into the fault meanwhile; give the hostile server a few more.
    fake_flink.set_faults(overview=fault)
    down = lagsight.wait_for(lambda m: flink_up(m) == 0, "down again", FAULT_DEADLINE_SECONDS)
    time.sleep(3 * REQUEST_TIMEOUT_SECONDS)
    down = lagsight.scrape()
    duration = single(down, "lagsight_flink_poll_duration_seconds", flink_cluster="fake")
    assert duration <= REQUEST_TIMEOUT_SECONDS + 0.5, duration
    rss_after = peak_rss_mib(pid)
    print(f"\n{fault}: peak RSS {rss_before:.1f} -> {rss_after:.1f} MiB, "
          f"last poll {duration:.3f} s, error: {lines[0]}")
    assert rss_after < rss_before + 64, (rss_before, rss_after)
    assert lagsight.running
    fake_flink.set_faults()
    wait_healthy(lagsight)


# --- shutdown during a poll -------------------------------------------------------------------

def _many_jobs_overview(count: int) -> bytes:
    jobs = []
    for i in range(count):
        jobs.append({"jid": f"{i + 1:032x}", "name": f"job-{i}", "state": "RUNNING",
                     "start-time": 1_700_000_000_000, "end-time": -1,
                     "last-modification": 1_700_000_000_000})
    return json.dumps({"jobs": jobs}).encode()


def test_sigterm_during_a_poll_of_many_jobs_exits_cleanly(kafka_broker, tmp_path, lagsight_binary,
                                                         fake_flink):
    """SIGTERM while a poll of 8 jobs (more than max_concurrent_requests = 4) is under way, 10
    times: lagsight must exit 0 each time. With a plain build this only shows a clean exit; the
    use-after-free it guards against (coroutine frames destroyed at shutdown releasing their
    request slot into a freed HTTP client) is only proven under AddressSanitizer: set
    LAGSIGHT_ASAN_BIN to an ASan+UBSan build to run it with that binary instead."""
    import os
    from conftest import LagsightProcess, lagsight_config

    binary = Path(os.environ.get("LAGSIGHT_ASAN_BIN", str(lagsight_binary)))
    overview = _many_jobs_overview(8)
    ROUTES["/jobs/overview"] = overview
    added = []
    for job in json.loads(overview)["jobs"]:
        jid = job["jid"]
        for suffix, answer in (
                ("", stand_in_job_details(ORDERS_JID).replace(ORDERS_JID.encode(), jid.encode())),
                ("/checkpoints", ROUTES[f"/jobs/{ORDERS_JID}/checkpoints"]),
                ("/checkpoints/config", ROUTES[f"/jobs/{ORDERS_JID}/checkpoints/config"]),
                ("/metrics?get=numRestarts", ROUTES[f"/jobs/{ORDERS_JID}/metrics?get=numRestarts"])):
            ROUTES[f"/jobs/{jid}{suffix}"] = answer
            added.append(f"/jobs/{jid}{suffix}")
    try:
        # Each job answers everything, so a poll takes about a second of requests waiting for
        # their turn, and the signal lands with requests both under way and queued.
        fake_flink.response_delay = 0.1
        exit_codes = []
        for attempt in range(10):
            work_dir = tmp_path / f"lagsight-{attempt}"
            work_dir.mkdir()
            process = LagsightProcess(binary, work_dir, lagsight_config(
                kafka_broker.bootstrap, flink=[flink_cluster(fake_flink.url)]))
            process.start()
            with fake_flink._lock:
                fake_flink.requests.clear()
            # Wait until the next poll is past the job list, with job requests waiting for slots.
            wait_until(lambda: any(path.startswith(f"/jobs/{1:032x}")
                                   for path in fake_flink.paths_requested()) or None,
                       FAULT_DEADLINE_SECONDS, "job requests under way")
            time.sleep(0.05 * attempt)  # a different point of the poll each time
            exit_codes.append(process.stop())
            if exit_codes[-1] != 0:
                print(process.log_file.read_text()[-4000:])
        assert exit_codes == [0] * 10
    finally:
        ROUTES["/jobs/overview"] = OVERVIEW
        for path in added:
            del ROUTES[path]
