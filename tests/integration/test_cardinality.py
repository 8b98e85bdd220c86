"""Cardinality controls (``series:`` of a Kafka cluster) on a real broker.

A granularity rule drops a group's per-partition (topic level) or per-topic (group level) series,
a switch drops the committed offsets, and a budget coarsens the largest group-topic pairs. What
is left must still add up to what Kafka's own consumer-groups tool reports: the sums per topic
and per group are the tool's sums, and the metric that counts the exported detail series equals
the lines really in the scrape.
"""

from __future__ import annotations

from collections import defaultdict

import kafka_broker as kafka
import promtext
from workload import commit_without_joining, create_topic, produce

DETAIL_FAMILIES = ("lagsight_kafka_group_committed_offset", "lagsight_kafka_group_lag_records",
                   "lagsight_kafka_group_partition_uncommitted",
                   "lagsight_kafka_group_lag_seconds", "lagsight_kafka_group_topic_lag_records",
                   "lagsight_kafka_group_topic_uncommitted_partitions",
                   "lagsight_kafka_group_topic_committed_offsets",
                   "lagsight_kafka_group_topic_max_lag_seconds")


def detail_lines(metrics: promtext.Samples, prefix: str) -> int:
    return sum(len([labels for labels in promtext.select(metrics, name)
                    if dict(labels)["group"].startswith(prefix)])
               for name in DETAIL_FAMILIES)


def series_of(metrics: promtext.Samples, name: str, group: str) -> dict:
    return {labels: value for labels, value in promtext.select(metrics, name).items()
            if dict(labels)["group"] == group}


