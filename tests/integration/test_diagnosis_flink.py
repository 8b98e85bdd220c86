"""The diagnosis on real Kafka + real Flink: one scenario per cause (issue 4).

One Kafka broker, one Flink 2.x MiniCluster and one lagsight serve the whole module; each test
creates its own topic and group, submits its own job(s) into the running cluster, makes the real
systems show the cause, checks that they do (ground truth from the Flink REST API and Kafka's own
tools, never from lagsight), and then asserts the cause lagsight exports for the job<->group pair
in ``lagsight_diagnosis``, how many seconds after the fault it showed, and which other alarm
causes showed. Results go to docs/diagnosis-results.md (scenario_report.py).

The healthy job and the long-checkpoint-interval job start with the cluster, so their long
observation overlaps the other scenarios (which also shows the other jobs' faults do not leak
into their pairs).
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

import kafka_broker as kafka
import promtext
from conftest import CLUSTER, LagsightProcess, _register_log_for_failures, wait_until
from flink_job import FlinkJob, JobSpec
from scenario_report import DiagnosisWatch
from workload import (SteadyProducer, SubscribedConsumer, add_partitions, create_topic,
                      make_topic, produce)

FLINK_LINE = "2.x"
FLINK_CLUSTER = "mini"
# Traffic and thresholds fit together: a 1 s checkpoint interval at <= 40 records/s keeps the
# Kafka-side sawtooth far below the threshold; a 12 s interval at 60 records/s (amplitude ~720)
# is far above it.
LAG_THRESHOLD_RECORDS = 400
WINDOW_SECONDS = 30
CONFIRM_POLLS = 2
DETECT_TIMEOUT = 90.0          # generous: the machine is shared with other builds and tests
LONG_INTERVAL_MS = 12_000
HEALTHY_HOLD_SECONDS = 60.0

OFFSET_ID = re.compile(r"^\d+\.[^.]+\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)\."
                       r"(currentOffset|committedOffset)$")
PREFIX = f"dg-{uuid.uuid4().hex[:6]}"


def name(scenario: str) -> str:
    """The topic, group and job name of a scenario (unique per module run)."""
    return f"{PREFIX}-{scenario}"


# ----------------------------------------------------------------------------------------------
# Traffic


# ----------------------------------------------------------------------------------------------
# Ground truth readers (Flink REST API, Kafka's tools)


def source_offsets(flink: FlinkJob, jid: str, which: str = "currentOffset"
                   ) -> dict[int, int]:
    """partition -> the reader's currentOffset or committedOffset (REST), unset (-1) left out."""
    vid = flink.source_vertex_id(jid)
    ids = [m["id"] for m in flink.vertex_metrics(jid, vid)
           if (match := OFFSET_ID.match(m["id"])) and match.group(3) == which]
    offsets = {}
    for metric in flink.vertex_metrics(jid, vid, ids) if ids else []:
        value = int(float(metric["value"]))
        if value >= 0:
            offsets[int(OFFSET_ID.match(metric["id"]).group(2))] = value
    return offsets


def checkpoint_counts(flink: FlinkJob, jid: str) -> dict[str, int]:
    status, body = flink.checkpoints(jid)
    assert status == 200, body
    return body["counts"]


def log_ends(bootstrap: str, topic: str) -> dict[int, int]:
    """partition -> log end offset, from Kafka's GetOffsetShell."""
    return {partition: offset for (_, partition), offset
            in kafka.topic_offsets(bootstrap, re.escape(topic), "latest").items()}


def group_committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset of ``group``, from kafka-consumer-groups
    (--describe --all-groups: a group without offsets simply has no rows)."""
    return {(row.topic, row.partition): row.current_offset
            for row in kafka.consumer_groups_describe_all(bootstrap)
            if row.group == group and row.current_offset is not None}


def group_lag(bootstrap: str, group: str) -> int:
    """The group's total lag as kafka-consumer-groups --describe --group reports it."""
    rows = kafka.parse_describe_offsets(kafka.run_kafka_tool(
        kafka.CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe",
        "--group", group))
    return sum(row.lag or 0 for row in rows)


