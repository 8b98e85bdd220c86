"""Flink's answers arrive late, on real Kafka + real Flink: the diagnosis must not blame the job.

lagsight polls Kafka and Flink on their own timers, so at a Kafka poll the Flink snapshot is as
old as the Flink poll took, and older after a stall. Judged against the time of the Kafka poll,
a healthy job that checkpoints every second looked overdue: CI froze for 12 s once, its Kafka
polls ran before the next Flink poll, and every such job showed checkpoints_failing. Here:

1. Flink's REST API answers every request 1 s late (a TCP proxy: a loaded JobManager), so a
   Flink poll takes seconds (the build before the fix showed checkpoints_failing every ~7 s);
2. at full speed again, lagsight and the Flink MiniCluster's JVM stand still together for 20 s
   right after a Flink poll (SIGSTOP: a VM pause, a swap storm; the broker, elsewhere, runs on),
   so the Kafka polls after it see the snapshot from before;
3. lagsight alone stands still for 20 s (its node pauses; Flink checkpoints on).

Throughout lagsight may show only ``healthy``, and its Flink source stays up (no poll fails, so
the late snapshot is what was judged). Ground truth that each happened comes from the real
systems: a REST request through the proxy timed here, /proc saying the processes were stopped,
Flink's own checkpoint history showing the gap the stall left. One broker (the session's), one
Flink cluster and one lagsight.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request
import uuid
from pathlib import Path

import promtext
from conftest import (CLUSTER, LagsightProcess, _register_log_for_failures, lagsight_config,
                      wait_until)
from flink_job import FlinkJob, JobSpec
from scenario_report import DiagnosisWatch
from tcp_proxy import TcpProxy
from workload import SteadyProducer, create_topic

PREFIX = f"late-{uuid.uuid4().hex[:6]}"
REST_DELAY_SECONDS = 1.0
STALL_SECONDS = 20  # far beyond the 8 s after which a 1 s interval's checkpoint is overdue
OBSERVE_SECONDS = 30


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat: T while stopped."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def stopped(pids: list[int], seconds: float) -> None:
    """SIGSTOPs every pid, checks the kernel says they stopped, waits, SIGCONTs them."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: all(process_state(pid) == "T" for pid in pids), 5,
                   f"{pids} to be stopped")
        time.sleep(seconds)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def checkpoint_history(flink: FlinkJob, jid: str) -> list[tuple[int, str, int]]:
    """(id, status, trigger time in ms) of each checkpoint in Flink's history, oldest first."""
    status, body = flink.checkpoints(jid)
    assert status == 200, body
    return sorted((c["id"], c["status"], c["trigger_timestamp"]) for c in body["history"])


def largest_trigger_gap(history: list[tuple[int, str, int]]) -> float:
    """Seconds between the two checkpoints of ``history`` triggered furthest apart."""
    triggers = sorted(trigger for _, _, trigger in history)
    return max((b - a for a, b in zip(triggers, triggers[1:])), default=0) / 1000


def wait_for_trigger_gap(flink: FlinkJob, jid: str, at_least: float, timeout: float) -> None:
    """Waits until Flink's checkpoint history holds a trigger gap of ``at_least`` seconds; the
    failure names the last history read and the job's state."""
    seen: list[tuple[int, str, int]] = []

    def gap_shown() -> bool:
        seen[:] = checkpoint_history(flink, jid)
        return largest_trigger_gap(seen) >= at_least
    try:
        wait_until(gap_shown, timeout, f"Flink's checkpoint history to show a {at_least} s gap")
    except AssertionError as error:
        _, job = flink.rest_get(f"/jobs/{jid}")
        state = job.get("state") if isinstance(job, dict) else job
        raise AssertionError(f"{error}; last history (id, status, trigger ms): {seen}; "
                             f"job state {state}") from None


def completed_checkpoints(flink: FlinkJob, jid: str) -> int:
    status, body = flink.checkpoints(jid)
    assert status == 200, body
    return body["counts"]["completed"]


def flink_poll_state(lagsight: LagsightProcess) -> tuple[float, float, float]:
    """(lagsight_flink_up, poll failures so far, completion time of the last good poll)."""
    metrics = lagsight.scrape()

    def value(name: str) -> float:
        (only,) = promtext.select(metrics, name, flink_cluster="mini").values()
        return only
    return (value("lagsight_flink_up"), value("lagsight_flink_poll_failures_total"),
            value("lagsight_flink_last_poll_timestamp_seconds"))


def right_after_a_flink_poll(lagsight: LagsightProcess) -> None:
    """Returns as soon as a Flink poll has completed: the next starts a poll interval later."""
    _, _, last = flink_poll_state(lagsight)
    wait_until(lambda: flink_poll_state(lagsight)[2] > last, 30, "a Flink poll to complete",
               interval=0.05)


