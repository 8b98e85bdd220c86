"""Checks of deploy/prometheus/lagsight-rules.yaml beyond what promtool checks: every alert carries
what an on-call person needs (severity, summary, a description naming the cause, a runbook link
to a section that exists in docs/runbooks.md), waits out a missed scrape, and reads only metrics lagsight exports
with labels they have. `promtool check rules` and `promtool test rules` run as their own ctest
tests."""

import re
import unittest

import yaml

import promql_names as pn

RUNBOOK_BASE = "https://github.com/lagsight/lagsight/blob/main/README.md#"


def duration_seconds(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"bad duration {text!r}")
    return sum(int(n) * units[u] for n, u in parts)


class RulesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(pn.RULES, encoding="utf-8") as f:
            cls.groups = yaml.safe_load(f)["groups"]
        cls.rules = [r for g in cls.groups for r in g["rules"]]
        cls.alerts = [r for r in cls.rules if "alert" in r]
        cls.recorded = {r["record"] for r in cls.rules if "record" in r}
        cls.metrics = pn.exported_metrics()
        with open(pn.RUNBOOKS, encoding="utf-8") as f:
            cls.anchors = pn.github_anchors(f.read())

    def test_every_alert_is_documented_and_links_a_runbook_anchor(self):
        self.assertGreaterEqual(len(self.alerts), 10)
        for alert in self.alerts:
            with self.subTest(alert=alert["alert"]):
                self.assertIn(alert["labels"]["severity"], {"critical", "warning", "info"})
                ann = alert["annotations"]
                self.assertTrue(ann["summary"].strip())
                self.assertRegex(ann["description"], r"\((cause: [a-z_{}$. ]+)[),:]",
                                 "the description names the cause")
                url = ann["runbook_url"]
                self.assertTrue(url.startswith(RUNBOOK_BASE + "runbook-"), url)
                anchor = url[len(RUNBOOK_BASE):]
                if "{{ $labels.cause }}" in anchor:
                    causes = re.search(r'cause=~"([a-z_|]+)"', alert["expr"]).group(1).split("|")
                    wanted = [anchor.replace("{{ $labels.cause }}", c) for c in causes]
                else:
                    wanted = [anchor]
                for a in wanted:
                    self.assertIn(a, self.anchors, f"docs/runbooks.md has no heading for #{a}")

    def test_every_alert_waits_out_a_missed_scrape(self):
        # Two scrape intervals at the slowest assumed scrape interval (30 s).
        for alert in self.alerts:
            with self.subTest(alert=alert["alert"]):
                self.assertGreaterEqual(duration_seconds(alert.get("for", "0s")), 60)

    def test_rules_read_only_exported_metrics_with_their_labels(self):
        known_labels = set().union(*self.metrics.values()) | pn.SCRAPE_LABELS
        for rule in self.rules:
            expr = rule["expr"]
            name = rule.get("alert") or rule.get("record")
            with self.subTest(rule=name):
                for metric in pn.metric_names(expr):
                    if ":" in metric:
                        self.assertIn(metric, self.recorded, "recording rule not defined")
                    else:
                        self.assertIn(metric, self.metrics, "lagsight does not export it")
                for metric, matchers in pn.selectors(expr):
                    allowed = self.metrics.get(metric, set()) | pn.SCRAPE_LABELS
                    if metric == "up":
                        allowed = pn.SCRAPE_LABELS
                    for label, _, _ in matchers:
                        self.assertIn(label, allowed, f"{metric} has no label {label}")
                self.assertLessEqual(pn.grouping_labels(expr), known_labels)

    def test_recording_rules_come_before_the_alerts_that_read_them(self):
        # Within one group rules run in order; an alert above its recording rule would read the
        # previous evaluation's value.
        for group in self.groups:
            defined = set()
            for rule in group["rules"]:
                for metric in pn.metric_names(rule["expr"]):
                    if metric in self.recorded:
                        self.assertIn(metric, defined, f"{metric} used before it is recorded")
                if "record" in rule:
                    defined.add(rule["record"])


class HelpersTest(unittest.TestCase):
    """The checks above are only as good as these readers of PromQL text."""

    def test_names_and_labels_are_read_from_code_not_strings(self):
        expr = ('sum by (kafka_cluster, group) (lagsight_kafka_group_lag_records{group=~"lagsight_x"})'
                ' * on (job) group_left () kafka_cluster_group:lagsight_kafka_group_lag_records:sum  # up')
        self.assertEqual(pn.metric_names(expr),
                         {"lagsight_kafka_group_lag_records", "kafka_cluster_group:lagsight_kafka_group_lag_records:sum"})
        self.assertEqual(pn.selectors(expr), [("lagsight_kafka_group_lag_records", [("group", "=~", '"lagsight_x"')])])
        self.assertEqual(pn.grouping_labels(expr), {"kafka_cluster", "group", "job"})

    def test_github_anchors(self):
        anchors = pn.github_anchors("# A b\n## Runbook: really_behind\n```\n# not a heading\n```\n## A b\n")
        self.assertEqual(anchors, {"a-b", "runbook-really_behind", "a-b-1"})


if __name__ == "__main__":
    unittest.main()
