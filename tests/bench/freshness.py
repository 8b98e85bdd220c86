"""How long after a lagsight poll starts a scrape first gets that poll's data, seen from outside.

lagsight reads Kafka on its own schedule and a scrape sends the last published exposition, so
its own poll duration is not what a user waits for: the poll, its analysis and the render come
between the moment lagsight starts reading Kafka and the moment /metrics shows what it read.
The peers read Kafka inside the scrape, so for them that time is the scrape's duration. To
compare like with like, ``FreshnessProbe`` asks lagsight's /metrics every 50 ms (gzip, reading
on past the first lines only when they show a new render) and, when
``lagsight_kafka_polls_total`` changes, takes

    fresh_at - (lagsight_kafka_last_poll_timestamp_seconds - lagsight_kafka_poll_duration_seconds)

lagsight stamps ``last_poll_timestamp`` with the wall clock when the poll ends (daemon.cpp's
OnPollDone, the same moment it measures the duration from), so the difference is the poll's
start on the same machine clock as ``fresh_at``. A render is requested only once a poll's
analysis is done, so the exposition in which polls_total grew is the first with its data.
fresh_at is when the probe saw that exposition's first lines: late by up to one probe period
(50 ms) plus the probe's own request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from scraping import exposition_blocks, values_in

POLLS = "lagsight_kafka_polls_total"
LAST_POLL = "lagsight_kafka_last_poll_timestamp_seconds"
POLL_DURATION = "lagsight_kafka_poll_duration_seconds"
RENDER = "lagsight_exposition_render_duration_seconds"
PERIOD = 0.05


@dataclass
class FreshPoll:
    """One poll as the probe saw it appear: all in seconds; fresh_at on the Unix clock."""
    polls_total: float
    poll_started: float
    fresh_at: float
    poll_s: float
    render_s: float | None  # the previous render's (the metric lags by one render)

    @property
    def time_to_fresh(self) -> float:
        return self.fresh_at - self.poll_started


@dataclass
class FreshnessProbe:
    """Watches one lagsight's /metrics in a thread until stopped; ``polls`` grows as it sees
    new polls (the one it saw first is left out: it may have appeared long before)."""
    port: int
    polls: list[FreshPoll] = field(default_factory=list)
    errors: int = 0

    def __post_init__(self) -> None:
        self._render_seen: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="freshness")
        self._thread.start()

    def _run(self) -> None:
        seen: float | None = None
        while not self._stop.wait(PERIOD):
            try:
                fresh_at, found = self._read()
            except OSError:
                self.errors += 1
                continue
            polls = found.get(POLLS)
            if fresh_at is None or polls is None or polls == seen:
                continue
            if seen is not None and LAST_POLL in found and POLL_DURATION in found:
                self.polls.append(FreshPoll(polls, found[LAST_POLL] - found[POLL_DURATION],
                                            fresh_at, found[POLL_DURATION], found.get(RENDER)))
            seen = polls

    def _read(self) -> tuple[float | None, dict[str, float]]:
        """One look at /metrics: (when a new exposition was first seen, its values), or
        (None, ...) when it is the one seen last time.

        Families are sorted by name, so the render's duration (a new value every render) is in
        the first lines, and the poll's health lines come after the group series, most of the
        exposition later. The head tells whether the exposition is new; only a new one is read
        on to its health lines, on the same answer, so they are that exposition's.
        """
        found: dict[str, float] = {}
        fresh_at = None
        with exposition_blocks(self.port) as blocks:
            for block in blocks:
                values_in(block, [RENDER, POLLS, LAST_POLL, POLL_DURATION], found)
                if RENDER in found and fresh_at is None:
                    if found[RENDER] == self._render_seen:
                        return None, found
                    fresh_at = time.time()
                if len(found) == 4:
                    break
        if fresh_at is None:  # the first render has no render duration: seen at its end
            fresh_at = time.time()
        self._render_seen = found.get(RENDER)
        return fresh_at, found

    def newest(self) -> FreshPoll | None:
        return self.polls[-1] if self.polls else None

    def wait_for_poll_after(self, unix_time: float, timeout: float) -> FreshPoll:
        """Waits for an exposition from a poll that started after ``unix_time``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            newest = self.newest()
            if newest is not None and newest.poll_started > unix_time:
                return newest
            time.sleep(PERIOD)
        raise TimeoutError(f"no lagsight poll started after {unix_time:.3f} within {timeout} s")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
