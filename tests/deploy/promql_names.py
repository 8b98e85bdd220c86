"""What the deploy checks need to know about PromQL text: the metric and label names an
expression uses, whether `promtool` accepts it, and the anchors GitHub gives Markdown headings.

No PromQL parser ships as a CLI (promtool has none), so expressions are validated by handing them
to `promtool check rules` as recording rules; names are read from the text with the string
literals removed, which is exact for the expressions lagsight ships (no metric name is ever
quoted in them)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs"))
from md_pages import github_anchors  # noqa: E402,F401  (one reading of GitHub's anchors)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RULES = os.path.join(ROOT, "deploy", "prometheus", "lagsight-rules.yaml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "lagsight-dashboard.json")
RUNBOOKS = os.path.join(ROOT, "docs", "runbooks.md")
# Labels Prometheus attaches to every scraped series, and the ALERTS labels.
SCRAPE_LABELS = {"job", "instance"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_COMMENT = re.compile(r"#[^\n]*")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*,?')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")


def exported_metrics():
    """{metric name: set of labels} from exported_metrics.txt."""
    metrics = {}
    with open(os.path.join(HERE, "exported_metrics.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, labels = line.split()
            metrics[name] = set() if labels == "-" else set(labels.split(","))
    return metrics


def _code(expr):
    """The expression without string literals and comments."""
    return _COMMENT.sub("", _STRING.sub('""', expr))


def metric_names(expr):
    """lagsight metric names and recording-rule names (level:metric:ops) used in `expr`."""
    names = set()
    for token in _IDENT.findall(_code(expr)):
        if token.startswith("lagsight_") or ":" in token:
            names.add(token)
    return names


def selectors(expr):
    """(metric, [(label, op, quoted value)]) for each `metric{...}` in `expr`."""
    found = []
    for match in _SELECTOR.finditer(_COMMENT.sub("", expr)):
        body, matchers, pos = match.group(2), [], 0
        while pos < len(body):
            m = _MATCHER.match(body, pos)
            if not m:
                raise ValueError(f"cannot read matchers {body!r} in {expr!r}")
            matchers.append((m.group(1), m.group(2), m.group(3)))
            pos = m.end()
        found.append((match.group(1), matchers))
    return found


def grouping_labels(expr):
    """Label names in by/without/on/ignoring/group_left/group_right clauses."""
    labels = set()
    for _, inner in _GROUPING.findall(_code(expr)):
        labels.update(x.strip() for x in inner.split(",") if x.strip())
    return labels


def promtool():
    path = shutil.which("promtool")
    if not path:
        raise RuntimeError("promtool not found (Debian package `prometheus`)")
    return path


def promtool_rejects(exprs):
    """{index: promtool's error} for the expressions promtool's parser rejects ({} if none)."""
    bad = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, expr in enumerate(exprs):
            path = os.path.join(tmp, f"expr_{i}.yaml")
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump({"groups": [{"name": "check", "rules": [
                    {"record": f"dashboard_expr_{i}", "expr": expr}]}]}, f)
        paths = [os.path.join(tmp, f"expr_{i}.yaml") for i in range(len(exprs))]
        # One promtool run per expression keeps each error next to its expression; it is fast.
        for i, path in enumerate(paths):
            result = subprocess.run([promtool(), "check", "rules", path], capture_output=True, text=True)
            if result.returncode != 0:
                bad[i] = (result.stdout + result.stderr).strip()
    return bad
