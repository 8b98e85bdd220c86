"""docs/metrics.md's metric tables, and the metric names lagsight's source defines.

Conventions of the page read here: a metric cell (first column of a table whose header starts
with `metric`) names metrics in full, in backticks, optionally with `{label,...}` (labels the
series carries besides the section's); a `labels` column, where the table has one, lists a
metric's labels exactly ("same" = the row above); without one, the section's "Labels:" paragraph
lists the labels its metrics may carry.

Used by the unit lane (tests/docs/test_docs.py: the page against the source) and by the
integration test that compares the page with a live lagsight
(tests/integration/test_metrics_reference.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
METRICS_DOC = REPO_ROOT / "docs" / "metrics.md"
SOURCE_DIR = REPO_ROOT / "lib"

METRIC_NAME_LITERAL = re.compile(r'"(lagsight_[a-zA-Z0-9_]*)"')
CODE_SPAN = re.compile(r"`([^`]*)`")
DOC_NAME = re.compile(r"(lagsight_[a-z0-9_]+)(?:\{([a-z_, ]*)\})?")


@dataclass
class DocRow:
    section: str
    labels: set[str] | None          # the `labels` column; None where the table has none
    extra_labels: set[str]           # `{...}` after the name
    section_labels: set[str]         # the section's "Labels:" paragraph


def _table_rows(lines: list[str], i: int, section: str, section_labels: set[str],
                docs: dict[str, DocRow]) -> int:
    """Reads the metric table whose header is lines[i]; returns the index after it."""
    header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
    has_labels = len(header) > 1 and header[1] == "labels"
    i += 2                                   # the header and the |---| line
    previous_labels: set[str] | None = None
    while i < len(lines) and lines[i].startswith("|"):
        cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
        labels = None
        if has_labels:
            column = cells[1]
            labels = (set(previous_labels or ()) if column == "same" else
                      {x.strip() for x in column.split(",") if x.strip()})
            previous_labels = labels
        for span in CODE_SPAN.findall(cells[0]):
            assert not span.startswith("..."), (
                f"docs/metrics.md section {section!r}: write {span!r} as the full metric name")
            match = DOC_NAME.fullmatch(span)
            assert match, f"docs/metrics.md section {section!r}: {span!r} is not a metric name"
            name = match.group(1)
            assert name not in docs, f"docs/metrics.md documents {name} twice"
            extra = {x.strip() for x in (match.group(2) or "").split(",") if x.strip()}
            docs[name] = DocRow(section, labels, extra, section_labels)
        i += 1
    return i


def documented_metrics(text: str) -> dict[str, DocRow]:
    """metric name -> where and with which labels the page's metric tables document it.

    Raises AssertionError for a cell the convention does not cover (an abbreviated name, a
    metric documented twice), so a table nobody can check fails loudly."""
    docs: dict[str, DocRow] = {}
    section, section_labels = "", set()
    lines = text.splitlines()
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            section, section_labels = line.lstrip("#").strip(), set()
        elif not in_fence and line.startswith("Labels:"):
            paragraph = []
            while i < len(lines) and lines[i].strip():
                paragraph.append(lines[i])
                i += 1
            section_labels = set(CODE_SPAN.findall(" ".join(paragraph)))
            continue
        elif not in_fence and re.match(r"\|\s*metric\s*\|", line):
            i = _table_rows(lines, i, section, section_labels, docs)
            continue
        i += 1
    return docs


def source_metrics(root: Path = SOURCE_DIR) -> dict[str, list[str]]:
    """metric name -> the files under `root` whose string literals name it."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in (".cpp", ".h") and path.is_file():
            for name in METRIC_NAME_LITERAL.findall(path.read_text(errors="replace")):
                found.setdefault(name, []).append(str(path.relative_to(REPO_ROOT)))
    return found


def label_problem(name: str, labels: set[str], doc: DocRow) -> str | None:
    """Why a series of ``name`` with ``labels`` does not match the page's row, or None."""
    if doc.labels is not None:
        if labels != doc.labels:
            return f"labels {sorted(labels)}, docs/metrics.md's labels column says {sorted(doc.labels)}"
        return None
    if not doc.extra_labels <= labels:
        return f"labels {sorted(labels)} lack {sorted(doc.extra_labels - labels)} of docs/metrics.md"
    allowed = doc.section_labels | doc.extra_labels
    if not labels <= allowed:
        return (f"labels {sorted(labels - allowed)} are neither in {name}{{...}} nor in the "
                f"'Labels:' of section {doc.section!r}")
    return None
