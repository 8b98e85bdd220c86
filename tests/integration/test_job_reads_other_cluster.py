"""A Flink job whose bootstrap list names two real Kafka clusters, and that reads the one lagsight
does not poll: its positions lie beyond the log ends lagsight sees, which no reader of that
cluster can reach. lagsight must export by how much, diagnose cluster_mismatch for the job, and
drop both once the job reads the polled cluster again.

Cluster A is the session's broker (lagsight polls it); cluster B is a second KRaft broker of this
test, holding the same topic with more records. The job lists A first, through a proxy that is
down while the job starts, so its clients reach B, as a client does when the first address of a
list does not answer; the proxy then answers again, and the list names two live clusters.
Ground truth: the Flink REST API (the reader's currentOffset) and Kafka's own tools on each
cluster (log ends, the group's committed offsets).
"""

from __future__ import annotations

import re
import threading

import kafka_broker as kafka
import promtext
from conftest import wait_until
from flink_job import FlinkJob, JobSpec
from tcp_proxy import TcpProxy
from workload import create_topic, produce

PARTITIONS = 2
ON_POLLED = 100     # records per partition on cluster A, the one lagsight polls
ON_OTHER = 2000     # records per partition on cluster B, the one the job reaches
OFFSET_ID = re.compile(r"^\d+\.[^.]+\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)\.currentOffset$")


def rest_positions(flink: FlinkJob, jid: str) -> dict[int, int]:
    """partition -> currentOffset + 1 from the REST API (unset ones left out)."""
    vid = flink.source_vertex_id(jid)
    ids = [m["id"] for m in flink.vertex_metrics(jid, vid) if OFFSET_ID.match(m["id"])]
    positions = {}
    for metric in flink.vertex_metrics(jid, vid, ids) if ids else []:
        value = int(float(metric["value"]))
        if value >= 0:
            positions[int(OFFSET_ID.match(metric["id"]).group(2))] = value + 1
    return positions


def beyond(metrics: promtext.Samples, job_name: str) -> dict[int, float]:
    return {int(dict(k)["partition"]): v for k, v in promtext.select(
        metrics, "lagsight_flink_position_beyond_log_end_records", job_name=job_name).items()}


def cause(metrics: promtext.Samples, job_name: str) -> set[str]:
    return {dict(k)["cause"] for k, v in
            promtext.select(metrics, "lagsight_diagnosis", job_name=job_name).items() if v == 1}


def test_a_job_reading_another_cluster_is_cluster_mismatch(kafka_broker, own_broker,
                                                           start_lagsight, unique_prefix,
                                                           tmp_path):
    polled, other = kafka_broker.bootstrap, own_broker.bootstrap
    topic = f"{unique_prefix}.events"
    group = f"{unique_prefix}-reader"
    for bootstrap, records in ((polled, ON_POLLED), (other, ON_OTHER)):
        create_topic(bootstrap, topic, PARTITIONS)
        produce(bootstrap, topic, [records] * PARTITIONS)
    host, port = polled.split(",")[0].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    outage = threading.Thread(target=proxy.outage, args=(60,), daemon=True)
    outage.start()  # A's address in the job's list does not answer while the job starts
    try:
        spec = JobSpec(name=f"{unique_prefix}-job", topics=[topic], group=group, start="earliest",
                       checkpoint_ms=1000, bootstrap=f"127.0.0.1:{proxy.port},{other}")
        with FlinkJob("2.x", [spec], tmp_path / "flink", bootstrap=polled) as flink:
            lagsight = start_lagsight(polled, flink=[{
                "name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
                "poll_interval": "1s", "request_timeout": "5s"}])
            jid = flink.jobs[spec.name]

            # Ground truth: the job read cluster B to its end (REST), and committed there (B's
            # tool), while A holds 100 records per partition and no offsets of the group.
            wait_until(lambda: rest_positions(flink, jid) == {p: ON_OTHER for p in
                                                              range(PARTITIONS)},
                       120, "the job to read cluster B to its end")
            wait_until(lambda: sorted(r.current_offset for r in
                                      kafka.consumer_groups_describe_all(other)
                                      if r.group == group) == [ON_OTHER] * PARTITIONS,
                       60, "the job's group to commit on cluster B")
            outage.join()  # both addresses of the job's list answer from here on
            log_end = kafka.topic_offsets(polled, re.escape(topic), "latest")
            assert log_end == {(topic, p): ON_POLLED for p in range(PARTITIONS)}
            assert not [r for r in kafka.consumer_groups_describe_all(polled) if r.group == group]

            # lagsight: by how much each position is beyond A's log end, Flink-side lag 0, and
            # the job's diagnosis cluster_mismatch.
            expected = {p: float(ON_OTHER - ON_POLLED) for p in range(PARTITIONS)}
            metrics = lagsight.wait_for(lambda m: beyond(m, spec.name) == expected,
                                        f"positions beyond the log end by {expected}")
            lags = promtext.select(metrics, "lagsight_flink_lag_records", job_name=spec.name)
            assert sorted(lags.values()) == [0.0] * PARTITIONS
            lagsight.wait_for(lambda m: cause(m, spec.name) == {"cluster_mismatch"},
                              "the job's diagnosis cluster_mismatch", timeout=60)
            status, page = lagsight.get("/")
            assert status == 200
            assert f"position beyond the log end: {topic}/0" in page

            # Fixed: the job restarts on cluster A alone. The evidence goes with it.
            flink.cancel_job(jid)
            fixed = JobSpec(name=f"{unique_prefix}-fixed", topics=[topic], group=group,
                            start="earliest", checkpoint_ms=1000, bootstrap=polled)
            fixed_jid = flink.submit(fixed)
            wait_until(lambda: rest_positions(flink, fixed_jid) == {p: ON_POLLED for p in
                                                                    range(PARTITIONS)},
                       120, "the fixed job to read cluster A to its end")
            lagsight.wait_for(lambda m: not beyond(m, fixed.name) and
                              not promtext.select(m, "lagsight_flink_position_beyond_log_end_records")
                              and cause(m, fixed.name) and
                              "cluster_mismatch" not in cause(m, fixed.name),
                              "no position beyond the log end, no cluster_mismatch", timeout=60)
    finally:
        proxy.close()


