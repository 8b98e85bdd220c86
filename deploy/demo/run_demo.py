"""The lagsight demo: a real local Kafka broker, a real Flink job, traffic, groups of every kind.

Started by deploy/demo.sh after it installed and built everything. It runs until Ctrl-C and then
stops what it started. What you will see on /metrics:

- ``demo-active``   a classic group with one live member that stopped consuming: lag grows;
- ``demo-empty``    a group that committed and left (state empty, kind classic);
- ``demo-enrichment`` a real Flink 2.x job (MiniCluster, REST on a local port) reading the topic
                    with a KafkaSource and checkpointing every 10 s: its group's Kafka-side lag
                    climbs and drops with each checkpoint (the sawtooth) while lagsight_flink_lag_records
                    stays low;
- ``demo-partial``  a simple group that committed only half the partitions: the others show up
                    as lagsight_kafka_group_partition_uncommitted;
- ``demo-positions`` a Flink job that commits nothing to Kafka and keeps its position in a local
                    redis-server instead (a hash per topic, written every second after
                    processing): lagsight_store_offset, lagsight_store_drift_records and
                    lagsight_store_age_seconds show the third position.
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

from confluent_kafka import Producer  # noqa: E402
from flink_job import FlinkJob, JobSpec  # noqa: E402
from kafka_broker import KafkaBroker  # noqa: E402
from redis_server import RedisServer  # noqa: E402
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


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the lagsight demo.")
    parser.add_argument("--lagsight", type=Path, default=REPO / "build/cmd/lagsight/lagsight")
    parser.add_argument("--listen", default="127.0.0.1:9713")
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    work = Path(tempfile.mkdtemp(prefix="lagsight-demo-"))
    broker = KafkaBroker(work / "kafka")
    flink = None
    redis = None
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
        producer = threading.Thread(target=keep_producing, args=(bootstrap, stop), daemon=True)
        producer.start()
        threads.append(producer)
        print("demo: starting redis-server for the job that keeps its position there ...", flush=True)
        redis = RedisServer(work / "redis").start()
        print("demo: starting a Flink 2.x MiniCluster with two KafkaSource jobs ...", flush=True)
        flink = FlinkJob("2.x", [JobSpec(name="demo-enrichment", topics=[TOPIC], group="demo-enrichment",
                                         checkpoint_ms=CHECKPOINT_INTERVAL_SECONDS * 1000,
                                         parallelism=2, delay_us=2000),
                                 JobSpec(name="demo-positions", topics=[TOPIC], group=None,
                                         start="earliest", checkpoint_ms=5000,
                                         extra={"redis": redis.address,
                                                "redis-key": "flink:offsets:{topic}",
                                                "redis-every-ms": "1000"})],
                         work / "flink", bootstrap=bootstrap)
        flink.start()

        config = work / "lagsight.yaml"
        config.write_text(f"""kafka:
  - name: demo
    bootstrap_servers: {bootstrap}
    poll_interval: 2s
    request_timeout: 5s
flink:
  - name: demo-flink
    rest_url: {flink.rest_url}
    kafka_cluster: demo
    poll_interval: 2s
positions:
  - name: demo-redis
    store: redis
    url: redis://{redis.address}/0
    flink_cluster: demo-flink
    job: "demo-positions"
    key: "flink:offsets:{{topic}}"
    field: "{{partition}}"
    updated_at_field: updated_at
    poll_interval: 2s
""")
        lagsight = subprocess.Popen([str(args.lagsight), f"--config.file={config}",
                                     f"--web.listen-address={args.listen}"])
        print(f"""
demo: Kafka at {bootstrap}; Flink REST at {flink.rest_url}; lagsight config {config}
demo: metrics at http://{args.listen}/metrics   (landing page http://{args.listen}/)
demo: try  curl -s http://{args.listen}/metrics | grep -E 'lagsight_(kafka_group_lag_records|flink_lag_records|flink_checkpoint_age|store_offset)'
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
        if flink is not None:
            flink.stop()
        if redis is not None:
            redis.stop()
        broker.stop()
        print(f"demo: stopped (files kept in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
