"""Checks of deploy/prometheus/lagsight-rules.yaml beyond what promtool checks: every alert carries
what an on-call person needs (severity, summary, a description naming the cause, a runbook link
to a section that exists in docs/runbooks.md), waits out a missed scrape, and reads only metrics lagsight exports
with labels they have. `promtool check rules` and `promtool test rules` run as their own ctest
tests.

Runbook links are relative to the repository ("docs/runbooks.md#runbook-<name>") until an install
sets where that page is served; deploy/prometheus/runbook-url.sh derives that address from the
checkout, and its one-line `sed` (docs/alerting.md) is checked here on the real files."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

import promql_names as pn

RUNBOOK_BASE = "docs/runbooks.md#"
RUNBOOK_URL_SCRIPT = os.path.join(pn.ROOT, "deploy", "prometheus", "runbook-url.sh")


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


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                          cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


class RunbookUrlTest(unittest.TestCase):
    """deploy/prometheus/runbook-url.sh in a checkout of its own, with a made-up origin."""

    def setUp(self):
        self.repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.repo)
        os.makedirs(os.path.join(self.repo, "deploy", "prometheus"))
        shutil.copy(RUNBOOK_URL_SCRIPT, os.path.join(self.repo, "deploy", "prometheus"))
        git(self.repo, "init", "-q")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "x")
        self.commit = git(self.repo, "rev-parse", "HEAD")

    def url(self, origin):
        if origin:
            git(self.repo, "remote", "add", "origin", origin)
        return subprocess.run(["sh", os.path.join(self.repo, "deploy", "prometheus", "runbook-url.sh")],
                              capture_output=True, text=True)

    def test_the_address_is_the_runbooks_of_the_origin_at_the_checked_out_commit(self):
        for origin, expected in (
                ("git@github.com:acme/lagsight.git", "https://github.com/acme/lagsight/blob/{}/docs/runbooks.md"),
                ("https://github.com/acme/lagsight", "https://github.com/acme/lagsight/blob/{}/docs/runbooks.md"),
                ("ssh://git@gitlab.example.com:2222/team/lagsight.git",
                 "https://gitlab.example.com/team/lagsight/-/blob/{}/docs/runbooks.md")):
            with self.subTest(origin=origin):
                git(self.repo, "remote", "remove", "origin") if git(self.repo, "remote") else None
                result = self.url(origin)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.strip(), expected.format(self.commit))

    def test_no_address_is_made_up(self):
        for origin, why in ((None, 'no git remote "origin"'),
                            ("https://git.example.org/x/lagsight.git", "cannot tell how git.example.org")):
            with self.subTest(origin=origin):
                git(self.repo, "remote", "remove", "origin") if git(self.repo, "remote") else None
                result = self.url(origin)
                self.assertEqual((result.returncode, result.stdout), (1, ""))
                self.assertIn(why, result.stderr)

    def test_the_documented_sed_sets_every_runbook_link_of_the_rules_and_the_dashboard(self):
        base = "https://github.com/acme/lagsight/blob/0123abc/docs/runbooks.md"
        with open(os.path.join(pn.ROOT, "docs", "alerting.md"), encoding="utf-8") as f:
            documented = f.read()
        self.assertIn('sed "s|\\"docs/runbooks.md|\\"$url|" deploy/prometheus/lagsight-rules.yaml', documented)
        sed = ["sed", f's|"docs/runbooks.md|"{base}|']
        rules = subprocess.run(sed + [pn.RULES], capture_output=True, text=True, check=True).stdout
        alerts = [r for g in yaml.safe_load(rules)["groups"] for r in g["rules"] if "alert" in r]
        self.assertGreaterEqual(len(alerts), 10)
        for alert in alerts:
            self.assertTrue(alert["annotations"]["runbook_url"].startswith(base + "#runbook-"),
                            alert["alert"])
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as out:
            out.write(rules)
            out.flush()
            checked = subprocess.run([pn.promtool(), "check", "rules", out.name],
                                     capture_output=True, text=True)
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        dashboard = subprocess.run(sed + [pn.DASHBOARD], capture_output=True, text=True, check=True)
        self.assertEqual([link["url"] for link in json.loads(dashboard.stdout)["links"]], [base])


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
