"""lagsight under hostile clients: connection floods must not lock out scrapes, reload storms
must not pile up threads or file descriptors.

The flood comes from 127.0.0.1. A scraper from its own address (127.0.0.2, as Prometheus has
one of its own) must get every scrape answered; one that shares the flood's address must not be
locked out: the per-client limit makes the flood displace its own connections, but a scrape
whose connection is opened just before a burst of more than the share from that address may be
displaced with them (oldest unfinished first is what keeps slow-loris connections from holding
the share), so most, not all, of its scrapes are answered. There lagsight polls an address where no broker listens: /metrics is served
all the same. The reload storm runs against the real broker, so every replaced Kafka client has
connections and a poll in flight when it is replaced.
"""

from __future__ import annotations

import http.client
import os
import resource
import signal
import select
import socket
import statistics
from concurrent.futures import ThreadPoolExecutor
import threading
import time
import urllib.error
import urllib.request

import yaml

import promtext
from conftest import wait_until
from kafka_broker import free_loopback_port

SLOW_LORIS_CONNECTIONS = 500
IDLE_CONNECTIONS = 300
ATTACK_SECONDS = 30
SCRAPE_INTERVAL_SECONDS = 1.0
SCRAPE_TIMEOUT_SECONDS = 5.0
# A slow-loris client sends one more header byte this often; closed connections are reopened
# at the same pace, as an attacker would to keep its connections open.
TRICKLE_SECONDS = 2.0
MAX_CONNECTION_OPENS = 40_000  # bounds the attack however fast lagsight closes connections
PARTIAL_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