def healthy_throughout(watch: DiagnosisWatch, seconds: float) -> None:
    """Watches ``seconds`` more, until healthy again; nothing but healthy since the clock."""
    watch.hold(seconds)
    watch.wait_for("healthy", 60, since=time.monotonic() - 1)
    assert watch.false_causes("healthy", set()) == [], watch.history()


def test_late_answers_are_judged_when_flink_gave_them(session_broker, lagsight_binary, tmp_path,
                                                      request):
    bootstrap = session_broker.bootstrap
    topic = group = name = f"{PREFIX}-orders"
    create_topic(bootstrap, topic, 2)
    producer = SteadyProducer(bootstrap, topic, 2, 20)
    lagsight: LagsightProcess | None = None
    proxy: TcpProxy | None = None
    try:
        # Flink's REST history keeps 10 checkpoints by default: 10 s at this job's 1 s interval,
        # which CI's loaded machine once spent before the stall's gap was read back (the check
        # timed out). 100 keep it readable for over a minute; only this ground truth reads the
        # history (lagsight reads the counts and the latest checkpoints).
        with FlinkJob("2.x", [JobSpec(name, [topic], group=group)], tmp_path / "flink",
                      bootstrap=bootstrap, conf={"web.checkpoints.history": "100"}) as flink:
            _register_log_for_failures(request, "flink log", flink.log_file)
            jid = flink.jobs[name]
            host, port = flink.rest_url.removeprefix("http://").split(":")
            proxy = TcpProxy((host, int(port)), delay=REST_DELAY_SECONDS)
            started = time.monotonic()
            with urllib.request.urlopen(f"http://127.0.0.1:{proxy.port}/overview",
                                        timeout=10) as response:
                assert response.status == 200
            assert time.monotonic() - started >= REST_DELAY_SECONDS

            work_dir = tmp_path / "lagsight"
            work_dir.mkdir()
            config = lagsight_config(
                bootstrap, groups={"allow": [f"{PREFIX}.*"]}, topics={"allow": [f"{PREFIX}.*"]},
                flink=[{"name": "mini", "rest_url": f"http://127.0.0.1:{proxy.port}",
                        # lagsight's default request_timeout (10 s): a poll of 8 requests 1 s late
                        # each stays within its deadline (3 x request_timeout) on a loaded 2-core
                        # machine; with 5 s, CI saw one reach it at 15 s.
                        "kafka_cluster": CLUSTER, "poll_interval": "1s"}])
            config["diagnosis"] = {"window": "30s", "confirm_polls": 2,
                                   "lag_threshold_records": 400}
            lagsight = LagsightProcess(lagsight_binary, work_dir, config)
            _register_log_for_failures(request, "lagsight log", lagsight.log_file)
            lagsight.start()
            wait_until(lambda: flink.source_commit_counters(jid)["commitsSucceeded"] >= 2, 150,
                       "the job to commit twice")
            with DiagnosisWatch(lagsight, kafka_cluster=CLUSTER, group=group,
                                job_name=name) as watch:
                # 1. Slow answers: every Flink poll takes several request delays.
                watch.wait_for("healthy", 150)
                watch.restart_clock()
                up, failures, _ = flink_poll_state(lagsight)
                healthy_throughout(watch, OBSERVE_SECONDS)
                durations = promtext.select(lagsight.scrape(),
                                            "lagsight_flink_poll_duration_seconds",
                                            flink_cluster="mini")
                assert list(durations.values())[0] >= 4 * REST_DELAY_SECONDS, durations
                assert (up, flink_poll_state(lagsight)[:2]) == (1, (1, failures))

                # 2. The whole machine stands still: lagsight and the Flink JVM.
                proxy.delay = 0
                watch.wait_for("healthy", 60, since=time.monotonic())
                watch.restart_clock()
                assert largest_trigger_gap(checkpoint_history(flink, jid)) < STALL_SECONDS - 1
                assert flink.pid is not None
                _, failures, _ = flink_poll_state(lagsight)
                right_after_a_flink_poll(lagsight)
                stopped([lagsight.pid, flink.pid], STALL_SECONDS)
                wait_for_trigger_gap(flink, jid, STALL_SECONDS - 1, 30)
                healthy_throughout(watch, OBSERVE_SECONDS)
                assert flink_poll_state(lagsight)[:2] == (1, failures)

                # 3. lagsight's host alone stands still; Flink checkpoints on meanwhile.
                watch.restart_clock()
                completed = completed_checkpoints(flink, jid)
                right_after_a_flink_poll(lagsight)
                stopped([lagsight.pid], STALL_SECONDS)
                assert completed_checkpoints(flink, jid) > completed
                healthy_throughout(watch, OBSERVE_SECONDS)
                assert flink_poll_state(lagsight)[:2] == (1, failures)
            assert lagsight.running
    finally:
        producer.stop()
        if lagsight is not None:
            assert lagsight.stop() == 0, "lagsight did not exit 0 on SIGTERM (see its log)"
        if proxy is not None:
            proxy.close()
