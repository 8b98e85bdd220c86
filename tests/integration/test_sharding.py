"""Sharding (``--shard=i --total-shards=n``) on a real broker and a real Flink MiniCluster.

Three shards and one unsharded instance read the same broker and the same Flink jobs. Each
consumer group must be read by exactly one shard, and the union of the three shards' expositions
must be the single instance's, series for series: the same series of every family that describes
Kafka or Flink (lagsight's own process, poll and budget metrics are each instance's own), and the
same values where the state is at rest (offsets, lags, diagnosis causes). A series two shards
both export (the log offsets of a topic groups of both read, a cluster's retention) must carry
the same value in both. The lags themselves are checked against Kafka's own consumer-groups tool
first.
"""

from __future__ import annotations

import re

import pytest

import kafka_broker as kafka
import promtext
from conftest import wait_until
from flink_job import FlinkJob, JobSpec
from workload import commit_without_joining, create_topic, produce

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

SHARDS = 3
PARTITIONS = 3
RECORDS = 40

# Each instance's own: how it polled, what it was built as, what it did for its scrapers.
OWN_FAMILIES = re.compile(
    r"^(process_|lagsight_(build_info|config_|http_|shard_info|exposition_)|"
    r"lagsight_(kafka|flink|store)_(up|poll_duration_seconds|last_poll_timestamp_seconds|"
    r"polls_total|poll_failures_total|poll_partial_errors)$|"
    r"lagsight_kafka_(record_timestamp_|series_budget|group_detail_series))")

# Families whose values hold still once the jobs have read and committed everything; the rest
# (ages, rates, timestamps, counters that go on counting) are compared series for series only.
AT_REST = {
    "lagsight_kafka_group_lag_records", "lagsight_kafka_group_committed_offset",
    "lagsight_kafka_group_info", "lagsight_kafka_group_sum_lag_records",
    "lagsight_kafka_group_max_lag_records", "lagsight_kafka_group_partition_uncommitted",
    "lagsight_kafka_partition_latest_offset", "lagsight_kafka_partition_earliest_offset",
    "lagsight_flink_lag_records", "lagsight_flink_source_current_offset",
    "lagsight_flink_source_committed_offset", "lagsight_flink_job_group_info",
    "lagsight_flink_job_info", "lagsight_diagnosis",
}


def data_series(metrics: promtext.Samples) -> promtext.Samples:
    return {key: value for key, value in metrics.items() if not OWN_FAMILIES.match(key[0])}


def union_of(scrapes: list[promtext.Samples]) -> tuple[promtext.Samples, list[str]]:
    """The shards' data series together, and the series two shards gave different values."""
    union: promtext.Samples = {}
    conflicts = []
    for metrics in scrapes:
        for key, value in data_series(metrics).items():
            if key[0] in AT_REST and key in union and union[key] != value:
                conflicts.append(f"{key}: {union[key]} and {value}")
            union[key] = value
    return union, conflicts


def differences(single: promtext.Samples, union: promtext.Samples) -> list[str]:
    found = [f"only in the single instance: {key}" for key in single.keys() - union.keys()]
    found += [f"only in the shards: {key}" for key in union.keys() - single.keys()]
    found += [f"{key}: single {single[key]}, shards {union[key]}"
              for key in single.keys() & union.keys()
              if key[0] in AT_REST and single[key] != union[key]]
    return sorted(found)


def groups_in(metrics: promtext.Samples) -> set[str]:
    return {dict(labels)["group"]
            for labels in promtext.select(metrics, "lagsight_kafka_group_info")}


