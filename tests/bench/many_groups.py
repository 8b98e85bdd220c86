"""Benchmark: poll duration and memory of lagsight against a real broker with many groups.

Starts a real single-node Kafka, creates one topic and N simple groups (offsets committed without
membership, as Flink does), then runs lagsight with a few values of max_concurrent_requests and
prints the poll duration and the process's RSS. Prints numbers; asserts nothing.

    .venv/bin/python tests/bench/many_groups.py --groups 1000 --partitions 8
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO / "tests" / "integration"))

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
import promtext  # noqa: E402
from kafka_broker import KafkaBroker, free_loopback_port  # noqa: E402
from workload import create_topic, produce  # noqa: E402


def commit_groups(bootstrap: str, topic: str, groups: int, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    pending = []
    for g in range(groups):
        request = ConsumerGroupTopicPartitions(
            f"bench-{g:05d}", [TopicPartition(topic, p, g % 50) for p in range(partitions)])
        pending.extend(admin.alter_consumer_group_offsets([request], request_timeout=60).values())
        if len(pending) >= 64:
            for future in pending:
                future.result(timeout=60)
            pending.clear()
    for future in pending:
        future.result(timeout=60)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(binary: Path, bootstrap: str, work: Path, concurrency: int, polls: int) -> None:
    config = work / f"lagsight-{concurrency}.yaml"
    config.write_text(f"kafka:\n  - name: bench\n    bootstrap_servers: {bootstrap}\n"
                      f"    poll_interval: 1s\n    request_timeout: 30s\n"
                      f"    max_concurrent_requests: {concurrency}\n")
    port = free_loopback_port()
    process = subprocess.Popen([str(binary), f"--config.file={config}",
                                f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"])
    try:
        durations: list[float] = []
        last_total = 0.0
        deadline = time.monotonic() + 600
        while len(durations) < polls and time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
            except OSError:
                continue
            metrics = promtext.parse(body.decode())
            totals = list(promtext.select(metrics, "lagsight_kafka_polls_total").values())
            if totals and totals[0] > last_total:
                last_total = totals[0]
                durations.extend(promtext.select(metrics, "lagsight_kafka_poll_duration_seconds").values())
        series = body.count(b"\n") - body.count(b"\n#")
        print(f"max_concurrent_requests={concurrency:3d} polls={len(durations)} "
              f"poll_seconds min={min(durations):.3f} max={max(durations):.3f} "
              f"series={series} rss_mb={rss_mb(process.pid):.1f}", flush=True)
    finally:
        process.terminate()
        process.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--polls", type=int, default=5)
    parser.add_argument("--lagsight", type=Path, default=REPO / "build/cmd/lagsight/lagsight")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lagsight-bench-"))
    with KafkaBroker(work / "kafka") as broker:
        create_topic(broker.bootstrap, "bench", args.partitions)
        produce(broker.bootstrap, "bench", [100] * args.partitions)
        started = time.monotonic()
        commit_groups(broker.bootstrap, "bench", args.groups, args.partitions)
        print(f"groups={args.groups} partitions={args.partitions} "
              f"(committed in {time.monotonic() - started:.1f}s)", flush=True)
        for concurrency in (1, 16, 64):
            measure(args.lagsight, broker.bootstrap, work, concurrency, args.polls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
