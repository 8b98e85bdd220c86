#!/usr/bin/env python3
"""Records real Flink REST responses into tests/fixtures/flink-<line>/ for the parser tests.

For each Flink line (1.20 and 2.x) it starts a real Kafka broker, creates topics with records,
runs the harness job (tests/harness/flink/) with three jobs in one MiniCluster:

- ``orders-enrichment``: topic ``orders.v2`` (3 partitions, a dot in the name), group
  ``orders-enrichment``, parallelism 2, checkpoint every second, a slow map (backlog and
  backpressure while the fixtures are recorded);
- ``audit-trail``: topic ``audit.events``, group ``audit-trail``, checkpointing disabled;
- ``ledger-sync``: topic ``ledger``, checkpoints that fail on purpose once two have completed;

and saves the responses exactly as received (pretty-printed JSON; non-JSON bodies as text) with
a ``manifest.json`` naming, for each file, the request path, the HTTP status, the Flink version,
the job and vertex ids and when it was recorded. Fixtures are recorded, never edited by hand.

    .venv/bin/python tests/harness/record_flink_fixtures.py [--version 1.20|2.x] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kafka_broker  # noqa: E402
import workload  # noqa: E402
from flink_job import VERSIONS, FlinkJob, JobSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"

ORDERS_TOPIC = "orders.v2"
ORDERS_COUNTS = [3000, 5000, 7000]
AUDIT_TOPIC = "audit.events"
AUDIT_COUNTS = [200, 300]
LEDGER_TOPIC = "ledger"
LEDGER_COUNTS = [100]
DEADLINE_SECONDS = 120.0


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def connector_version(line: str) -> str:
    pom = (Path(__file__).resolve().parent / "flink" / f"pom-{line}.xml").read_text()
    return pom.split("<flink.connector.kafka.version>")[1].split("<")[0]


class Recorder:
    def __init__(self, flink: FlinkJob, out: Path) -> None:
        self.flink = flink
        self.out = out
        self.files: dict[str, dict] = {}

    def save(self, name: str, path: str) -> tuple[int, object]:
        status, body = self.flink.rest_get(path)
        target = self.out / name
        if isinstance(body, str):
            target.write_text(body)
        else:
            target.write_text(json.dumps(body, indent=2) + "\n")
        self.files[name] = {"request": f"GET {path}", "status": status,
                            "recorded_at": now_iso()}
        return status, body

    def save_data(self, name: str, data: object, description: str) -> None:
        (self.out / name).write_text(json.dumps(data, indent=2) + "\n")
        self.files[name] = {"request": None, "description": description, "status": None,
                            "recorded_at": now_iso()}


def get_query(ids: list[str]) -> str:
    return ",".join(urllib.parse.quote(i, safe="") for i in ids)


def wanted_metric_ids(all_ids: list[str], parallelism: int) -> list[str] | None:
    """The reader's metric ids the fixtures need, or None while some are not registered yet.

    The per-partition gauges, the consumer metrics, pendingRecords and watermarkLag appear only
    after the readers got their splits and fetched, so callers poll until this is not None.
    """
    def ends(suffix: str) -> list[str]:
        return sorted(i for i in all_ids if i.endswith(suffix))

    offsets = sorted(i for i in all_ids if ".KafkaSourceReader.topic." in i
                     and (i.endswith(".currentOffset") or i.endswith(".committedOffset")))
    groups = {
        "offsets": offsets,
        "commitsSucceeded": ends(".KafkaSourceReader.commitsSucceeded"),
        "commitsFailed": ends(".KafkaSourceReader.commitsFailed"),
        "pendingRecords": ends(".pendingRecords"),
        "records-lag-max": ends(".KafkaSourceReader.KafkaConsumer.records-lag-max"),
        "currentEmitEventTimeLag": ends(".currentEmitEventTimeLag"),
        "watermarkLag": ends(".watermarkLag"),
        "busy": [i for i in all_ids if i.split(".", 1)[1:] == ["busyTimeMsPerSecond"]],
        "backPressured": [i for i in all_ids
                          if i.split(".", 1)[1:] == ["backPressuredTimeMsPerSecond"]],
        "idle": [i for i in all_ids if i.split(".", 1)[1:] == ["idleTimeMsPerSecond"]],
    }
    if len(offsets) < 2 * sum(1 for _ in ORDERS_COUNTS):
        return None
    if any(len(ids) < parallelism for key, ids in groups.items() if key != "offsets"):
        return None
    return [i for ids in groups.values() for i in ids]


def poll_until(what: str, probe, timeout: float = DEADLINE_SECONDS, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout} s")
        time.sleep(interval)


def record_line(line: str, out: Path, work: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with kafka_broker.KafkaBroker(work / "broker") as broker:
        for topic, counts in ((ORDERS_TOPIC, ORDERS_COUNTS), (AUDIT_TOPIC, AUDIT_COUNTS),
                              (LEDGER_TOPIC, LEDGER_COUNTS)):
            workload.create_topic(broker.bootstrap, topic, len(counts))
            workload.produce(broker.bootstrap, topic, counts)
        fail_file = work / "fail-ledger-checkpoints"
        jobs = [
            JobSpec("orders-enrichment", [ORDERS_TOPIC], group="orders-enrichment",
                    source="orders-source", parallelism=2, checkpoint_ms=1000, delay_us=1000),
            JobSpec("audit-trail", [AUDIT_TOPIC], group="audit-trail", source="audit-source",
                    parallelism=2, checkpoint_ms=0),
            JobSpec("ledger-sync", [LEDGER_TOPIC], group="ledger-sync", source="ledger-source",
                    parallelism=1, checkpoint_ms=1000, fail_checkpoints_file=fail_file),
        ]
        with FlinkJob(line, jobs, work / "flink", bootstrap=broker.bootstrap,
                      savepoint_dir=work / "savepoints") as flink:
            rec = Recorder(flink, out)
            orders = flink.jobs["orders-enrichment"]
            audit = flink.jobs["audit-trail"]
            ledger = flink.jobs["ledger-sync"]
            rec.save("config.json", "/config")

            flink.wait_for_completed_checkpoints(ledger, 2)
            fail_file.touch()
            flink.wait_for_completed_checkpoints(orders, 3)

            source = flink.vertex_id(orders, "orders-source")
            metrics_path = f"/jobs/{orders}/vertices/{source}/metrics"

            def probe():
                status, body = flink.rest_get(metrics_path)
                return wanted_metric_ids([m["id"] for m in body], 2) if status == 200 else None

            wanted = poll_until("all source reader metrics registered", probe)
            rec.save("jobs_overview.json", "/jobs/overview")
            rec.save("job.json", f"/jobs/{orders}")
            rec.save("checkpoints.json", f"/jobs/{orders}/checkpoints")
            rec.save("checkpoints_config.json", f"/jobs/{orders}/checkpoints/config")
            rec.save("checkpoints_disabled.json", f"/jobs/{audit}/checkpoints")
            rec.save("checkpoints_config_disabled.json", f"/jobs/{audit}/checkpoints/config")
            rec.save("vertex_metrics_list.json", metrics_path)
            rec.save("vertex_metrics_values.json", f"{metrics_path}?get={get_query(wanted)}")
            agg_ids = sorted({i.split(".", 1)[1] for i in wanted if any(
                key in i for key in ("pendingRecords", "busyTimeMsPerSecond",
                                     "backPressuredTimeMsPerSecond", "commitsSucceeded",
                                     "records-lag-max"))})
            subtasks = f"/jobs/{orders}/vertices/{source}/subtasks/metrics"
            rec.save("subtasks_metrics_list.json", subtasks)
            rec.save("subtasks_metrics_agg.json",
                     f"{subtasks}?get={get_query(agg_ids)}&agg=min,max,sum,avg")
            # The first request starts a back-pressure sample; the answer may be "deprecated"
            # or a stale level until the sample is in, so ask until it carries subtasks.
            backpressure = f"/jobs/{orders}/vertices/{source}/backpressure"
            poll_until("a back-pressure sample", lambda: (
                lambda r: r if r[0] == 200 and r[1].get("subtasks") else None)(
                    flink.rest_get(backpressure)))
            rec.save("backpressure.json", backpressure)

            def ledger_failed():
                status, body = flink.checkpoints(ledger)
                return body if status == 200 and body["counts"]["failed"] >= 2 else None

            failing = poll_until("two failed ledger checkpoints", ledger_failed)
            if failing["counts"]["restored"] != 0:
                raise RuntimeError("ledger-sync restarted: failing checkpoints must not fail "
                                   f"the job: {json.dumps(failing['latest'])}")
            rec.save("checkpoints_failing.json", f"/jobs/{ledger}/checkpoints")
            fail_file.unlink()

            # Caught up: every record read and committed (committedOffset is the next offset to
            # read, so it equals the log end offset), then compare with Kafka's own view.
            ends = dict(enumerate(ORDERS_COUNTS))
            offset_ids = [i for i in wanted if ".KafkaSourceReader.topic." in i]

            def partition_of(metric_id: str) -> int:
                return int(metric_id.split(".partition.")[1].split(".")[0])

            def caught_up():
                values = {m["id"]: m["value"] for m in flink.vertex_metrics(
                    orders, source, offset_ids)}
                done = len(values) == 2 * len(ends) and all(
                    int(float(v)) == ends[partition_of(i)] - (1 if i.endswith("currentOffset")
                                                             else 0)
                    for i, v in values.items())
                return values if done else None

            poll_until("orders-enrichment caught up and committed", caught_up)
            rec.save("vertex_metrics_values_caught_up.json",
                     f"{metrics_path}?get={get_query(offset_ids)}")
            rows = kafka_broker.consumer_groups_describe_all(broker.bootstrap)
            rec.save_data("kafka_groups_caught_up.json",
                          [row.__dict__ for row in rows if row.group == "orders-enrichment"],
                          "Kafka's ConsumerGroupCommand --describe --all-groups rows of group "
                          "orders-enrichment, right after vertex_metrics_values_caught_up.json")

            savepoint = flink.trigger_savepoint(orders)
            time.sleep(1.0)
            rec.save("checkpoints_after_savepoint.json", f"/jobs/{orders}/checkpoints")

            job = json.loads((out / "job.json").read_text())
            manifest = {
                "flink_line": line,
                "flink_version": json.loads((out / "config.json").read_text())
                .get("flink-version"),
                "flink_connector_kafka_version": connector_version(line),
                "kafka_broker_version": "see tests/harness/kafka/pom.xml",
                "recorded_at": now_iso(),
                "jobs": {
                    "orders-enrichment": {"jid": orders, "topic": ORDERS_TOPIC,
                                          "records_per_partition": ORDERS_COUNTS,
                                          "group": "orders-enrichment", "parallelism": 2,
                                          "checkpoint_interval_ms": 1000,
                                          "source_name": "orders-source",
                                          "vertices": {v["name"]: v["id"]
                                                       for v in job["vertices"]},
                                          "source_vertex": source,
                                          "savepoint": savepoint},
                    "audit-trail": {"jid": audit, "topic": AUDIT_TOPIC,
                                    "records_per_partition": AUDIT_COUNTS,
                                    "group": "audit-trail", "checkpointing": "disabled"},
                    "ledger-sync": {"jid": ledger, "topic": LEDGER_TOPIC,
                                    "records_per_partition": LEDGER_COUNTS,
                                    "group": "ledger-sync",
                                    "checkpoints": "fail on purpose after two completed"},
                },
                "files": rec.files,
            }
            (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", choices=VERSIONS, action="append")
    parser.add_argument("--out", type=Path, default=FIXTURES,
                        help="parent of the flink-<line> directories (default tests/fixtures)")
    parser.add_argument("--keep-work", action="store_true", help="keep broker and Flink logs")
    args = parser.parse_args(argv)
    for line in args.version or list(VERSIONS):
        work = Path(tempfile.mkdtemp(prefix=f"record-flink-{line}-"))
        try:
            record_line(line, args.out / f"flink-{line}", work)
        except BaseException:
            print(f"recording Flink {line} failed; logs kept in {work}", file=sys.stderr)
            raise
        if args.keep_work:
            print(f"Flink {line}: logs in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
