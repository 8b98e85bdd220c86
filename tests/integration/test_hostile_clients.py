"""The HTTP server under hostile clients: slow-loris and idle connections must not lock out scrapes.

All clients share 127.0.0.1 with the scraper, so this also checks that the per-client connection
limit makes a flood displace its own connections rather than lock out a scraper from the same
address. lagsight polls an address where no broker listens: /metrics is served all the same.
"""

from __future__ import annotations

import resource
import select
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request

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


def scrape(port: int) -> tuple[int | str, float]:
    """GETs /metrics on a new connection; returns (status or error, seconds)."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=SCRAPE_TIMEOUT_SECONDS) as response:
            response.read()
            status: int | str = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
        status = f"{type(error).__name__}: {error}"
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

    results: list[tuple[int | str, float]] = []
    with Attack(lagsight.port) as attack:
        time.sleep(TRICKLE_SECONDS)  # the first round of connections is open
        deadline = time.monotonic() + ATTACK_SECONDS
        while time.monotonic() < deadline:
            started = time.monotonic()
            results.append(scrape(lagsight.port))
            time.sleep(max(0.0, SCRAPE_INTERVAL_SECONDS - (time.monotonic() - started)))

    latencies = [seconds for status, seconds in results if status == 200]
    failures = [status for status, _ in results if status != 200]
    summary = (
        f"{len(latencies)} of {len(results)} scrapes answered 200 under {SLOW_LORIS_CONNECTIONS} "
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