def flink_lag(bootstrap: str, flink: FlinkJob, jid: str, topic: str) -> int:
    """Flink-side lag as the real systems show it: log end (Kafka) - (currentOffset + 1) (REST).

    The log end comes from the broker's ListOffsets through a client, read right after the REST
    call: Kafka's GetOffsetShell takes seconds to start, and at 60 records/s the traffic of
    those seconds would count as lag.
    """
    current = source_offsets(flink, jid)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{PREFIX}-never-joins"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in partitions}
    finally:
        consumer.close()
    return sum(max(0, end - (current.get(p, -1) + 1)) for p, end in ends.items())


# ----------------------------------------------------------------------------------------------
# The module's systems


@dataclass
class Scenarios:
    bootstrap: str
    flink: FlinkJob
    lagsight: LagsightProcess
    work_dir: Path
    producers: list[SteadyProducer]
    watches: dict[str, DiagnosisWatch]

    def topic(self, scenario: str, partitions: int = 1, rate: float = 0,
              prefill: int = 0) -> str:
        topic = name(scenario)
        if producer := make_topic(self.bootstrap, topic, partitions, prefill=prefill, rate=rate):
            self.producers.append(producer)
        return topic

    def spread(self, topic: str, partitions: int) -> None:
        """Makes the topic's steady traffic go to ``partitions`` partitions (after some were
        added): a new producer, since a running one knows only the partitions it started with."""
        old = next(p for p in self.producers if p.topic == topic)
        self.producers.remove(old)
        old.stop()
        self.producers.append(SteadyProducer(self.bootstrap, topic, partitions, old.rate))

    def watch(self, group: str, job_name: str, t0: float | None = None) -> DiagnosisWatch:
        return DiagnosisWatch(self.lagsight, kafka_cluster=CLUSTER, group=group,
                              job_name=job_name, t0=t0)

    def metric(self, metric: str, **labels: str) -> dict[frozenset, float]:
        return promtext.select(self.lagsight.scrape(), metric, **labels)


def healthy_spec() -> JobSpec:
    return JobSpec(name("healthy"), [name("healthy")], group=name("healthy"), checkpoint_ms=1000)


def long_interval_spec() -> JobSpec:
    return JobSpec(name("long-interval"), [name("long-interval")], group=name("long-interval"),
                   checkpoint_ms=LONG_INTERVAL_MS)


def lagsight_config(bootstrap: str, rest_url: str) -> dict:
    return {
        "kafka": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "poll_interval": "1s",
                   "request_timeout": "5s",
                   "groups": {"allow": [f"{PREFIX}-.*"]},
                   "topics": {"allow": [f"{PREFIX}-.*"]}}],
        "flink": [{
            "name": FLINK_CLUSTER, "rest_url": rest_url, "kafka_cluster": CLUSTER,
            "poll_interval": "1s", "request_timeout": "5s",
            # Where the group's offsets cannot match the job's own (another member commits in
            # its place, or two jobs take turns), the operator names the job's group.
            # A job with commits switched off commits nothing, as one without group.id does:
            # only the operator's mapping says a group is expected of it.
            "groups": [{"job": name("commits-failing"), "group": name("commits-failing")},
                       {"job": name("commits-off"), "group": name("commits-off")},
                       {"job": f"{name('shared')}-[ab]", "group": name("shared")}],
        }],
        "diagnosis": {"window": f"{WINDOW_SECONDS}s", "confirm_polls": CONFIRM_POLLS,
                      "lag_threshold_records": LAG_THRESHOLD_RECORDS},
    }


@pytest.fixture(scope="module")
def scenarios(session_broker, lagsight_binary, tmp_path_factory) -> Iterator[Scenarios]:
    bootstrap = session_broker.bootstrap
    work_dir = tmp_path_factory.mktemp("diagnosis-flink")
    producers: list[SteadyProducer] = []
    env = None
    try:
        create_topic(bootstrap, name("healthy"), 1)
        producers.append(SteadyProducer(bootstrap, name("healthy"), 1, 10))
        create_topic(bootstrap, name("long-interval"), 1)
        producers.append(SteadyProducer(bootstrap, name("long-interval"), 1, 60))
        flink = FlinkJob(FLINK_LINE, [healthy_spec(), long_interval_spec()], work_dir / "flink",
                         bootstrap=bootstrap, savepoint_dir=work_dir / "savepoints", slots=24,
                         heap="1g")
        flink.start()
        started = time.monotonic()
        lagsight = LagsightProcess(lagsight_binary, work_dir / "lagsight",
                                   lagsight_config(bootstrap, flink.rest_url))
        (work_dir / "lagsight").mkdir()
        env = Scenarios(bootstrap, flink, lagsight, work_dir, producers, {})
        lagsight.start()
        env.watches["healthy"] = env.watch(name("healthy"), name("healthy"), t0=started)
        env.watches["long-interval"] = env.watch(name("long-interval"), name("long-interval"),
                                                 t0=started)
        yield env
    finally:
        code = 0
        if env is not None:
            for watch in env.watches.values():
                watch.close()
            code = env.lagsight.stop()
            env.flink.stop()
        for producer in producers:
            producer.stop()
        assert code == 0, f"lagsight exited with {code} on SIGTERM (see its log)"