def test_three_shards_export_what_one_instance_does(kafka_broker, start_lagsight, unique_prefix,
                                                    tmp_path):
    bootstrap = kafka_broker.bootstrap
    shared, own = f"{unique_prefix}.shared", f"{unique_prefix}.own"
    create_topic(bootstrap, shared, PARTITIONS)
    create_topic(bootstrap, own, PARTITIONS)
    produce(bootstrap, shared, [RECORDS] * PARTITIONS)
    produce(bootstrap, own, [RECORDS] * PARTITIONS)
    # Kafka-only groups of several shapes: lagging, caught up, partly committed, on two topics.
    plain = {}
    for n in range(15):
        group = f"{unique_prefix}-app-{n}"
        offsets = {(shared, p): (n * 3 + p) % (RECORDS + 1) for p in range(PARTITIONS - n % 2)}
        if n % 3 == 0:
            offsets.update({(own, p): RECORDS - n for p in range(PARTITIONS)})
        commit_without_joining(bootstrap, group, offsets)
        plain[group] = offsets
    # Flink jobs committing to their groups on checkpoints, each mapped to its group, and one
    # that commits nothing (no group.id): it goes by its name.
    jobs = [JobSpec(name=f"{unique_prefix}-job-{n}", topics=[shared if n % 2 else own],
                    group=f"{unique_prefix}-job-{n}-group", checkpoint_ms=1000)
            for n in range(3)]
    jobs.append(JobSpec(name=f"{unique_prefix}-job-nogroup", topics=[shared], group=None,
                        start="earliest", checkpoint_ms=1000))
    # And one that commits to a group no mapping names (outside the group filter, so no
    # instance reads the group): its shard warns that it cannot follow its group. It reads a
    # topic of its own: on a topic the others read, its offsets could equal a group's that only
    # some shards see, and it would be paired by offsets there and not elsewhere (the README's
    # reason to map every job when sharding).
    alone = f"{unique_prefix}.alone"
    create_topic(bootstrap, alone, PARTITIONS)
    produce(bootstrap, alone, [RECORDS] * PARTITIONS)
    unmapped = JobSpec(name=f"{unique_prefix}-job-unmapped", topics=[alone],
                       group=f"unmapped-{unique_prefix}", checkpoint_ms=1000)
    jobs.append(unmapped)
    with FlinkJob("1.20", jobs, tmp_path / "flink", bootstrap=bootstrap) as flink:
        # Ground truth: every mapped job has committed everything (Kafka's tool), and the
        # plain groups hold the offsets committed above.
        def at_rest() -> bool:
            rows = [r for r in kafka.consumer_groups_describe_all(bootstrap)
                    if r.group.startswith(unique_prefix)]
            job_rows = [r for r in rows if r.group.endswith("-group")]
            plain_rows = {(r.group, r.topic, r.partition): r.current_offset for r in rows
                          if r.group in plain}
            return (len(job_rows) == 3 * PARTITIONS and
                    all(r.lag == 0 and r.current_offset == RECORDS for r in job_rows) and
                    plain_rows == {(g, t, p): o for g, offsets in plain.items()
                                   for (t, p), o in offsets.items()})
        wait_until(at_rest, 120, "Kafka's tool to show every job's group committed at the end")
        tool_lag = {(r.group, r.topic, r.partition): r.lag
                    for r in kafka.consumer_groups_describe_all(bootstrap)
                    if r.group.startswith(unique_prefix) and r.lag is not None}

        flink_config = [{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
                         "poll_interval": "1s", "request_timeout": "5s",
                         "groups": [{"job": spec.name, "group": spec.group}
                                    for spec in jobs if spec.group and spec is not unmapped]}]
        settings = dict(groups={"allow": [f"{unique_prefix}-.*"]},
                        topics={"allow": [re.escape(unique_prefix) + r"\..*"]},
                        flink=flink_config)
        single = start_lagsight(bootstrap, **settings)
        shards = [start_lagsight(bootstrap, **settings,
                                 args=[f"--shard={index}", f"--total-shards={SHARDS}"])
                  for index in range(SHARDS)]

        last: dict = {}

        def agree() -> bool:
            one = data_series(single.scrape())
            scrapes = [shard.scrape() for shard in shards]
            union, conflicts = union_of(scrapes)
            last.update(single=one, scrapes=scrapes, diff=differences(one, union),
                        conflicts=conflicts)
            lags = {(dict(k)["group"], dict(k)["topic"], int(dict(k)["partition"])): v
                    for k, v in promtext.select(one, "lagsight_kafka_group_lag_records").items()}
            return (lags == tool_lag and len(promtext.select(one, "lagsight_diagnosis")) > 0 and
                    not last["diff"] and not conflicts)
        try:
            wait_until(agree, 90, "the shards' union to equal the single instance")
        except AssertionError:
            raise AssertionError(f"differences: {last.get('diff', [])[:40]}; "
                                 f"conflicts: {last.get('conflicts', [])[:20]}") from None

        scrapes = last["scrapes"]
        # Every group on exactly one shard, every shard with a share, and the shard's own
        # description of itself.
        owned = [groups_in(metrics) for metrics in scrapes]
        assert all(owned), owned
        assert sum(len(groups) for groups in owned) == len(groups_in(last["single"]))
        assert set().union(*owned) == groups_in(last["single"])
        for index, metrics in enumerate(scrapes):
            assert promtext.select(metrics, "lagsight_shard_info") == {
                frozenset({("shard", str(index)), ("total_shards", str(SHARDS))}): 1.0}
        # Each job on one shard, with its group where it has one.
        for spec in jobs:
            holders = [i for i, metrics in enumerate(scrapes)
                       if promtext.select(metrics, "lagsight_flink_job_info", job_name=spec.name)]
            assert len(holders) == 1, (spec.name, holders)
            if spec.group and spec is not unmapped:
                assert spec.group in owned[holders[0]], (spec.name, holders, owned)
        # The detail series the shards count add up to the single instance's count.
        detail = [sum(promtext.select(m, "lagsight_kafka_group_detail_series").values())
                  for m in scrapes]
        (single_detail,) = promtext.select(single.scrape(),
                                           "lagsight_kafka_group_detail_series").values()
        assert sum(detail) == single_detail, (detail, single_detail)
        # The unmapped job that commits is named in a warning by its shard alone, once.
        warning = f'job \\"{unmapped.name}\\" commits offsets but no groups mapping names its group'
        counts = [shard.log_file.read_text().count(warning) for shard in shards]
        assert sorted(counts) == [0, 0, 1], counts
        assert warning not in single.log_file.read_text()