class Attack:
    """Keeps slow-loris and idle connections open to one port from a thread of its own."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.opens = 0
        self.open_failures = 0
        self.closed_by_server = 0
        self.still_open_each_round: list[int] = []
        self._slow: list[socket.socket] = []
        self._idle: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Attack:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for sock in self._slow + self._idle:
            sock.close()

    def _open(self, slow: bool) -> socket.socket | None:
        if self.opens >= MAX_CONNECTION_OPENS:
            return None
        self.opens += 1
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            if slow:
                sock.sendall(PARTIAL_REQUEST)
            sock.setblocking(False)
            return sock
        except OSError:
            self.open_failures += 1
            return None

    def _refill(self, pool: list[socket.socket], target: int, slow: bool) -> None:
        while len(pool) < target and not self._stop.is_set():
            sock = self._open(slow)
            if sock is None:
                return
            pool.append(sock)

    def _drop_closed(self, pool: list[socket.socket]) -> list[socket.socket]:
        """The connections of ``pool`` the server has not closed; the others are closed here."""
        if not pool:
            return pool
        poller = select.poll()  # select() cannot watch descriptors above 1023
        by_fd = {sock.fileno(): sock for sock in pool}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        readable = [by_fd[fd] for fd, _ in poller.poll(0)]
        gone = set()
        for sock in readable:
            try:
                if sock.recv(4096) == b"":
                    gone.add(sock)
            except BlockingIOError:
                pass
            except OSError:
                gone.add(sock)
        for sock in gone:
            sock.close()
        self.closed_by_server += len(gone)
        return [sock for sock in pool if sock not in gone]

    def _run(self) -> None:
        while not self._stop.is_set():
            self._slow = self._drop_closed(self._slow)
            self._idle = self._drop_closed(self._idle)
            self.still_open_each_round.append(len(self._slow) + len(self._idle))
            self._refill(self._slow, SLOW_LORIS_CONNECTIONS, slow=True)
            self._refill(self._idle, IDLE_CONNECTIONS, slow=False)
            for sock in self._slow:
                try:
                    sock.send(b"a")
                except OSError:
                    pass  # found closed on the next round
            self._stop.wait(TRICKLE_SECONDS)


def scrape(port: int, source: str = "127.0.0.1") -> tuple[int | str, float]:
    """GETs /metrics on a new connection from ``source``; returns (status or error, seconds)."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=SCRAPE_TIMEOUT_SECONDS,
                                            source_address=(source, 0))
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        response.read()
        status: int | str = response.status
    except (http.client.HTTPException, ConnectionError, TimeoutError, OSError) as error:
        status = f"{type(error).__name__}: {error}"
    finally:
        connection.close()
    return status, time.monotonic() - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def test_scrapes_succeed_under_slow_loris_and_idle_connections(start_lagsight):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 4 * (SLOW_LORIS_CONNECTIONS + IDLE_CONNECTIONS)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    lagsight = start_lagsight(f"127.0.0.1:{free_loopback_port()}")

    results: list[tuple[int | str, float]] = []  # from 127.0.0.2
    same_address: list[tuple[int | str, float]] = []  # from the flood's 127.0.0.1
    with Attack(lagsight.port) as attack:
        time.sleep(TRICKLE_SECONDS)  # the first round of connections is open
        deadline = time.monotonic() + ATTACK_SECONDS
        while time.monotonic() < deadline:
            started = time.monotonic()
            results.append(scrape(lagsight.port, "127.0.0.2"))
            same_address.append(scrape(lagsight.port))
            time.sleep(max(0.0, SCRAPE_INTERVAL_SECONDS - (time.monotonic() - started)))

    latencies = [seconds for status, seconds in results if status == 200]
    failures = [status for status, _ in results if status != 200]
    same_answered = sum(status == 200 for status, _ in same_address)
    summary = (
        f"from 127.0.0.2: {len(latencies)} of {len(results)} scrapes answered 200, from the "
        f"flood's address {same_answered} of {len(same_address)}, under {SLOW_LORIS_CONNECTIONS} "
        f"slow-loris + {IDLE_CONNECTIONS} idle connections; latency p50 "
        f"{statistics.median(latencies) * 1000 if latencies else float('nan'):.1f} ms, p90 "
        f"{percentile(latencies, 0.9) * 1000 if latencies else float('nan'):.1f} ms, max "
        f"{max(latencies, default=float('nan')) * 1000:.1f} ms; attacker opened "
        f"{attack.opens} connections ({attack.open_failures} failed), the server closed "
        f"{attack.closed_by_server}; attacker connections still open each round: "
        f"{attack.still_open_each_round}")
    print(summary)
    assert attack.opens >= SLOW_LORIS_CONNECTIONS + IDLE_CONNECTIONS, summary
    assert len(results) >= ATTACK_SECONDS * 0.8, summary
    assert not failures, f"failed scrapes: {failures[:5]}; {summary}"
    assert same_answered >= 0.8 * len(same_address), summary  # not locked out

    # The shedding shows on /metrics (rendered at the next poll): 800 connections from one
    # address against a per-client share of 64 make room by closing that address's own oldest,
    # never by refusing the scrapers; and no more closures than the attacker saw.
    def shed(metrics, limit: str) -> float:
        return sum(promtext.select(metrics, "lagsight_http_connections_shed_total",
                                   limit=limit).values())
    metrics = lagsight.wait_for(lambda m: shed(m, "client") > 0, "the shedding to be counted")
    counted = shed(metrics, "client") + shed(metrics, "server")
    print(f"lagsight counted {counted:.0f} connections shed")
    assert counted <= attack.closed_by_server + SLOW_LORIS_CONNECTIONS + IDLE_CONNECTIONS, summary
    assert sum(promtext.select(metrics, "lagsight_http_connections_refused_total").values()) == 0


RELOADS = 300
RELOAD_STORM_SECONDS = 17  # the pace of the storm that took threads from 8 to 683
SETTLE_SECONDS = 60
# What a reload may leave behind for good: the last config's client (a few librdkafka threads
# and sockets) can differ from the first one's in what it has opened so far.
THREADS_BOUND = 6
FDS_BOUND = 12


def thread_and_fd_counts(pid: int) -> tuple[int, int]:
    return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


def post_reload(port: int) -> int | str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/-/reload", method="POST", data=b"")
    try:
        with urllib.request.urlopen(request, timeout=SCRAPE_TIMEOUT_SECONDS) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
        return f"{type(error).__name__}: {error}"