@pytest.fixture(autouse=True)
def logs_on_failure(request, scenarios, session_broker) -> None:
    _register_log_for_failures(request, "lagsight log", scenarios.lagsight.log_file)
    _register_log_for_failures(request, "flink log", scenarios.flink.log_file)
    _register_log_for_failures(request, "kafka broker log", session_broker.log_file)


def cancel_quietly(flink: FlinkJob, jid: str) -> None:
    """Cancels a scenario's job at its end so it stops loading the shared cluster."""
    try:
        flink.cancel_job(jid)
    except Exception:  # noqa: BLE001 - cleanup must not hide the test's own failure
        pass


def baseline(scenarios: Scenarios, jid: str, group: str, job_name: str) -> None:
    """Before a fault: the job commits (REST), and lagsight calls the pair healthy."""
    wait_until(lambda: scenarios.flink.source_commit_counters(jid)["commitsSucceeded"] >= 2, 60,
               f"{job_name} to commit twice")
    with scenarios.watch(group, job_name) as watch:
        watch.wait_for("healthy", DETECT_TIMEOUT)


def detect(watch: DiagnosisWatch, cause: str, timeout: float = DETECT_TIMEOUT,
           hold: float = 5.0) -> None:
    """Waits for ``cause`` on the pair, watches ``hold`` seconds more, and asserts no alarm
    cause other than ``cause`` showed since the fault."""
    watch.wait_for(cause, timeout)
    watch.hold(hold)
    watch.close()
    falses = watch.false_causes(cause)
    assert not falses, (f"false causes after the fault: {falses}; seen {watch.seen()}; "
                        f"history:\n{watch.history()}")


def join_evidence(scenarios: Scenarios, jid: str, job_name: str, group: str, topic: str
                  ) -> str:
    """What lagsight needs to join a job with its group, side by side with the real systems:
    for a failure message when the job's pair is not where it should be."""
    metrics = scenarios.lagsight.scrape()

    def values(metric: str, **labels: str) -> dict[str, float]:
        return {",".join(f"{k}={v}" for k, v in sorted(dict(key).items())
                         if k in ("partition", "group", "association")): value
                for key, value in promtext.select(metrics, metric, **labels).items()}
    return (f"lagsight: flink committedOffset "
            f"{values('lagsight_flink_source_committed_offset', job_name=job_name)}, "
            f"current {values('lagsight_flink_source_current_offset', job_name=job_name)}, "
            f"group committed (sum) "
            f"{values('lagsight_kafka_group_topic_committed_offsets', group=group)}, "
            f"job_group_info {values('lagsight_flink_job_group_info', job_name=job_name)}; "
            f"REST committedOffset {source_offsets(scenarios.flink, jid, 'committedOffset')}, "
            f"tool committed {group_committed(scenarios.bootstrap, group)}")


# ----------------------------------------------------------------------------------------------
# Scenarios


def test_offsets_missing_commits_off(scenarios, diagnosis_results):
    """A job with a group id but commit.offsets.on.checkpoint=false, mapped to its group by the
    config: the group never gets offsets, so they are missing."""
    result = diagnosis_results("offsets_missing: commits switched off", "offsets_missing",
                               FLINK_LINE)
    topic = scenarios.topic("commits-off", rate=20)
    spec = JobSpec(name("commits-off"), [topic], group=name("commits-off"), commit=False)
    t0 = time.monotonic()
    jid = scenarios.flink.submit(spec)
    result.watch = scenarios.watch(spec.group, spec.name, t0=t0)
    try:
        scenarios.flink.wait_for_completed_checkpoints(jid, 3)
        # Ground truth: checkpoints complete, the reader commits nothing, the group has no
        # offsets in Kafka.
        assert scenarios.flink.source_commit_counters(jid)["commitsSucceeded"] == 0
        assert group_committed(scenarios.bootstrap, spec.group) == {}
        result.note("commit=false, mapped to its group, 3+ checkpoints completed, "
                    "commitsSucceeded 0, kafka-consumer-groups shows no offsets for the group")
        detect(result.watch, "offsets_missing")
    finally:
        cancel_quietly(scenarios.flink, jid)


