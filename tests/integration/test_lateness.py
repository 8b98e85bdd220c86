"""How late the data is, for the job itself, on real Kafka and a real Flink 2.x MiniCluster.

A steady producer writes 40 records/s; the job reads them through a map whose per-record delay
the test sets: first it keeps up, then it can do 20/s and falls behind, then 60/s and catches
up. Ground truth, read by the test itself: the job's currentOffset from the Flink REST API and
the timestamp the broker stored for the record at currentOffset + 1 (read with assign(), no
group). lagsight's `lagsight_flink_lag_seconds` must be that record's age within the bound the
README gives (as of when Flink took the position, to within one Flink poll, here 1 s),
and `lagsight_flink_source_catch_up_seconds` must be `+Inf` while the job falls behind, finite and
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
# first showed it: up to that much before Flink's refresh. The test, polling twice a second,
# sees the refresh up to half a second (plus its own request time) late.
POSITION_AGE_BOUND = 1.0
SCRAPE_SLACK = 1.5
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
            first_seen: dict[int, float] = {}
            written: dict[int, float] = {}
            compared: list[tuple[int, float, float, str]] = []  # position, truth, shown, method
            catch_up_behind: list[float] = []
            initial = rest_current_offset(flink, jid)
            deadline = time.monotonic() + 75
            while time.monotonic() < deadline:
                position = rest_current_offset(flink, jid)
                if position is not None and position != initial:
                    first_seen.setdefault(position, time.time())
                metrics = lagsight.scrape()
                shown = one(metrics, "lagsight_flink_lag_seconds", **labels)
                current = one(metrics, "lagsight_flink_source_current_offset", **labels)
                eta = one(metrics, "lagsight_flink_source_catch_up_seconds", job_id=jid)
                if eta is not None:
                    catch_up_behind.append(eta[1])
                if shown and current and int(current[1]) in first_seen and shown[1] > 0:
                    seen = int(current[1])
                    if seen not in written:
                        written[seen] = record_timestamp_ms(bootstrap, topic, 0, seen + 1) / 1000
                    compared.append((seen, first_seen[seen] - written[seen], shown[1],
                                     shown[0]["method"]))
                time.sleep(0.5)
            by_record = [c for c in compared if c[3] == "record_timestamp"]
            assert len({c[0] for c in by_record}) >= 3, compared
            for position, truth, value, method in compared:
                # lagsight dates a position to the Flink poll before the one that first showed it
                # (POSITION_AGE_BOUND before); the test saw it within SCRAPE_SLACK of Flink's
                # refresh. Interpolating adds up to one Kafka poll (1 s) either way.
                slack = 0 if method == "record_timestamp" else 1.0
                assert truth - POSITION_AGE_BOUND - SCRAPE_SLACK - slack <= value \
                    <= truth + 0.5 + slack, (position, truth, value, method, compared)
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
