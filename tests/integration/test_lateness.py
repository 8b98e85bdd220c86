"""How late the data is, for the job itself, on real Kafka and a real Flink 2.x MiniCluster.

A steady producer writes 40 records/s; the job reads them through a map whose per-record delay
the test sets: first it keeps up, then it can do 20/s and falls behind, then 60/s and catches
up. Ground truth, read by the test itself: the job's currentOffset from the Flink REST API and
the timestamp the broker stored for the record at currentOffset + 1 (read with assign(), no
group). lagsight's `lagsight_flink_lag_seconds` must be that record's age within the bound the
README gives (as of when Flink took the position, to within one Flink poll, plus the spacing of
the Kafka polls for an interpolated value). The bounds are measured, not assumed: on a loaded
machine a poll of lagsight's, or the test's own reading of the REST API, can come late, and the
truth is then known only to within that gap. And `lagsight_flink_source_catch_up_seconds` must be `+Inf` while the job falls behind, finite and
falling while it catches up, and 0 once it has.
"""

from __future__ import annotations

import math
import re
import time
import uuid

import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from workload import SteadyProducer, create_topic, record_timestamp_ms

FLINK_LINE = "2.x"
PREFIX = f"late-{uuid.uuid4().hex[:6]}"
RATE = 40                 # records/s written
FALL_BEHIND_DELAY_US = 50_000   # 20 records/s: the backlog grows by 20/s
CATCH_UP_DELAY_US = 16_000      # ~60 records/s: the backlog shrinks by ~20/s
# lagsight polls Flink every second and dates a new position to the poll before the one that
# first showed it: up to one poll gap before Flink's refresh (the gap measured from lagsight's
# own last-poll timestamps, at least the configured second). The test reads the REST API twice a
# second: Flink's refresh happened after the start of the last reading that still showed the old
# position, and before the end of the first that showed the new one.
POLL_INTERVAL = 1.0
MOST_POLL_GAP = 10.0  # a 1 s poller this late has stopped, whatever the load
CURRENT = re.compile(r"^\d+\.[^.]+\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)\.currentOffset$")


def rest_current_offset(flink: FlinkJob, jid: str) -> int | None:
    """The job's currentOffset on its one partition, None when unset or not answered in time (a
    loaded machine: the next reading is half a second away)."""
    try:
        vid = flink.source_vertex_id(jid)
        ids = [m["id"] for m in flink.vertex_metrics(jid, vid) if CURRENT.match(m["id"])]
        if not ids:
            return None
        values = [int(float(m["value"])) for m in flink.vertex_metrics(jid, vid, ids)]
    except (OSError, TimeoutError):
        return None
    values = [v for v in values if v >= 0]
    return max(values) if values else None


def largest_gap(times: set[float], floor: float) -> float:
    """The longest time between two consecutive of ``times`` (poll timestamps), at least
    ``floor``."""
    ordered = sorted(times)
    return max([floor] + [b - a for a, b in zip(ordered, ordered[1:])])


def interpolation_bound(age: float, poll_gap: float) -> float:
    """The README's error bound of an interpolated age: the spacing of the two log-end samples
    around the record, one poll gap for the newest 32 polls of lagsight's history, doubling for
    each further 32 polls' span as the older half thins (64 samples kept)."""
    span = 32 * poll_gap
    return poll_gap * 2 ** max(0, math.ceil((age - span) / span))


def one(metrics: promtext.Samples, name: str, **labels: str) -> tuple[dict, float] | None:
    found = promtext.select(metrics, name, **labels)
    assert len(found) <= 1, found
    return next(((dict(k), v) for k, v in found.items()), None)