def test_no_group_id_commits_nothing_by_design(scenarios, diagnosis_results):
    """A job without group.id: the connector commits nothing, by design (it says so in its log).
    That is a fact lagsight shows (commit mode none), not a problem: the pair (group="") stays
    healthy and never gets offsets_missing."""
    result = diagnosis_results("no group id: commits nothing by design", "healthy", FLINK_LINE)
    topic = scenarios.topic("no-group", rate=20)
    spec = JobSpec(name("no-group"), [topic], group=None, start="earliest")
    t0 = time.monotonic()
    jid = scenarios.flink.submit(spec)
    result.watch = scenarios.watch("", spec.name, t0=t0)
    try:
        scenarios.flink.wait_for_completed_checkpoints(jid, 3)
        assert scenarios.flink.source_commit_counters(jid)["commitsSucceeded"] == 0
        assert source_offsets(scenarios.flink, jid, "committedOffset") == {}
        result.note("no group.id, 3+ checkpoints completed, commitsSucceeded 0, "
                    "committedOffset unset")
        wait_until(lambda: scenarios.metric("lagsight_flink_source_commit_mode",
                                            job_name=spec.name, mode="none"), DETECT_TIMEOUT,
                   "commit mode none")
        result.watch.wait_for("healthy", DETECT_TIMEOUT)
        result.watch.hold(2 * WINDOW_SECONDS)
        result.watch.close()
        assert "offsets_missing" not in result.watch.seen(), result.watch.history()
        assert not result.watch.false_causes("healthy"), result.watch.history()
    finally:
        cancel_quietly(scenarios.flink, jid)


def test_checkpoints_failing(scenarios, diagnosis_results):
    """Every checkpoint fails in its asynchronous part while the job keeps running."""
    result = diagnosis_results("checkpoints_failing", "checkpoints_failing", FLINK_LINE)
    topic = scenarios.topic("cp-failing", rate=20)
    fail_file = scenarios.work_dir / "cp-failing.fail"
    spec = JobSpec(name("cp-failing"), [topic], group=name("cp-failing"),
                   fail_checkpoints_file=fail_file, tolerable_failures=1000)
    jid = scenarios.flink.submit(spec)
    try:
        baseline(scenarios, jid, spec.group, spec.name)
        before = checkpoint_counts(scenarios.flink, jid)
        fail_file.write_text("fail")
        t0 = time.monotonic()
        result.watch = scenarios.watch(spec.group, spec.name, t0=t0)

        # Ground truth: failed count rises, no new completed checkpoint, the job runs on.
        def failing() -> dict | None:
            counts = checkpoint_counts(scenarios.flink, jid)
            return counts if counts["failed"] >= before["failed"] + 3 else None
        first = wait_until(failing, 60, "three more failed checkpoints")
        time.sleep(4)
        later = checkpoint_counts(scenarios.flink, jid)
        assert later["failed"] > first["failed"]
        assert later["completed"] == first["completed"], "a checkpoint completed while failing"
        assert scenarios.flink.job_overview(jid)["state"] == "RUNNING"
        result.note(f"REST: failed {before['failed']}->{later['failed']}, completed stuck at "
                    f"{later['completed']}, job RUNNING")

        detect(result.watch, "checkpoints_failing")
    finally:
        fail_file.unlink(missing_ok=True)
        cancel_quietly(scenarios.flink, jid)