def test_two_sources_on_two_clusters_are_joined_each_with_its_cluster(kafka_broker, own_broker,
                                                                      start_lagsight,
                                                                      unique_prefix, tmp_path):
    """One job, two KafkaSources: one reads cluster A, the other cluster B, each committing to its
    own group. lagsight polls both clusters, with no Kafka cluster named for the Flink cluster:
    each source must be joined with the cluster its topic lives on and the group there that holds
    its offsets, and diagnosed as its own pair."""
    clusters = {"local": kafka_broker.bootstrap, "edge": own_broker.bootstrap}
    topics = {"local": f"{unique_prefix}.orders", "edge": f"{unique_prefix}.clicks"}
    groups = {"local": f"{unique_prefix}-orders", "edge": f"{unique_prefix}-clicks"}
    records = {"local": 300, "edge": 700}
    for name, bootstrap in clusters.items():
        create_topic(bootstrap, topics[name], PARTITIONS)
        produce(bootstrap, topics[name], [records[name]] * PARTITIONS)
    spec = JobSpec(name=f"{unique_prefix}-job", topics=[topics["local"]], group=groups["local"],
                   start="earliest", checkpoint_ms=1000, bootstrap=clusters["local"],
                   source=f"{unique_prefix}-orders-source",
                   extra={"topic2": topics["edge"], "group2": groups["edge"],
                          "bootstrap2": clusters["edge"],
                          "source2": f"{unique_prefix}-clicks-source"})
    sources = {"local": f"{unique_prefix}-orders-source", "edge": f"{unique_prefix}-clicks-source"}
    with FlinkJob("2.x", [spec], tmp_path / "flink", bootstrap=clusters["local"]) as flink:
        lagsight = start_lagsight(
            clusters["local"],
            more_kafka=[{"name": "edge", "bootstrap_servers": clusters["edge"],
                         "poll_interval": "1s", "request_timeout": "5s"}],
            flink=[{"name": "mini", "rest_url": flink.rest_url, "poll_interval": "1s",
                    "request_timeout": "5s"}])
        jid = flink.jobs[spec.name]

        # Ground truth: each group committed its topic's end on its own cluster (Kafka's tool).
        for name, bootstrap in clusters.items():
            wait_until(lambda b=bootstrap, n=name: sorted(
                r.current_offset for r in kafka.consumer_groups_describe_all(b)
                if r.group == groups[n]) == [records[n]] * PARTITIONS,
                120, f"the job's {name} source to commit everything on its cluster")

        def pairs(m: promtext.Samples) -> set[tuple[str, str, str]]:
            return {(dict(k)["kafka_cluster"], dict(k)["group"], dict(k)["association"])
                    for k in promtext.select(m, "lagsight_flink_job_group_info", job_id=jid)}
        metrics = lagsight.wait_for(
            lambda m: pairs(m) == {(n, groups[n], "matched") for n in clusters},
            "each source paired with its own cluster's group")

        # Flink-side lag per source, against its own cluster: log end (that cluster's tool) -
        # (currentOffset + 1) (REST), both at the end here.
        vid_of = {v["name"]: v["id"] for v in flink.rest_get(f"/jobs/{jid}")[1]["vertices"]}
        assert len([n for n in vid_of if n.startswith("Source:")]) == 2, vid_of
        for name, bootstrap in clusters.items():
            log_end = kafka.topic_offsets(bootstrap, re.escape(topics[name]), "latest")
            assert set(log_end.values()) == {records[name]}
            lags = promtext.select(metrics, "lagsight_flink_lag_records", job_id=jid,
                                   source=sources[name])
            assert {dict(k)["topic"] for k in lags} == {topics[name]}
            assert sorted(lags.values()) == [0.0] * PARTITIONS

        # Two pairs, one per cluster and group, each judged on its own: both healthy.
        def diagnosis(m: promtext.Samples) -> dict[tuple[str, str], str]:
            return {(dict(k)["kafka_cluster"], dict(k)["group"]): dict(k)["cause"]
                    for k, v in promtext.select(m, "lagsight_diagnosis", job_id=jid).items()
                    if v == 1}
        lagsight.wait_for(
            lambda m: diagnosis(m) == {(n, groups[n]): "healthy" for n in clusters},
            "a healthy pair per source, on its own cluster", timeout=90)
