"""The lagsight demo: a real local Kafka broker, traffic, groups of every kind, and lagsight.

Started by deploy/demo.sh after it installed and built everything. It runs until Ctrl-C and then
stops what it started. What you will see on /metrics:

- ``demo-active``   a classic group with one live member that stopped consuming: lag grows;
- ``demo-empty``    a group that committed and left (state empty, kind classic);
- ``demo-flink``    a simple group that commits like a Flink KafkaSource on checkpoints (every
                    10 s, never joining): its Kafka-side lag climbs and drops, the sawtooth;
- ``demo-partial``  a simple group that committed only half the partitions: the others show up
                    as lagsight_kafka_group_partition_uncommitted.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from kafka_broker import KafkaBroker  # noqa: E402
from workload import SubscribedConsumer, commit_without_joining, create_topic, make_empty_group, produce  # noqa: E402

TOPIC = "demo.orders"
PARTITIONS = 4
RECORDS_PER_SECOND = 40
CHECKPOINT_INTERVAL_SECONDS = 10


def keep_producing(bootstrap: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    sent = 0
    while not stop.wait(1.0 / RECORDS_PER_SECOND):
        producer.produce(TOPIC, value=f"order-{sent}".encode(), partition=sent % PARTITIONS)
        producer.poll(0)
        sent += 1
    producer.flush(5)


def commit_like_flink(bootstrap: str, stop: threading.Event) -> None:
    """Reads everything, but commits only every CHECKPOINT_INTERVAL_SECONDS, as Flink does."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-flink",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    position: dict[int, int] = {}
    next_checkpoint = time.monotonic() + CHECKPOINT_INTERVAL_SECONDS
    try:
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                position[message.partition()] = message.offset() + 1
            if time.monotonic() >= next_checkpoint and position:
                consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in position.items()],
                                asynchronous=False)
                next_checkpoint += CHECKPOINT_INTERVAL_SECONDS
    finally:
        consumer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the lagsight demo.")
    parser.add_argument("--lagsight", type=Path, default=REPO / "build/cmd/lagsight/lagsight")
    parser.add_argument("--listen", default="127.0.0.1:9713")
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    work = Path(tempfile.mkdtemp(prefix="lagsight-demo-"))
    broker = KafkaBroker(work / "kafka")
    lagsight = None
    threads: list[threading.Thread] = []
    active = None
    try:
        print("demo: starting a local Kafka broker (KRaft) ...", flush=True)
        broker.start()
        bootstrap = broker.bootstrap
        create_topic(bootstrap, TOPIC, PARTITIONS)
        produce(bootstrap, TOPIC, [100] * PARTITIONS)
        make_empty_group(bootstrap, "demo-empty", [TOPIC], commit_at=60)
        commit_without_joining(bootstrap, "demo-partial", {(TOPIC, 0): 50, (TOPIC, 1): 70})
        active = SubscribedConsumer(bootstrap, "demo-active", [TOPIC], commit_at=90).start()
        for target in (keep_producing, commit_like_flink):
            thread = threading.Thread(target=target, args=(bootstrap, stop), daemon=True)
            thread.start()
            threads.append(thread)

        config = work / "lagsight.yaml"
        config.write_text(f"""kafka:
  - name: demo
    bootstrap_servers: {bootstrap}
    poll_interval: 2s
    request_timeout: 5s
""")
        lagsight = subprocess.Popen([str(args.lagsight), f"--config.file={config}",
                                     f"--web.listen-address={args.listen}"])
        print(f"""
demo: Kafka at {bootstrap}; lagsight config {config}
demo: metrics at http://{args.listen}/metrics   (landing page http://{args.listen}/)
demo: try  curl -s http://{args.listen}/metrics | grep -E 'lagsight_kafka_group_(lag_records|info)'
demo: Ctrl-C stops everything.
""", flush=True)
        while not stop.wait(1.0):
            if lagsight.poll() is not None:
                print(f"demo: lagsight exited with {lagsight.returncode}", file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        if lagsight is not None and lagsight.poll() is None:
            lagsight.terminate()
            lagsight.wait(30)
        if active is not None:
            active.stop()
        for thread in threads:
            thread.join(10)
        broker.stop()
        print(f"demo: stopped (files kept in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