def test_commits_failing(scenarios, diagnosis_results):
    """Checkpoints complete but the broker rejects every commit of the source: a live member of
    a classic group with the same id makes the coordinator refuse the source's member-less
    (generation -1) commits with UNKNOWN_MEMBER_ID."""
    result = diagnosis_results("commits_failing", "commits_failing", FLINK_LINE)
    topic = scenarios.topic("commits-failing", rate=20)
    group = name("commits-failing")
    spec = JobSpec(name("commits-failing"), [topic], group=group)
    jid = scenarios.flink.submit(spec)
    member = None
    try:
        baseline(scenarios, jid, group, spec.name)
        # Commits at the log end (never behind the job's commits: no regression), then sits in
        # the group as its one Stable member, heartbeating.
        member = SubscribedConsumer(scenarios.bootstrap, group, [topic], commit_at=10**15)
        member.start(timeout=60)
        t0 = time.monotonic()
        result.watch = scenarios.watch(group, spec.name, t0=t0)

        # Ground truth: commitsFailed rises, commitsSucceeded stays, checkpoints still complete.
        def failing_since(start: dict) -> dict | None:
            now = scenarios.flink.source_commit_counters(jid)
            return now if now["commitsFailed"] >= start["commitsFailed"] + 3 else None
        start = scenarios.flink.source_commit_counters(jid)
        first = wait_until(lambda: failing_since(start), 60, "commitsFailed to rise by 3")
        cp_first = checkpoint_counts(scenarios.flink, jid)["completed"]
        # Flink serves the counters refreshed every metrics.fetcher.update-interval (10 s).
        later = wait_until(lambda: (lambda c: c if c["commitsFailed"] > first["commitsFailed"]
                                    else None)(scenarios.flink.source_commit_counters(jid)),
                           60, "commitsFailed to rise again")
        cp_later = checkpoint_counts(scenarios.flink, jid)["completed"]
        assert later["commitsFailed"] > first["commitsFailed"]
        assert later["commitsSucceeded"] == first["commitsSucceeded"]
        assert cp_later > cp_first, "checkpoints stopped completing"
        members = [m for m in kafka.consumer_groups_describe_state(scenarios.bootstrap)
                   if m.group == group]
        assert members and members[0].members == 1 and members[0].state == "Stable"
        result.note(f"member of a classic group with the job's group id; REST: commitsFailed "
                    f"{start['commitsFailed']:.0f}->{later['commitsFailed']:.0f}, commitsSucceeded "
                    f"flat at {later['commitsSucceeded']:.0f}, checkpoints {cp_first}->{cp_later}")

        detect(result.watch, "commits_failing")
    finally:
        if member is not None:
            member.stop()
        cancel_quietly(scenarios.flink, jid)


def test_really_behind(scenarios, diagnosis_results):
    """The map slows to 10 records/s while 40/s arrive: the job's own position falls behind.

    Source and map are chained, so checkpoint barriers do not queue behind buffered records
    (checkpoints keep completing: this is lag, not a checkpoint problem)."""
    result = diagnosis_results("really_behind", "really_behind", FLINK_LINE)
    topic = scenarios.topic("behind", rate=40)
    delay_file = scenarios.work_dir / "behind.delay"
    delay_file.write_text("0")
    spec = JobSpec(name("behind"), [topic], group=name("behind"), delay_file=delay_file,
                   chain=True)
    jid = scenarios.flink.submit(spec)
    try:
        baseline(scenarios, jid, spec.group, spec.name)
        delay_file.write_text("100000")
        t0 = time.monotonic()
        result.watch = scenarios.watch(spec.group, spec.name, t0=t0)

        # Ground truth: Flink lag (Kafka log end - REST position) passes the threshold and grows.
        wait_until(lambda: flink_lag(scenarios.bootstrap, scenarios.flink, jid, topic)
                   > LAG_THRESHOLD_RECORDS, 60, "the Flink-side lag to pass the threshold")
        first = flink_lag(scenarios.bootstrap, scenarios.flink, jid, topic)
        time.sleep(8)
        second = flink_lag(scenarios.bootstrap, scenarios.flink, jid, topic)
        assert second > first + 100, (first, second)
        result.note(f"delay 100 ms/record vs 40 records/s; Flink lag (GetOffsetShell - REST "
                    f"currentOffset) {first} -> {second} in 8 s")

        detect(result.watch, "really_behind")
    finally:
        delay_file.write_text("0")
        cancel_quietly(scenarios.flink, jid)


