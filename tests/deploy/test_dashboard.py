"""Checks of deploy/grafana/lagsight-dashboard.json: it is a dashboard Grafana can import (panels,
targets, the variables docs/alerting.md promises), every panel query is PromQL that Prometheus's own
parser accepts once the template variables are filled in, and every metric it reads is one
lagsight exports, with labels that metric has, and every query returns data on the rule tests'
healthy-sawtooth series (so a join on the wrong labels fails here). That each query returns data
from a real lagsight is for the end-to-end test with a real Prometheus."""

import json
import os
import re
import subprocess
import tempfile
import unittest

import yaml

import promql_names as pn

VARIABLES = {"datasource", "kafka_cluster", "flink_cluster", "job_name", "group"}
VARIABLE_REF = re.compile(r"\$\{?(\w+)(?::\w+)?\}?")


def all_panels(panels):
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def fill_variables(expr):
    """The query as Grafana sends it with every multi-value variable at "All" (regex `.*`)."""
    return VARIABLE_REF.sub(".*", expr)


def dashboard_queries(dashboard):
    """(where, PromQL) for every panel target and every query variable's selector."""
    queries = []
    for panel in all_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            queries.append((f'panel "{panel["title"]}" target {target["refId"]}', target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", var["definition"])
            queries.append((f'variable {var["name"]}', m.group(1)))
    return queries


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(pn.DASHBOARD, encoding="utf-8") as f:
            cls.dashboard = json.load(f)
        cls.panels = list(all_panels(cls.dashboard["panels"]))
        cls.queries = dashboard_queries(cls.dashboard)
        cls.metrics = pn.exported_metrics()

    def test_structure(self):
        d = self.dashboard
        for key in ("title", "uid", "schemaVersion", "panels", "templating", "time"):
            self.assertIn(key, d)
        ids = [p["id"] for p in self.panels]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        for panel in self.panels:
            with self.subTest(panel=panel["title"]):
                self.assertTrue(panel["title"])
                self.assertEqual(set(panel["gridPos"]), {"x", "y", "w", "h"})
                self.assertLessEqual(panel["gridPos"]["x"] + panel["gridPos"]["w"], 24)
                if panel["type"] == "row":
                    continue
                self.assertEqual(panel["datasource"], {"type": "prometheus", "uid": "${datasource}"})
                self.assertTrue(panel["targets"])
                refs = [t["refId"] for t in panel["targets"]]
                self.assertEqual(len(refs), len(set(refs)))
                for target in panel["targets"]:
                    self.assertTrue(target["expr"].strip())
                    self.assertEqual(target["datasource"], panel["datasource"])

    def test_variables(self):
        variables = {v["name"]: v for v in self.dashboard["templating"]["list"]}
        self.assertEqual(set(variables), VARIABLES)
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        for name in VARIABLES - {"datasource"}:
            v = variables[name]
            with self.subTest(variable=name):
                # "All" must become a regex that matches everything, including an absent label
                # (Kafka-only groups have no job_name, a job without a group no group).
                self.assertTrue(v["multi"] and v["includeAll"])
                self.assertEqual(v["allValue"], ".*")
                m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", v["definition"])
                self.assertIsNotNone(m, v["definition"])
                self.assertEqual(m.group(2), name)
                self.assertEqual(v["query"]["query"], v["definition"])
        repeats = {p["repeat"] for p in self.panels if p.get("repeat")}
        self.assertEqual(repeats, {"job_name", "group"}, "one row per job and one per group")

    def test_the_promised_panels_exist(self):
        exprs = " ".join(e for _, e in self.queries)
        for metric in ("lagsight_kafka_group_sum_lag_records", "lagsight_flink_lag_records",
                       "lagsight_flink_checkpoint_age_seconds", "lagsight_flink_checkpoint_interval_seconds",
                       "lagsight_flink_source_commits_failed_total", "lagsight_flink_source_commit_failure_ratio",
                       "lagsight_kafka_group_max_lag_seconds", "lagsight_flink_source_emit_event_time_lag_seconds",
                       "lagsight_flink_topic_max_lag_seconds", "lagsight_flink_source_catch_up_seconds",
                       "lagsight_diagnosis", "lagsight_kafka_group_topic_committed_offsets",
                       "lagsight_kafka_group_topic_lag_records", "lagsight_kafka_group_offsets_expiry_seconds"):
            self.assertIn(metric, exprs)
        overlay = [p for p in self.panels if p["title"] == "Kafka-side vs Flink-side lag"][0]
        used = set().union(*(pn.metric_names(t["expr"]) for t in overlay["targets"]))
        self.assertLessEqual({"lagsight_kafka_group_sum_lag_records", "lagsight_flink_lag_records"}, used)
        diagnosis = [p for p in self.panels if p["title"] == "Diagnosis"][0]
        self.assertEqual(diagnosis["type"], "table")
        self.assertIn("== 1", diagnosis["targets"][0]["expr"])
        self.assertEqual(diagnosis["targets"][0]["format"], "table")
        evidence = [p for p in self.panels if p["title"] == "Diagnosis evidence"][0]
        self.assertEqual(evidence["type"], "table")
        self.assertIn("lagsight_diagnosis_evidence", evidence["targets"][0]["expr"])

    def test_variables_are_used_as_regex_matchers(self):
        defined = {v["name"] for v in self.dashboard["templating"]["list"]}
        for where, expr in self.queries:
            with self.subTest(query=where):
                self.assertLessEqual(set(VARIABLE_REF.findall(expr)), defined)
                for metric, matchers in pn.selectors(expr):
                    for label, op, value in matchers:
                        if "$" in value:
                            self.assertEqual(op, "=~", f"{label}{op}{value}: multi-value needs =~")

    def test_every_query_parses(self):
        filled = [fill_variables(e) for _, e in self.queries]
        bad = pn.promtool_rejects(filled)
        self.assertEqual({self.queries[i][0]: err for i, err in bad.items()}, {})

    def test_every_metric_is_exported_with_those_labels(self):
        known_labels = set().union(*self.metrics.values()) | pn.SCRAPE_LABELS
        for where, expr in self.queries:
            with self.subTest(query=where):
                for metric in pn.metric_names(expr):
                    self.assertIn(metric, self.metrics, "lagsight does not export it")
                for metric, matchers in pn.selectors(expr):
                    for label, _, _ in matchers:
                        self.assertIn(label, self.metrics[metric] | pn.SCRAPE_LABELS, f"{metric} has no {label}")
                self.assertLessEqual(pn.grouping_labels(expr), known_labels)

    def healthy_sawtooth_series(self):
        """The healthy-sawtooth series of the rule tests (lagsight's label sets plus
        job/instance), with the series those rules do not read: a join on the wrong labels
        returns nothing. (The bottleneck series exist only while a job is behind; they are here
        for their label sets.)"""
        with open(os.path.join(os.path.dirname(pn.RULES), "tests", "quiet.yaml"), encoding="utf-8") as f:
            series = list(yaml.safe_load(f)["tests"][0]["input_series"])
        scrape = 'job="lagsight",instance="lagsight:9713"'
        job = 'flink_cluster="prod-flink",job_id="5d1f0c3a9e8b47a6b2c4d6e8f0a1b3c5",job_name="orders-enrichment"'
        group = 'kafka_cluster="prod",group="orders-enrichment"'
        partition = 'topic="orders.v2",partition="0"'
        for name, labels, values in [
                ("lagsight_flink_checkpoint_age_seconds", job, "0+30x19 0+30x19 0+30x19 0"),
                ("lagsight_flink_checkpoint_gap_records", f'{job},source="orders-source",{partition}', "0+500x60"),
                ("lagsight_flink_source_commit_failure_ratio", f'{job},source="orders-source"', "0x60"),
                ("lagsight_flink_source_emit_event_time_lag_seconds", f'{job},source="orders-source"', "1x60"),
                ("lagsight_flink_source_pending_records", f'{job},source="orders-source"', "5x60"),
                ("lagsight_flink_topic_max_lag_seconds", f'{job},source="orders-source",topic="orders.v2"', "2x60"),
                ("lagsight_flink_job_lateness_target_seconds", job, "300x60"),
                ("lagsight_flink_source_catch_up_seconds", f'{job},source="orders-source"', "0x60"),
                ("lagsight_kafka_group_catch_up_seconds", group, "0x60"),
                ("lagsight_kafka_group_topic_committed_offsets", f'{group},topic="orders.v2"', "0+500x60"),
                ("lagsight_kafka_group_topic_max_lag_seconds", f'{group},topic="orders.v2"', "1x60"),
                ("lagsight_kafka_group_sawtooth_period_seconds", group, "600x60"),
                ("lagsight_kafka_group_member_info",
                 f'{group},member_id="m-1",client_id="enricher-1",host="/10.0.0.5",group_instance_id=""',
                 "1x60"),
                ("lagsight_kafka_group_member_assigned_partitions", f'{group},member_id="m-1",topic="orders.v2"',
                 "2x60"),
                ("lagsight_kafka_group_partition_owner", f'{group},{partition},member_id="m-1"', "1x60"),
                ("lagsight_kafka_group_sawtooth_amplitude_records", group, "9500x60"),
                ("lagsight_diagnosis_since_timestamp_seconds",
                 'kafka_cluster="prod",group="orders-enrichment",job_id="5d1f0c3a9e8b47a6b2c4d6e8f0a1b3c5",'
                 'job_name="orders-enrichment",cause="long_checkpoint_interval"', "600x60"),
                ("lagsight_diagnosis_evidence",
                 'kafka_cluster="prod",group="orders-enrichment",job_id="5d1f0c3a9e8b47a6b2c4d6e8f0a1b3c5",'
                 'job_name="orders-enrichment",cause="long_checkpoint_interval"', "1x60"),
                *[(name, f'{job},vertex="orders-map",vertex_id="98f3017e84ee1434a593b21d18aea12e"', "1x60")
                  for name in ("lagsight_flink_job_bottleneck_busy_ratio",
                               "lagsight_flink_job_bottleneck_parallelism",
                               "lagsight_flink_job_bottleneck_skewed",
                               "lagsight_flink_job_bottleneck_busiest_subtask")],
                *[(name, 'kafka_cluster="prod",group="orders-enrichment",job_id="5d1f0c3a9e8b47a6b2c4d6e8f0a1b3c5",'
                   'job_name="orders-enrichment",vertex="orders-map"', "3x60")
                  for name in ("lagsight_diagnosis_recommended_parallelism",
                               "lagsight_diagnosis_catch_up_at_current_parallelism_seconds")]]:
            series.append({"series": f"{name}{{{labels},{scrape}}}", "values": values})
        return series

    def assert_queries_return_data(self, series, queries):
        probes = [{"expr": f"clamp_max(count({fill_variables(e)}), 1)", "eval_time": "29m",
                   "exp_samples": [{"labels": "{}", "value": 1}]} for _, e in queries]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "dashboard_data.yaml")
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump({"evaluation_interval": "30s", "tests": [
                    {"interval": "30s", "input_series": series, "promql_expr_test": probes}]}, f)
            result = subprocess.run([pn.promtool(), "test", "rules", path], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_every_query_returns_data_on_a_healthy_sawtooth(self):
        self.assert_queries_return_data(self.healthy_sawtooth_series(), self.queries)

    def test_group_and_topic_panels_return_data_for_a_group_at_topic_level(self):
        # series.granularity (or the budget) can put a group at topic level: no per-partition
        # group series, the topic's and the group's own kept. Every query that does not read a
        # per-partition group series must still show that group.
        per_partition = {m for m, labels in self.metrics.items()
                         if m.startswith("lagsight_kafka_group_") and "partition" in labels}
        self.assertIn("lagsight_kafka_group_lag_records", per_partition)
        series = [s for s in self.healthy_sawtooth_series()
                  if s["series"].split("{")[0] not in per_partition]
        # Only the lag per member needs partitions by nature: it joins each partition's holder.
        queries = [(where, e) for where, e in self.queries
                   if "lagsight_kafka_group_partition_owner" not in pn.metric_names(e)]
        self.assertEqual(len(queries), len(self.queries) - 1)
        self.assert_queries_return_data(series, queries)

    def test_the_parse_check_can_fail(self):
        bad = pn.promtool_rejects(['sum by (group (lagsight_kafka_group_lag_records{group=~".*"})',
                                   'sum by (group) (lagsight_kafka_group_lag_records{group=~".*"})'])
        self.assertEqual(set(bad), {0})


if __name__ == "__main__":
    unittest.main()