def test_the_jobs_own_lateness_and_its_catch_up_time(session_broker, lagsight_binary, tmp_path,
                                                     request):
    bootstrap = session_broker.bootstrap
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)
    topic, group, job = f"{PREFIX}-orders", f"{PREFIX}-enrich", f"{PREFIX}-enrich"
    create_topic(bootstrap, topic, 1)
    producer = SteadyProducer(bootstrap, topic, 1, RATE, value_bytes=200)
    delay_file = tmp_path / "delay"
    delay_file.write_text("0")
    spec = JobSpec(name=job, topics=[topic], group=group, checkpoint_ms=1000, delay_file=delay_file)
    lagsight: LagsightProcess | None = None
    try:
        with FlinkJob(FLINK_LINE, [spec], tmp_path / "flink", bootstrap=bootstrap) as flink:
            jid = flink.jobs[job]
            work_dir = tmp_path / "lagsight"
            work_dir.mkdir()
            lagsight = LagsightProcess(lagsight_binary, work_dir, {
                "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
                           "request_timeout": "5s", "groups": {"allow": [f"{PREFIX}-.*"]},
                           "topics": {"allow": [f"{PREFIX}-.*"]}}],
                "flink": [{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": CLUSTER,
                           "poll_interval": "1s", "request_timeout": "5s"}],
                # A short window, so the catch-up pace is the catching up, not the minutes before.
                "diagnosis": {"window": "40s", "lag_threshold_records": 100,
                              "lag_threshold": "2s"},
            })
            _register_log_for_failures(request, "lagsight log", lagsight.log_file)
            lagsight.start()
            labels = {"job_id": jid, "topic": topic, "partition": "0"}

            # Keeping up: caught up, or a second or two late (Flink's position is up to 10 s old,
            # lagsight's lower bound of the age is not).
            lagsight.wait_for(
                lambda m: (s := one(m, "lagsight_flink_lag_seconds", **labels)) and s[1] < 5,
                "the job's lateness while it keeps up", timeout=90)

            # Falling behind: lagsight's value against the true age of the job's next record as of
            # when Flink took the position. The test polls the REST API twice a second, so it sees
            # each new position within half a second of Flink's refresh (every 10 s).
            delay_file.write_text(str(FALL_BEHIND_DELAY_US))
            # Per position: Flink refreshed it within [after, by] (the test's own readings).
            refreshed_within: dict[int, tuple[float, float]] = {}
            written: dict[int, float] = {}
            # position, truth (the record's age at `by`), shown, method, by - after, the
            # record's age when scraped
            compared: list[tuple[int, float, float, str, float, float]] = []
            catch_up_behind: list[float] = []
            flink_polls: set[float] = set()  # when each poll ended
            flink_poll_durations: set[float] = {0.0}
            kafka_polls: set[float] = set()
            previous: tuple[int, float] | None = None  # the last reading: position, its start
            deadline = time.monotonic() + 75
            while time.monotonic() < deadline:
                started = time.time()
                position = rest_current_offset(flink, jid)
                if position is not None:
                    if previous is not None and previous[0] != position:
                        refreshed_within.setdefault(position, (previous[1], time.time()))
                    previous = (position, started)
                metrics = lagsight.scrape()
                flink_polls.update(promtext.select(
                    metrics, "lagsight_flink_last_poll_timestamp_seconds").values())
                flink_poll_durations.update(promtext.select(
                    metrics, "lagsight_flink_poll_duration_seconds").values())
                kafka_polls.update(promtext.select(
                    metrics, "lagsight_kafka_last_poll_timestamp_seconds").values())
                shown = one(metrics, "lagsight_flink_lag_seconds", **labels)
                current = one(metrics, "lagsight_flink_source_current_offset", **labels)
                eta = one(metrics, "lagsight_flink_source_catch_up_seconds", job_id=jid)
                if eta is not None:
                    catch_up_behind.append(eta[1])
                if shown and current and int(current[1]) in refreshed_within and shown[1] > 0:
                    seen = int(current[1])
                    if seen not in written:
                        written[seen] = record_timestamp_ms(bootstrap, topic, 0, seen + 1) / 1000
                    after, by = refreshed_within[seen]
                    compared.append((seen, by - written[seen], shown[1], shown[0]["method"],
                                     by - after, time.time() - written[seen]))
                time.sleep(0.5)
            by_record = [c for c in compared if c[3] == "record_timestamp"]
            assert len({c[0] for c in by_record}) >= 3, compared
            # Between the starts of two polls: between their ends, give or take a poll's length.
            flink_gap = largest_gap(flink_polls, POLL_INTERVAL) + max(flink_poll_durations)
            kafka_gap = largest_gap(kafka_polls, POLL_INTERVAL)
            # The bounds follow the gaps, so the gaps must stay those of a working poller: a
            # lagsight that stopped polling for longer than Flink's 10 s refresh fails here
            # instead of loosening the comparison below.
            assert flink_gap < MOST_POLL_GAP and kafka_gap < MOST_POLL_GAP, \
                (flink_gap, kafka_gap)
            for position, truth, value, method, uncertain, age in compared:
                # lagsight dates a position to the Flink poll before the one that first showed it
                # (up to flink_gap before the refresh); the test knows the refresh only to within
                # `uncertain`. Interpolating adds its error bound either way.
                slack = 0 if method == "record_timestamp" else interpolation_bound(age, kafka_gap)
                assert truth - uncertain - flink_gap - slack <= value <= truth + 0.5 + slack, \
                    (position, truth, value, method, uncertain, flink_gap, kafka_gap, compared)
            # The job really fell behind, and lagsight followed it up, with no sawtooth: one
            # position keeps its value for its ~10 s, where an age taken at each poll would climb
            # by the whole 10 s. (A value Flink still serves after a refresh is dated one refresh
            # back from then on, which moves it by how long the position stood past the refresh:
            # seen here up to ~1 s.)
            assert by_record[-1][1] > by_record[0][1] + 15, compared
            assert by_record[-1][2] > by_record[0][2] + 15, compared
            for position in {c[0] for c in by_record}:
                values = [c[2] for c in by_record if c[0] == position]
                assert max(values) - min(values) < 5.0, (position, values)
            assert catch_up_behind and math.isinf(catch_up_behind[-1]), catch_up_behind

            # Catching up: a finite catch-up time that falls, then 0.
            delay_file.write_text(str(CATCH_UP_DELAY_US))
            etas: list[float] = []

            def caught_up(m: promtext.Samples) -> bool:
                eta = one(m, "lagsight_flink_source_catch_up_seconds", job_id=jid)
                if eta is not None:
                    etas.append(eta[1])
                return eta is not None and eta[1] == 0

            lagsight.wait_for(caught_up, "the catch-up time to reach 0", timeout=180)
            finite = [e for e in etas if 0 < e < math.inf]
            assert len(finite) >= 3, etas
            # Falling: the last finite estimates are below the first ones (the pace is a fit
            # over the window, so single steps can rise while the window fills).
            assert finite[-1] < finite[0], finite
            assert one(lagsight.scrape(), "lagsight_flink_lag_seconds", **labels)[1] < 10
            status, page = lagsight.get("/")
            assert status == 200 and 'class="num catch-up"' in page
    finally:
        producer.stop()
        exit_code = lagsight.stop() if lagsight is not None else 0
    assert exit_code == 0, f"lagsight exited {exit_code} on SIGTERM, not 0"