def test_partitions_uncommitted(scenarios, diagnosis_results):
    """Partitions added to the topic a job reads, with the job's partition discovery off:
    records arrive in the new partitions, nobody reads or commits them."""
    result = diagnosis_results("partitions_uncommitted", "partitions_uncommitted", FLINK_LINE)
    topic = scenarios.topic("added", partitions=2, rate=20)
    spec = JobSpec(name("added"), [topic], group=name("added"), discovery_ms=0)
    jid = scenarios.flink.submit(spec)
    try:
        baseline(scenarios, jid, spec.group, spec.name)
        add_partitions(scenarios.bootstrap, topic, 4)
        scenarios.spread(topic, 4)
        t0 = time.monotonic()
        result.watch = scenarios.watch(spec.group, spec.name, t0=t0)

        # Ground truth: partitions 2 and 3 have records (GetOffsetShell), the group has
        # committed offsets on 0 and 1 only (kafka-consumer-groups), the job reads 0 and 1.
        wait_until(lambda: all(log_ends(scenarios.bootstrap, topic).get(p, 0) > 0
                               for p in (2, 3)), 30, "records in the added partitions")
        time.sleep(3)
        committed = group_committed(scenarios.bootstrap, spec.group)
        assert set(committed) == {(topic, 0), (topic, 1)}, committed
        assert set(source_offsets(scenarios.flink, jid)) == {0, 1}
        result.note("2 -> 4 partitions (AdminClient create_partitions), discovery off; tool: "
                    "commits on partitions 0,1 only while 2,3 have records")

        # lagsight names the partitions no subtask reads (the REST API's reader offsets above),
        # each with what a start from the earliest offset would read there: between the log end
        # GetOffsetShell shows just before and just after the scrape (log start is 0).
        labels = {"job_name": spec.name, "topic": topic}
        wait_until(lambda: list(scenarios.metric("lagsight_flink_topic_unread_partitions",
                                                 **labels).values()) == [2],
                   30, "lagsight to count the two unread partitions")
        assert {p: o for (_, p), o in kafka.topic_offsets(
            scenarios.bootstrap, re.escape(topic), "earliest").items()} == {p: 0 for p in range(4)}
        before = log_ends(scenarios.bootstrap, topic)
        metrics = scenarios.lagsight.wait_for_fresh_poll(time.time())
        after = log_ends(scenarios.bootstrap, topic)
        backlog = {int(dict(key)["partition"]): value for key, value in promtext.select(
            metrics, "lagsight_flink_unread_partition_records", **labels).items()}
        assert set(backlog) == {2, 3}, backlog
        for partition, records in backlog.items():
            assert before[partition] <= records <= after[partition], (partition, records,
                                                                       before, after)
        result.note(f"lagsight: unread partitions 2,3 with backlogs {backlog} (log ends "
                    f"{before} before, {after} after)")
        status, page = scenarios.lagsight.get("/")
        assert status == 200 and all(f"not read: {topic}/{p}" in page for p in (2, 3)), (
            "the status page names the unread partitions under the job")

        detect(result.watch, "partitions_uncommitted")
    finally:
        cancel_quietly(scenarios.flink, jid)


def test_shared_group_id(scenarios, diagnosis_results):
    """Two jobs commit to one group id from different positions (one slow, one caught up): the
    group's committed offsets jump back and forth with every checkpoint of either."""
    result = diagnosis_results("shared_group_id", "shared_group_id", FLINK_LINE)
    group = name("shared")
    topic = scenarios.topic("shared", rate=40, prefill=2000)
    # Small fetches: a slowed source's fetcher thread blocks while its queue of fetched
    # batches is full, and its commits wait with it. With the default 500 records per batch it
    # ran every ~25 s and its commits reached the broker in rare bursts; with 10, every second.
    slow = JobSpec(f"{group}-a", [topic], group=group, start="earliest", delay_us=50_000,
                   chain=True, extra={"kafka.max.poll.records": "10"})
    # The fast job checkpoints every 4 s, so each job's commit stays the group's offset for
    # seconds at a time and Kafka's tool (a JVM start per reading) can see both.
    fast = JobSpec(f"{group}-b", [topic], group=group, start="earliest", checkpoint_ms=4000)
    t0 = time.monotonic()
    jids = [scenarios.flink.submit(slow), scenarios.flink.submit(fast)]
    result.watch = scenarios.watch(group, fast.name, t0=t0)
    slow_watch = scenarios.watch(group, slow.name, t0=t0)
    try:
        # Ground truth: the broker's committed offset for the group (OffsetFetch, what
        # kafka-consumer-groups reads) goes down at least once. Read five times a second: the
        # slow job's commits reach the broker in bursts and are overwritten within seconds, too
        # briefly for the tool's JVM start-up (tried: 11-16 tool readings sometimes saw none).
        # A client with the group's id that never subscribes or assigns: it only fetches the
        # group's offsets and takes no part in the group.
        reader = Consumer({"bootstrap.servers": scenarios.bootstrap, "group.id": group,
                           "enable.auto.commit": False})
        readings: list[int] = []

        def went_back() -> bool:
            try:
                answer = reader.committed([TopicPartition(topic, 0)], timeout=10)
            except KafkaException:  # e.g. NOT_COORDINATOR while __consumer_offsets loads
                return False
            offsets = [tp.offset for tp in answer if tp.offset >= 0]
            if offsets and (not readings or readings[-1] != sum(offsets)):
                readings.append(sum(offsets))
            return any(b < a for a, b in zip(readings, readings[1:]))
        try:
            wait_until(went_back, 90, "the group's committed offset to go backwards",
                       interval=0.2)
        except AssertionError as error:
            state = {job: (scenarios.flink.source_commit_counters(jid),
                           source_offsets(scenarios.flink, jid, "committedOffset"),
                           checkpoint_counts(scenarios.flink, jid))
                     for job, jid in zip(("slow", "fast"), jids)}
            raise AssertionError(f"{error}; readings {readings}; REST {state}") from None
        finally:
            reader.close()
        tool = [sum(group_committed(scenarios.bootstrap, group).values()) for _ in range(3)]
        result.note(f"two jobs, one group; slow 20 records/s vs fast; broker's committed "
                    f"offset (changes) {readings[:12]}; kafka-consumer-groups then {tool}")

        slow_seconds = slow_watch.wait_for("shared_group_id", DETECT_TIMEOUT)
        result.note(f"pair of the slow job: shared_group_id after {slow_seconds:.1f} s")
        slow_watch.close()
        detect(result.watch, "shared_group_id")
        # The slow job is also really behind; that is true, not a false cause of this scenario.
        assert not set(slow_watch.false_causes("shared_group_id")) - {"really_behind"}, (
            slow_watch.history())
    finally:
        slow_watch.close()
        for jid in jids:
            cancel_quietly(scenarios.flink, jid)


