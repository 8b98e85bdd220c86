"""Benchmark: how fast lagsight reads the record timestamps behind lag in seconds.

Lag in seconds needs the timestamp of the record at each group's position (its oldest unconsumed
record). Where consumers move, those positions are new every poll, and lagsight reads up to
`lag_seconds_fetch_budget` (default 500) of them per poll. This bench makes every poll read a
full budget of new positions, on a real single-node Kafka:

- one topic of 50 partitions, `--records` records per partition (200-byte values);
- `--groups` simple groups (as Flink's: no members) committed at positions spread over each
  partition and different per partition, so that nearly every group-partition is a distinct
  position (200 groups: 10,000 positions, 200 per partition);
- lagsight at a 3 s poll with the default budget: each poll reads the 500 uncached positions with
  the largest lags, until all are cached.

It prints, per poll, the time the "record timestamps" phase took (lagsight's debug log), the
positions read (lagsight_kafka_record_timestamp_fetches_total) and the positions dated (the
growth of lagsight_kafka_record_timestamp_cache_entries: read, or found among the records an
earlier read passed on its way), and over the polls until every position is dated, the positions
dated per second of that phase. Asserts nothing: it prints numbers.

    .venv/bin/python tests/bench/record_timestamps.py [--lagsight build/cmd/lagsight/lagsight]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))

from confluent_kafka import TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from confluent_kafka import ConsumerGroupTopicPartitions  # noqa: E402

from kafka_broker import KafkaBroker, free_loopback_port  # noqa: E402
from workload import SteadyProducer, create_topic  # noqa: E402

TOPIC = "ts-bench"
PARTITIONS = 50
PHASE = re.compile(r"kafka ts: poll of \d+ groups: .*record timestamps ([0-9.]+) s")


def fill(bootstrap: str, records: int) -> None:
    """`records` records of 200 bytes on each partition, as a steady producer writes them."""
    create_topic(bootstrap, TOPIC, PARTITIONS)
    producer = SteadyProducer(bootstrap, TOPIC, PARTITIONS, rate=50_000, value_bytes=200)
    while producer.sent < records * PARTITIONS:
        time.sleep(0.2)
    producer.stop()


def commit(bootstrap: str, groups: int, records: int) -> None:
    """Group g commits partition p at a position of its own, spread over the partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    pending = []
    for g in range(groups):
        offsets = [TopicPartition(TOPIC, p, (g * (records // groups) + p * 7) % records)
                   for p in range(PARTITIONS)]
        pending.extend(admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(f"ts-{g:04d}", offsets)], request_timeout=60).values())
    for future in pending:
        future.result(timeout=60)


def metric(port: int, name: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
    return None


def run(binary: Path, bootstrap: str, work: Path, positions: int
        ) -> list[tuple[float, int, int]]:
    """(phase seconds, positions read, positions dated) of each poll, until every position is
    dated (lagsight_kafka_record_timestamp_cache_entries reaches ``positions``): read, or found
    among the records an earlier read passed on its way."""
    port = free_loopback_port()
    config = work / "lagsight.yaml"
    config.write_text(f"""
kafka:
  - name: ts
    bootstrap_servers: {bootstrap}
    poll_interval: 3s
    groups: {{allow: ["ts-.*"]}}
""")
    log_path = work / "lagsight.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([str(binary), f"--config.file={config}",
                                    f"--web.listen-address=127.0.0.1:{port}",
                                    "--log.level=debug"], stdout=log, stderr=subprocess.STDOUT)
    polls: list[tuple[float, int, int]] = []
    try:
        deadline = time.monotonic() + 600
        last_fetches = last_dated = 0.0
        seen_lines = 0
        while time.monotonic() < deadline and last_dated < positions:
            time.sleep(1)
            try:
                fetches = metric(port, "lagsight_kafka_record_timestamp_fetches_total")
                dated = metric(port, "lagsight_kafka_record_timestamp_cache_entries")
            except OSError:
                continue
            lines = PHASE.findall(log_path.read_text(errors="replace"))
            for phase in lines[seen_lines:]:
                polls.append((float(phase), 0, 0))
            seen_lines = len(lines)
            if fetches is None or dated is None or not polls:
                continue
            if fetches > last_fetches or dated > last_dated:
                phase, _, _ = polls[-1]
                polls[-1] = (phase, int(fetches - last_fetches), int(dated - last_dated))
                last_fetches, last_dated = fetches, dated
    finally:
        process.terminate()
        process.wait(30)
    return polls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lagsight", type=Path,
                        default=REPO / "build" / "cmd" / "lagsight" / "lagsight")
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--records", type=int, default=4000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, KafkaBroker(Path(tmp) / "kafka") as broker:
        started = time.monotonic()
        fill(broker.bootstrap, args.records)
        commit(broker.bootstrap, args.groups, args.records)
        print(f"{args.groups} groups x {PARTITIONS} partitions of {args.records} records "
              f"ready in {time.monotonic() - started:.0f} s")
        polls = run(args.lagsight, broker.bootstrap, Path(tmp), args.groups * PARTITIONS)
    for index, (phase, read, dated) in enumerate(polls):
        print(f"poll {index + 1}: record timestamps {phase:.3f} s, {read} positions read, "
              f"{dated} dated")
    working = [poll for poll in polls if poll[2] > 0]
    if working:
        seconds = sum(phase for phase, _, _ in working)
        print(f"polls until all {args.groups * PARTITIONS} positions were dated: {len(working)}; "
              f"phase median {statistics.median(p for p, _, _ in working):.3f} s; "
              f"{sum(r for _, r, _ in working)} positions read; "
              f"{sum(d for _, _, d in working) / seconds:.0f} positions dated per second")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
