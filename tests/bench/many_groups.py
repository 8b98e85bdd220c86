"""Benchmark: poll duration and memory of lagsight against a real broker with many groups.

Starts a real single-node Kafka, creates one topic and N simple groups (offsets committed without
membership, as Flink does), then runs lagsight with a few values of max_concurrent_requests and
prints the poll duration, the process's RSS, and how long /healthz and the start of a /metrics
answer take while polls and their analysis run (a probe asks every 10 ms). Prints numbers;
asserts nothing.

    .venv/bin/python tests/bench/many_groups.py --groups 1000 --partitions 8

With ``--total-shards N`` each concurrency is measured once unsharded and then once per shard.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import statistics
import subprocess
import sys
import tempfile
import multiprocessing
import re
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO / "tests" / "integration"))

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from kafka_broker import KafkaBroker, free_loopback_port  # noqa: E402
from workload import create_topic, produce  # noqa: E402


def commit_groups(bootstrap: str, topic: str, groups: int, partitions: int,
                  first: int = 0) -> None:
    """Commits groups bench-<first> .. bench-<groups - 1>, group g at offset g % 50."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    pending = []
    for g in range(first, groups):
        request = ConsumerGroupTopicPartitions(
            f"bench-{g:05d}", [TopicPartition(topic, p, g % 50) for p in range(partitions)])
        pending.extend(admin.alter_consumer_group_offsets([request], request_timeout=60).values())
        if len(pending) >= 64:
            for future in pending:
                future.result(timeout=60)
            pending.clear()
    for future in pending:
        future.result(timeout=60)


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """The process's resident memory now (VmRSS) or at its peak so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stop_process(process: "subprocess.Popen") -> None:
    """SIGTERM, then SIGKILL after 30 s: a process the benchmark started ends with it."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


class RssSampler:
    """A process's VmRSS sampled every `period` seconds on a thread while the `with` block runs:
    a single reading lands wherever it lands in the process's cycle."""

    def __init__(self, pid: int, period: float) -> None:
        self.samples: list[float] = []
        self._over = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(pid, period), daemon=True)

    def _sample(self, pid: int, period: float) -> None:
        while not self._over.wait(period):
            self.samples.append(rss_mb(pid))

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._over.set()
        self._thread.join()


PROBE_SECONDS = 30


def probe(port: int, stop: "multiprocessing.synchronize.Event", out: "multiprocessing.Queue") -> None:
    """Asks for /healthz (whole answer) and /metrics (until its headers: when sending starts)
    every 10 ms on fresh connections; puts the latencies in milliseconds on `out` at the end.
    A process of its own: in a thread, the GIL would add the main loop's pauses to them."""
    latencies: dict[str, list[float]] = {"/healthz": [], "/metrics": []}
    while not stop.wait(0.01):
        for path, kept in latencies.items():
            started = time.perf_counter()
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                connection.request("GET", path, headers={"Accept-Encoding": "gzip"})
                response = connection.getresponse()
                if path == "/healthz":
                    response.read()
                kept.append((time.perf_counter() - started) * 1000)
                connection.close()
            except OSError:
                pass
    out.put(latencies)


def summary(latencies: dict[str, list[float]]) -> str:
    parts = []
    for path, kept in latencies.items():
        if not kept:
            continue
        ordered = sorted(kept)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        parts.append(f"{path} ms p50={statistics.median(ordered):.1f} p99={p99:.1f} "
                     f"max={ordered[-1]:.1f} (n={len(ordered)})")
    return "; ".join(parts)


def health_line(body: bytes, name: str) -> float | None:
    """The value of the cluster's `name` series, found without parsing the whole exposition."""
    found = re.search(rb"^" + name.encode() + rb"\{[^}]*\} (\S+)$", body, re.MULTILINE)
    return float(found.group(1)) if found else None


def measure(binary: Path, bootstrap: str, work: Path, concurrency: int, polls: int,
            shard_args: list[str] | None = None) -> None:
    config = work / f"lagsight-{concurrency}.yaml"
    config.write_text(f"kafka:\n  - name: bench\n    bootstrap_servers: {bootstrap}\n"
                      f"    poll_interval: 1s\n    request_timeout: 30s\n"
                      f"    max_concurrent_requests: {concurrency}\n")
    port = free_loopback_port()
    process = subprocess.Popen([str(binary), f"--config.file={config}",
                                f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
                                *(shard_args or [])])
    stop = multiprocessing.Event()
    results: multiprocessing.Queue = multiprocessing.Queue()
    prober = multiprocessing.Process(target=probe, args=(port, stop, results), daemon=True)
    try:
        durations: list[float] = []
        last_total = 0.0
        deadline = time.monotonic() + 600
        probe_until = float("inf")
        while (len(durations) < polls or time.monotonic() < probe_until) and \
                time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                                 headers={"Accept-Encoding": "gzip"})
                with urllib.request.urlopen(request, timeout=10) as answer:
                    body = answer.read()
                    if answer.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
            except OSError:
                continue
            total = health_line(body, "lagsight_kafka_polls_total")
            if total and not prober.is_alive():
                prober.start()  # from the first poll on: before it, there is nothing to analyse
                probe_until = time.monotonic() + PROBE_SECONDS
            if total and total > last_total:
                last_total = total
                durations.append(health_line(body, "lagsight_kafka_poll_duration_seconds"))
        series = body.count(b"\n") - body.count(b"\n#")
        print(f"{' '.join(shard_args or [])} max_concurrent_requests={concurrency:3d} "
              f"polls={len(durations)} "
              f"poll_seconds min={min(durations):.3f} max={max(durations):.3f} "
              f"series={series} rss_mb={rss_mb(process.pid):.1f} "
              f"peak_rss_mb={rss_mb(process.pid, 'VmHWM'):.1f}", flush=True)
        stop.set()
        if prober.is_alive():
            print(f"  while polling: {summary(results.get(timeout=120))}", flush=True)
    finally:
        stop.set()
        process.terminate()
        process.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--polls", type=int, default=5)
    parser.add_argument("--concurrency", default="1,16,64",
                        help="values of max_concurrent_requests to run, comma-separated")
    parser.add_argument("--lagsight", type=Path, default=REPO / "build/cmd/lagsight/lagsight")
    parser.add_argument("--total-shards", type=int, default=1,
                        help="above 1: measure each shard of that many in turn "
                             "(--shard=i --total-shards=N), one at a time")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lagsight-bench-"))
    with KafkaBroker(work / "kafka") as broker:
        create_topic(broker.bootstrap, "bench", args.partitions)
        produce(broker.bootstrap, "bench", [100] * args.partitions)
        started = time.monotonic()
        commit_groups(broker.bootstrap, "bench", args.groups, args.partitions)
        print(f"groups={args.groups} partitions={args.partitions} "
              f"(committed in {time.monotonic() - started:.1f}s)", flush=True)
        for concurrency in (int(value) for value in args.concurrency.split(",")):
            measure(args.lagsight, broker.bootstrap, work, concurrency, args.polls)
            for index in range(args.total_shards if args.total_shards > 1 else 0):
                measure(args.lagsight, broker.bootstrap, work, concurrency, args.polls,
                        [f"--shard={index}", f"--total-shards={args.total_shards}"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