def test_restored_from_old_position(scenarios, diagnosis_results):
    """Savepoint, run on (3000 records read and committed), cancel, restart from the older
    savepoint: the job reprocesses from far back and its group's offsets go backwards."""
    result = diagnosis_results("restored_from_old_position", "restored_from_old_position",
                               FLINK_LINE)
    topic = scenarios.topic("restored", rate=40)
    delay_file = scenarios.work_dir / "restored.delay"
    delay_file.write_text("0")
    spec = JobSpec(name("restored"), [topic], group=name("restored"), delay_file=delay_file,
                   chain=True)
    flink = scenarios.flink
    jid = flink.submit(spec)
    restored_jid = None
    try:
        baseline(scenarios, jid, spec.group, spec.name)
        savepoint = flink.trigger_savepoint(jid)
        produce(scenarios.bootstrap, topic, [3000])
        end = log_ends(scenarios.bootstrap, topic)[0]
        wait_until(lambda: source_offsets(flink, jid, "committedOffset").get(0, 0) >= end, 60,
                   "the job to read and commit past the burst")
        before = group_committed(scenarios.bootstrap, spec.group)[(topic, 0)]
        flink.cancel_job(jid)
        # The restarted job is slower than the traffic's 40/s plus backlog: it stays behind
        # for minutes, as a real restore from far back does.
        delay_file.write_text("20000")
        t0 = time.monotonic()
        restored_jid = flink.submit(dataclasses.replace(spec, restore=savepoint))
        result.watch = scenarios.watch(spec.group, spec.name, t0=t0)

        # Ground truth: REST says it restored; the group's committed offset (tool) went back.
        # The checkpoint statistics answer 500 ("Unable to get JobMasterGateway for initializing
        # job") for a moment after the job is reported RUNNING (CI, 522e213): ask until they come.
        wait_until(lambda: flink.checkpoints(restored_jid)[0] == 200, 30,
                   "the restored job's checkpoint statistics")
        status, body = flink.checkpoints(restored_jid)
        assert status == 200 and body["counts"]["restored"] >= 1, body
        wait_until(lambda: group_committed(scenarios.bootstrap, spec.group)[(topic, 0)]
                   < before, 60, "the group's committed offset to go backwards")
        after = group_committed(scenarios.bootstrap, spec.group)[(topic, 0)]
        result.note(f"savepoint, +3000 records read and committed, cancel, restore; tool: "
                    f"committed {before} -> {after}")

        try:
            detect(result.watch, "restored_from_old_position")
        except AssertionError:
            result.note(join_evidence(scenarios, restored_jid, spec.name, spec.group, topic))
            raise
    finally:
        delay_file.write_text("0")
        cancel_quietly(flink, restored_jid or jid)