def test_a_reload_storm_leaves_no_threads_or_descriptors_behind(kafka_broker, start_lagsight):
    # A second bootstrap address that does not answer (a standby that is down) makes each poll
    # wait request_timeout (5 s) for its identity, as a large or distant cluster's polls take
    # seconds: replaced clients then still have polls in flight or queued.
    standby = f"127.0.0.1:{free_loopback_port()}"
    lagsight = start_lagsight(f"{kafka_broker.bootstrap},{standby}")
    pid = lagsight._process.pid
    # Two valid configs that differ in the cluster's settings: each reload replaces its client.
    configs = []
    for interval in ("1s", "2s"):
        config = yaml.safe_load(yaml.safe_dump(lagsight.config))
        config["kafka"][0]["poll_interval"] = interval
        configs.append(yaml.safe_dump(config, sort_keys=False))
    lagsight.wait_for_fresh_poll(time.time())
    threads_before, fds_before = thread_and_fd_counts(pid)

    peak_threads, peak_fds = threads_before, fds_before
    post_answers = []
    started = time.monotonic()
    for number in range(RELOADS):
        lagsight.config_file.write_text(configs[(number + 1) % 2])
        if number % 2:
            post_answers.append(post_reload(lagsight.port))
        else:
            lagsight.send_signal(signal.SIGHUP)
        threads, fds = thread_and_fd_counts(pid)
        peak_threads, peak_fds = max(peak_threads, threads), max(peak_fds, fds)
        time.sleep(max(0.0, started + (number + 1) * RELOAD_STORM_SECONDS / RELOADS
                       - time.monotonic()))
    storm_seconds = time.monotonic() - started

    def settled() -> tuple[int, int] | None:
        threads, fds = thread_and_fd_counts(pid)
        if threads <= threads_before + THREADS_BOUND and fds <= fds_before + FDS_BOUND:
            return threads, fds
        return None
    settle_started = time.monotonic()
    try:
        threads_after, fds_after = wait_until(settled, SETTLE_SECONDS, "threads and fds to settle")
    except AssertionError:
        threads_after, fds_after = thread_and_fd_counts(pid)
    summary = (f"{RELOADS} reloads in {storm_seconds:.1f} s: threads {threads_before} -> peak "
               f"{peak_threads} -> {threads_after}, fds {fds_before} -> peak {peak_fds} -> "
               f"{fds_after} ({time.monotonic() - settle_started:.1f} s after the storm)")
    print(summary)
    assert all(answer == 200 for answer in post_answers), f"{post_answers[:5]}; {summary}"
    assert threads_after <= threads_before + THREADS_BOUND, summary
    assert fds_after <= fds_before + FDS_BOUND, summary
    # Still polling, with the last configuration.
    lagsight.wait_for_fresh_poll(time.time())


def test_simultaneous_reloads_of_one_change_apply_it_once(kafka_broker, start_lagsight):
    lagsight = start_lagsight(kafka_broker.bootstrap)
    pid = lagsight._process.pid
    config = yaml.safe_load(yaml.safe_dump(lagsight.config))
    config["kafka"][0]["poll_interval"] = "2s"
    threads_before, fds_before = thread_and_fd_counts(pid)

    def applied() -> int:
        return lagsight.log_file.read_text(errors="replace").count("configuration reloaded")
    applied_before = applied()
    lagsight.config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda _: post_reload(lagsight.port), range(20)))
    # SIGHUPs sent at once merge into one or a few (signals are not queued); none reloads again.
    for _ in range(20):
        lagsight.send_signal(signal.SIGHUP)
    wait_until(lambda: lagsight.log_file.read_text(errors="replace").count(
        "configuration unchanged") >= 20, 10, "19 POSTs and a SIGHUP to find the file unchanged")
    time.sleep(1)  # any SIGHUP still in delivery
    assert answers == [200] * 20
    assert applied() - applied_before == 1
    threads, fds = thread_and_fd_counts(pid)
    assert threads <= threads_before + THREADS_BOUND and fds <= fds_before + FDS_BOUND, (
        f"threads {threads_before} -> {threads}, fds {fds_before} -> {fds}")