def test_coarser_series_still_add_up_to_what_kafka_reports(kafka_broker, start_lagsight,
                                                           unique_prefix):
    bootstrap = kafka_broker.bootstrap
    wide, narrow = f"{unique_prefix}.wide", f"{unique_prefix}.narrow"
    create_topic(bootstrap, wide, 6)
    create_topic(bootstrap, narrow, 2)
    produce(bootstrap, wide, [40] * 6)
    produce(bootstrap, narrow, [30] * 2)
    backfill, rollup, app = (f"{unique_prefix}-{name}" for name in ("backfill", "rollup", "app"))
    commit_without_joining(bootstrap, backfill, {**{(wide, p): 10 + p for p in range(6)},
                                                 **{(narrow, p): 5 for p in range(2)}})
    commit_without_joining(bootstrap, rollup, {(narrow, 0): 0, (narrow, 1): 12})
    # Partitions 4 and 5 of wide stay uncommitted.
    commit_without_joining(bootstrap, app, {**{(wide, p): 25 + p for p in range(4)},
                                            **{(narrow, p): 20 for p in range(2)}})

    # Ground truth: Kafka's tool, per group and topic.
    truth_rows = [row for row in kafka.consumer_groups_describe_all(bootstrap)
                  if row.group.startswith(unique_prefix)]
    tool_sum: dict[str, int] = defaultdict(int)
    tool_topic_sum: dict[tuple[str, str], int] = defaultdict(int)
    tool_lag: dict[tuple[str, str, int], int] = {}
    tool_committed_sum: dict[tuple[str, str], int] = defaultdict(int)
    for row in truth_rows:
        if row.current_offset is not None:
            tool_committed_sum[(row.group, row.topic)] += row.current_offset
        if row.lag is None:
            continue
        tool_sum[row.group] += row.lag
        tool_topic_sum[(row.group, row.topic)] += row.lag
        tool_lag[(row.group, row.topic, row.partition)] = row.lag
    assert tool_sum[backfill] == sum(30 - p for p in range(6)) + 2 * 25, tool_sum
    # The tool lists only committed partitions: app's wide/4 and wide/5 are not there.
    assert {r.partition for r in truth_rows if r.group == app and r.topic == wide} == \
        {0, 1, 2, 3}

    groups = {"allow": [f"{unique_prefix}-.*"]}
    lagsight = start_lagsight(bootstrap, groups=groups, kafka_settings={"series": {
        "granularity": [{"groups": backfill, "level": "topic"},
                        {"groups": rollup, "level": "group"}],
        "partition_lag_seconds": True}})
    metrics = lagsight.wait_for(
        lambda m: {dict(labels)["group"]: value for labels, value in
                   promtext.select(m, "lagsight_kafka_group_sum_lag_records").items()} ==
        {group: float(total) for group, total in tool_sum.items()} and
        # Every lagging partition of app has its lag in seconds: the full set of series.
        len(series_of(m, "lagsight_kafka_group_lag_seconds", app)) == 6,
        "each group's sum to equal the tool's, and app's lag in seconds")

    # backfill, topic level: the tool's topic sums, no partition series.
    assert {dict(labels)["topic"]: value for labels, value in series_of(
        metrics, "lagsight_kafka_group_topic_lag_records", backfill).items()} == \
        {wide: tool_topic_sum[(backfill, wide)], narrow: tool_topic_sum[(backfill, narrow)]}
    for name in ("lagsight_kafka_group_lag_records", "lagsight_kafka_group_lag_seconds"):
        assert series_of(metrics, name, backfill) == {}, name
    # rollup, group level: neither partition nor topic series, and still its max.
    for name in DETAIL_FAMILIES:
        assert series_of(metrics, name, rollup) == {}, name
    assert list(series_of(metrics, "lagsight_kafka_group_max_lag_records", rollup).values()) == \
        [30.0]
    # app, partition level without committed offsets: the tool's lag per partition, and the
    # two uncommitted partitions flagged.
    assert {(dict(labels)["topic"], int(dict(labels)["partition"])): value for labels, value in
            series_of(metrics, "lagsight_kafka_group_lag_records", app).items()} == \
        {(topic, partition): lag for (group, topic, partition), lag in tool_lag.items()
         if group == app}
    assert {int(dict(labels)["partition"]) for labels in series_of(
        metrics, "lagsight_kafka_group_partition_uncommitted", app)} == {4, 5}
    assert promtext.select(metrics, "lagsight_kafka_group_committed_offset") == {}  # opt-in
    # By default the committed offsets come summed per group and topic, as the tool's add up
    # (rollup, at group level, has none).
    assert {(dict(labels)["group"], dict(labels)["topic"]): value for labels, value in
            promtext.select(metrics, "lagsight_kafka_group_topic_committed_offsets").items()
            if dict(labels)["group"].startswith(unique_prefix)} == \
        {pair: float(total) for pair, total in tool_committed_sum.items() if pair[0] != rollup}
    # The count metric is what the scrape holds (only this test's groups pass the filter).
    assert list(promtext.select(metrics, "lagsight_kafka_group_detail_series").values()) == \
        [float(detail_lines(metrics, unique_prefix))]
    unlimited = detail_lines(metrics, unique_prefix)

    # A budget one below that: the largest pair (app on wide) goes to topic level.
    budgeted = start_lagsight(bootstrap, groups=groups, kafka_settings={"series": {
        "granularity": [{"groups": backfill, "level": "topic"},
                        {"groups": rollup, "level": "group"}],
        "partition_lag_seconds": True, "budget": unlimited - 1}})
    metrics = budgeted.wait_for(
        lambda m: list(promtext.select(m, "lagsight_kafka_series_budget_coarsened_pairs",
                                       level="topic").values()) == [1.0] and
        len(series_of(m, "lagsight_kafka_group_topic_lag_records", app)) == 2,
        "one pair coarsened by the budget")
    exported = detail_lines(metrics, unique_prefix)
    assert exported <= unlimited - 1
    assert list(promtext.select(metrics, "lagsight_kafka_group_detail_series").values()) == \
        [float(exported)]
    assert list(promtext.select(metrics, "lagsight_kafka_series_budget_coarsened_pairs",
                                level="group").values()) == [0.0]
    assert {(dict(labels)["topic"]) for labels in series_of(
        metrics, "lagsight_kafka_group_lag_records", app)} == {narrow}
    assert {dict(labels)["topic"]: value for labels, value in series_of(
        metrics, "lagsight_kafka_group_topic_lag_records", app).items()} == \
        {wide: tool_topic_sum[(app, wide)], narrow: tool_topic_sum[(app, narrow)]}
    assert {dict(labels)["group"]: value for labels, value in promtext.select(
        metrics, "lagsight_kafka_group_sum_lag_records").items()} == \
        {group: float(total) for group, total in tool_sum.items()}
    log = budgeted.log_file.read_text()
    assert log.count(f"over series.budget {unlimited - 1}") == 1, log[-3000:]