def test_long_checkpoint_interval(scenarios, diagnosis_results):
    """A 12 s checkpoint interval at 60 records/s: Kafka-side lag sawtooths (~720 records),
    the job itself keeps up. lagsight must name the sawtooth and raise no alarm."""
    result = diagnosis_results("long_checkpoint_interval", "long_checkpoint_interval",
                               FLINK_LINE, allowed={"healthy"})
    watch = scenarios.watches["long-interval"]
    result.watch = watch    # t0 = the job's start: the interval is there from the beginning
    group = name("long-interval")
    jid = scenarios.flink.jobs[group]

    # Ground truth: Kafka's tool sees the lag climb and drop; the job's own lag stays small.
    lags: list[int] = []

    def sawtooth_seen() -> bool:
        lags.append(group_lag(scenarios.bootstrap, group))
        drops = [a - b for a, b in zip(lags, lags[1:]) if b < a]
        return max(lags) >= 400 and any(drop >= 300 for drop in drops)
    wait_until(sawtooth_seen, 120, "the tool's lag to climb and drop", interval=0)
    # Flink serves the job's currentOffset refreshed every 10 s (metrics.fetcher.update-interval),
    # so against the live log end it reads up to 10 s of input (600 records) high; right after a
    # refresh it shows how far behind the job really is: keeping up, its lowest reading is small.
    own = min(flink_lag(scenarios.bootstrap, scenarios.flink, jid, group)
              for _ in range(24) if time.sleep(0.5) is None)
    assert own < LAG_THRESHOLD_RECORDS / 2, own
    result.note(f"12 s interval, 60 records/s; tool lag readings {lags}; Flink lag {own}")

    watch.wait_for("long_checkpoint_interval", 150)
    watch.hold(3)
    (sawtooth,) = scenarios.metric("lagsight_kafka_group_sawtooth", group=group).values()
    (period,) = scenarios.metric("lagsight_kafka_group_sawtooth_period_seconds",
                                 group=group).values()
    result.note(f"sawtooth {sawtooth:.0f}, period {period:.1f} s")
    assert sawtooth == 1
    assert abs(period - LONG_INTERVAL_MS / 1000) <= 0.2 * LONG_INTERVAL_MS / 1000, period
    watch.close()
    assert not watch.false_causes("long_checkpoint_interval", {"healthy"}), watch.history()


def test_healthy(scenarios, diagnosis_results):
    """10 records/s, 1 s checkpoints, for at least a minute next to all the other scenarios:
    after the first confirmation only `healthy` is ever exported for the pair."""
    result = diagnosis_results("healthy", "healthy", FLINK_LINE, allowed=set())
    watch = scenarios.watches["healthy"]
    result.watch = watch
    group = name("healthy")
    jid = scenarios.flink.jobs[group]
    confirmed = watch.t0 + watch.wait_for("healthy", DETECT_TIMEOUT)
    confirmed_wall = time.time() - (time.monotonic() - confirmed)
    result.false_causes_since = confirmed
    watch.hold(max(0.0, confirmed + HEALTHY_HOLD_SECONDS - time.monotonic()))
    watch.close()
    observed = time.monotonic() - confirmed

    # Ground truth: checkpoints complete (about one a second), none failed since the
    # confirmation (those triggered while the tasks were starting count as failed), commits
    # succeed, the Kafka-side lag is small.
    status, body = scenarios.flink.checkpoints(jid)
    assert status == 200, body
    counts, latest_failed = body["counts"], body["latest"]["failed"]
    assert latest_failed is None or latest_failed["trigger_timestamp"] / 1000 < confirmed_wall, (
        latest_failed)
    assert counts["completed"] >= observed / 3, (observed, counts)
    assert scenarios.flink.source_commit_counters(jid)["commitsFailed"] == 0
    assert group_lag(scenarios.bootstrap, group) < 100
    result.note(f"observed {observed:.0f} s after the first confirmation; REST: "
                f"{counts['completed']} checkpoints completed, none failed after the "
                f"confirmation, commitsFailed 0")
    after_confirm = {cause for s in watch.sightings(confirmed) for cause in s.causes}
    before_confirm = set(watch.seen()) - {"healthy"}
    result.note(f"before the first confirmation: {sorted(before_confirm) or 'nothing else'}")
    assert after_confirm == {"healthy"}, watch.history()
