"""The docs against the code, both ways, in the unit lane (ctest `docs_checks`).

- every configuration key lagsight's parser accepts is in docs/configuration.md's key tables, and
  every key there is accepted (asked from the built binary: config_schema.py);
- every metric name lib/ defines has a row in docs/metrics.md and every row names one lib/
  defines; tests/deploy/exported_metrics.txt agrees with both; every `lagsight_...` name the
  README or a page mentions exists;
- every relative link and anchor of README.md and docs/*.md resolves (GitHub's anchors), and so
  does every `docs/<page>.md#anchor` or `README.md#anchor` that code, rules, dashboard or chart
  mention;
- every log line quoted in a ```log block is one lagsight can write (log_lines.py);
- the README stays a front door with the picture that docs/tools/lag_picture.py draws.

Needs LAGSIGHT_BIN (ctest passes the built lagsight).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "deploy"))
import config_schema  # noqa: E402
import log_lines  # noqa: E402
import md_pages as md  # noqa: E402
import metrics_doc  # noqa: E402
import promql_names  # noqa: E402

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README] + sorted(DOCS.glob("*.md"))
PICTURE = DOCS / "images" / "kafka-vs-flink-lag.svg"
TRACE = ROOT / "tests" / "fixtures" / "traces" / "flink-diagnosis-2x" / "trace.jsonl.gz"
README_MAX_LINES = 250
# A reference to a page by its path from the repository's root, in any file that is not Markdown.
# An anchor ends in a word character; one that a template or placeholder completes
# (#runbook-{{ $labels.cause }}, #runbook-<name>) is left to the rules' own test (test_rules.py).
DOC_REFERENCE = re.compile(r"(?<![\w./-])(README\.md|docs/[\w-]+\.md)(?:#([\w-]*\w))?(?![\w{<-])")
METRIC_MENTION = re.compile(
    r"(?<![\w/.-])lagsight_(?:kafka|flink|store|diagnosis|build|shard|config|http|exposition)_"
    r"[a-z0-9_]*[a-z0-9](?![\w*])")  # not a family written with a wildcard (lagsight_kafka_partition_*)


def lagsight_binary() -> str:
    binary = os.environ.get("LAGSIGHT_BIN", str(ROOT / "build" / "cmd" / "lagsight" / "lagsight"))
    if not os.access(binary, os.X_OK):
        raise unittest.SkipTest(f"no lagsight binary at {binary}: build it or set LAGSIGHT_BIN")
    return binary


def key_table_keys(markdown: str, header: str) -> set[str]:
    """The first-column code spans of every table whose first header cell is `header`."""
    keys, in_table = set(), False
    for _, line in md.prose_lines(markdown):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if not cells:
            in_table = False
        elif cells[0] == header:
            in_table = True
        elif in_table and not set(cells[0]) <= set("-: "):
            keys.update(re.findall(r"`([^`]+)`", cells[0]))
    return keys


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in out.stdout.splitlines()]


class ConfigKeysTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = lagsight_binary()
        cls.accepted = config_schema.main_config_keys(binary)
        cls.web_accepted = config_schema.web_config_keys(binary)
        page = (DOCS / "configuration.md").read_text(encoding="utf-8")
        cls.documented = key_table_keys(page, "key")
        cls.web_documented = key_table_keys(page, "web config key")

    def test_the_schema_is_read_from_the_parser(self):
        # The walk reached the nested sections, not only the top level.
        for key in ("kafka[].series.granularity[].level", "flink[].tls.ca_file",
                    "diagnosis.lateness_targets[].target", "tls_server_config.client_ca_file"):
            self.assertIn(key, self.accepted | self.web_accepted)

    def test_every_key_the_parser_accepts_is_documented(self):
        self.assertEqual(sorted(self.accepted - self.documented), [],
                         "keys lagsight accepts without a row in docs/configuration.md")
        self.assertEqual(sorted(self.web_accepted - self.web_documented), [],
                         "web config keys without a row in docs/configuration.md")

    def test_every_documented_key_is_accepted(self):
        self.assertEqual(sorted(self.documented - self.accepted), [],
                         "docs/configuration.md documents keys lagsight refuses")
        self.assertEqual(sorted(self.web_documented - self.web_accepted), [],
                         "docs/configuration.md documents web config keys lagsight refuses")

    def test_the_readme_minimal_config_is_valid(self):
        readme = README.read_text(encoding="utf-8")
        section = readme[readme.index("## A minimal configuration"):]
        config = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
        self.assertIn("flink:", config)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(config)
            f.flush()
            result = subprocess.run([lagsight_binary(), f"--config.file={f.name}", "--config.check"],
                                    capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


class MetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.documented = metrics_doc.documented_metrics(metrics_doc.METRICS_DOC.read_text())
        cls.in_source = metrics_doc.source_metrics()

    def test_every_metric_in_the_source_is_documented_and_vice_versa(self):
        self.assertGreaterEqual(len(self.in_source), 50, sorted(self.in_source))
        self.assertGreaterEqual(len(self.documented), 50, sorted(self.documented))
        undocumented = {n: f for n, f in self.in_source.items() if n not in self.documented}
        self.assertEqual(undocumented, {}, "metrics in lib/ without a row in docs/metrics.md")
        gone = {n: d.section for n, d in self.documented.items() if n not in self.in_source}
        self.assertEqual(gone, {}, "docs/metrics.md documents metrics lib/ does not define")

    def test_exported_metrics_list_agrees_with_the_source_and_the_docs(self):
        listed = promql_names.exported_metrics()
        self.assertEqual(sorted(set(self.in_source) - set(listed)), [],
                         "missing in tests/deploy/exported_metrics.txt")
        self.assertEqual(sorted(set(listed) - set(self.in_source)), [],
                         "in tests/deploy/exported_metrics.txt, not in lib/")
        problems = {name: metrics_doc.label_problem(name, labels, self.documented[name])
                    for name, labels in listed.items() if name in self.documented}
        self.assertEqual({k: v for k, v in problems.items() if v}, {})

    def test_every_metric_the_docs_mention_exists(self):
        for page in PAGES:
            with self.subTest(page=page.name):
                mentioned = set(METRIC_MENTION.findall(page.read_text(encoding="utf-8")))
                self.assertEqual(sorted(mentioned - set(self.in_source)), [])


class LinksTest(unittest.TestCase):
    def assert_resolves(self, source: Path, target: str, line: int):
        path, _, anchor = target.partition("#")
        where = f"{source.relative_to(ROOT)}:{line}: {target}"
        file = (source.parent / path).resolve() if path else source
        self.assertTrue(file.exists(), f"{where}: no such file")
        self.assertTrue(file.is_relative_to(ROOT), f"{where}: outside the repository")
        if anchor:
            self.assertEqual(file.suffix, ".md", f"{where}: an anchor into a file that is not Markdown")
            self.assertIn(anchor, md.github_anchors(file.read_text(encoding="utf-8")),
                          f"{where}: no heading makes that anchor")

    def test_every_link_and_anchor_of_the_docs_resolves(self):
        pages = PAGES + [ROOT / "helm" / "lagsight" / "README.md"]
        count = 0
        for page in pages:
            for line, target in md.links(page.read_text(encoding="utf-8")):
                if not md.is_external(target):
                    count += 1
                    self.assert_resolves(page, target, line)
        self.assertGreaterEqual(count, 50)

    def test_every_page_reference_in_the_code_resolves(self):
        count = 0
        for file in tracked_files():
            if file.suffix == ".md" or file.parent == HERE or file.is_symlink() or not file.is_file():
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
            for match in DOC_REFERENCE.finditer(text):
                count += 1
                page, anchor = ROOT / match.group(1), match.group(2)
                where = (f"{file.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: "
                         f"{match.group(0)}")
                self.assertTrue(page.is_file(), f"{where}: no such page")
                if anchor:
                    self.assertIn(anchor, md.github_anchors(page.read_text(encoding="utf-8")),
                                  f"{where}: no heading makes that anchor")
        self.assertGreaterEqual(count, 10)


class LogLinesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.matcher = log_lines.Matcher(log_lines.source_templates([ROOT / "lib", ROOT / "cmd"]))

    def test_every_quoted_log_line_is_one_lagsight_writes(self):
        count = 0
        for page in PAGES:
            for start, lines in md.fenced_blocks(page.read_text(encoding="utf-8"), "log"):
                for offset, line in enumerate(lines):
                    if line.strip():
                        count += 1
                        self.assertTrue(self.matcher.matches(log_lines.doc_line(line)),
                                        f"{page.relative_to(ROOT)}:{start + offset}: lagsight "
                                        f"writes no such line: {line}")
        self.assertGreaterEqual(count, 5)

    def test_the_matcher_tells_a_real_line_from_a_wrong_one(self):
        real = 'store cluster "<name>": poll failed: <error>'
        for line, expected in ((real, True),
                               ('store "<name>": poll failed: <error>', False),  # the old runbook's
                               ('kafka cluster "<name>": made up words here', False),
                               ('kafka cluster "<name>": reading committed offsets of group '
                                '"<group>": <error>', True)):
            with self.subTest(line=line):
                self.assertEqual(self.matcher.matches(log_lines.doc_line(line)), expected)


class ReadmeTest(unittest.TestCase):
    def test_the_readme_is_a_front_door(self):
        readme = README.read_text(encoding="utf-8")
        self.assertLessEqual(len(readme.splitlines()), README_MAX_LINES)
        self.assertIn(f"]({PICTURE.relative_to(ROOT)})", readme)
        for command in ("deploy/demo.sh     # the demo", "tests/run.sh       # builds and runs"):
            self.assertIn(command, readme)

    def test_the_picture_is_what_the_script_draws_from_the_recorded_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            drawn = Path(tmp) / "picture.svg"
            subprocess.run([sys.executable, str(DOCS / "tools" / "lag_picture.py"), str(TRACE),
                            str(drawn)], check=True, capture_output=True, timeout=60)
            self.assertEqual(drawn.read_bytes(), PICTURE.read_bytes(),
                             "docs/images: run the command in docs/tools/lag_picture.py's docstring")
        self.assertLess(PICTURE.stat().st_size, 60_000)


if __name__ == "__main__":
    unittest.main()
