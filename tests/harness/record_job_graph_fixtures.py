#!/usr/bin/env python3
"""Records the job graph and vertex loads of real Flink jobs into tests/unit/testdata/flink-job-graph/<line>/.

For each Flink line it starts a real Kafka broker and a MiniCluster (tests/harness/flink) with:

- ``slowjob``: topic ``slow`` (4 partitions, 20,000 records waiting, 300 records/s arriving),
  parallelism 2, a map that sleeps 5 ms per record: the map is the bottleneck, its source is
  backpressured;
- ``finejob``: topic ``fine`` (2 partitions, 50 records/s), keeps up;
- ``hotjob``: topic ``hot`` (4 partitions, 8,000 records waiting on partition 0 alone, 200
  records/s arriving, 17 of every 20 on partition 0), parallelism 4, a map that sleeps 5 ms per
  record: the map subtask fed with partition 0 works flat out, the others nearly idle (skew);

waits 45 s (Flink's per-second rates average over its last minute) and until every vertex of
``slowjob`` has a non-empty load answer (a loaded machine reports late: Flink answers [] until
then; an idle vertex may answer [] for longer), then
saves, per job, the
answer of ``GET /jobs/:jid`` (``<job>_job.json``) and per vertex the answer of
``GET /jobs/:jid/vertices/:vid/subtasks/metrics?get=...&agg=max,avg,sum``
(``<job>_<source|map>_load.json``) and of ``GET /jobs/:jid/vertices/:vid/backpressure``
(``<job>_<source|map>_backpressure.json``), the bodies as received. ``slowjob`` is saved as
``slow_map``, ``finejob`` as ``healthy``, ``hotjob`` as ``hot_partition``. The unit tests (tests/unit/bottleneck_test.cpp) read them.

    .venv/bin/python tests/harness/record_job_graph_fixtures.py [--version 1.20|2.x]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flink_job import VERSIONS, FlinkJob, JobSpec  # noqa: E402
from kafka_broker import KafkaBroker  # noqa: E402
from workload import SteadyProducer, create_topic, make_topic, produce  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "unit" / "testdata" / "flink-job-graph"
LOAD_QUERY = ("get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,idleTimeMsPerSecond,"
              "numRecordsInPerSecond,numRecordsOutPerSecond&agg=max,avg,sum")
SAVED_AS = {"slowjob": "slow_map", "finejob": "healthy", "hotjob": "hot_partition"}


def raw_get(flink: FlinkJob, path: str) -> str:
    import urllib.request
    with urllib.request.urlopen(flink.rest_url + path, timeout=10) as response:
        assert response.status == 200, f"GET {path}: HTTP {response.status}"
        return response.read().decode()


def all_loads_reported(flink: FlinkJob, jobs: list[dict]) -> bool:
    for job in jobs:
        _, detail = flink.rest_get(f"/jobs/{job['jid']}")
        for vertex in detail["vertices"]:
            status, body = flink.rest_get(
                f"/jobs/{job['jid']}/vertices/{vertex['id']}/subtasks/metrics?{LOAD_QUERY}")
            if status != 200 or not body or not any(m["id"] == "busyTimeMsPerSecond" for m in body):
                return False
    return True


def record_line(line: str, work: Path) -> None:
    out = OUT / line
    out.mkdir(parents=True, exist_ok=True)
    with KafkaBroker(work / "kafka") as broker:
        producers = [make_topic(broker.bootstrap, "slow", 4, prefill=20000, rate=300),
                     make_topic(broker.bootstrap, "fine", 2, rate=50)]
        create_topic(broker.bootstrap, "hot", 4)
        produce(broker.bootstrap, "hot", [8000, 0, 0, 0])
        producers.append(SteadyProducer(broker.bootstrap, "hot", 4, 200, weights=[17, 1, 1, 1]))
        specs = [JobSpec("slowjob", ["slow"], group="slowjob", delay_us=5000, parallelism=2),
                 JobSpec("finejob", ["fine"], group="finejob"),
                 JobSpec("hotjob", ["hot"], group="hotjob", delay_us=5000, parallelism=4)]
        try:
            with FlinkJob(line, specs, work / "flink", bootstrap=broker.bootstrap) as flink:
                time.sleep(45)
                status, jobs = flink.rest_get("/jobs/overview")
                assert status == 200, status
                deadline = time.monotonic() + 180
                slow = [job for job in jobs["jobs"] if job["name"] in ("slowjob", "hotjob")]
                while not all_loads_reported(flink, slow):
                    assert time.monotonic() < deadline, "vertex loads never reported"
                    time.sleep(2)
                for job in jobs["jobs"]:
                    name = SAVED_AS[job["name"]]
                    detail_text = raw_get(flink, f"/jobs/{job['jid']}")
                    (out / f"{name}_job.json").write_text(detail_text)
                    _, detail = flink.rest_get(f"/jobs/{job['jid']}")
                    for vertex in detail["vertices"]:
                        kind = "source" if vertex["name"].startswith("Source:") else "map"
                        body = raw_get(flink, f"/jobs/{job['jid']}/vertices/{vertex['id']}"
                                              f"/subtasks/metrics?{LOAD_QUERY}")
                        (out / f"{name}_{kind}_load.json").write_text(body)
                        body = raw_get(flink, f"/jobs/{job['jid']}/vertices/{vertex['id']}"
                                              f"/backpressure")
                        (out / f"{name}_{kind}_backpressure.json").write_text(body)
        finally:
            for producer in producers:
                if producer is not None:
                    producer.stop()
    print(f"recorded Flink {line} into {out}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", choices=VERSIONS, action="append")
    args = parser.parse_args(argv)
    for line in args.version or VERSIONS:
        with tempfile.TemporaryDirectory() as work:
            record_line(line, Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
