"""Whether a log line the docs quote is one lagsight can write.

lagsight's messages are fmt format strings (`"{} cluster \\"{}\\": poll failed: {}"`) or string
concatenations (`"reading committed offsets of group \\"" + id + "\\": " + error`). Both become
*templates* here: text with holes, read from the C++ string literals of lib/ and cmd/ (a `{}` or
`{:...}` in a literal, or an operand of `+` that is not a literal, is a hole).

A quoted line writes a value as `<what it is>` (or `...`). It matches a template when the
template's text appears in it in order and each hole of the template takes what the line has in
its place, which must be a value: placeholders and punctuation only, or one word (`store` for the
`{}` in `{} cluster`), or text that itself matches another template (a partial error's own message
after `kafka cluster "<name>": `). So `store "<name>": poll failed: <error>` is refused although
`store "{}": {}` exists: `poll failed: <error>` is neither a value nor any message of its own.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

HOLE = object()
MIN_LETTERS = 5
PLACEHOLDER = "\0"
FMT_FIELD = re.compile(r"\{(?::[^{}]*)?\}")
DOC_PLACEHOLDER = re.compile(r"<[^<>]+>|\.\.\.")
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\", "0": "\0"}


def _string_at(text: str, i: int) -> tuple[str, int]:
    """The value of the string literal whose opening quote is text[i], and the index after it."""
    out, i = [], i + 1
    while text[i] != '"':
        if text[i] == "\\":
            out.append(ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out), i + 1


def tokens(source: str) -> list:
    """The source as string literals (str) and single other characters (one-char tuples), with
    comments, character literals and raw strings left out."""
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i) if source.find("\n", i) >= 0 else n
        elif source.startswith("/*", i):
            i = source.find("*/", i) + 2
        elif source.startswith('R"', i) and not (i and (source[i - 1].isalnum() or source[i - 1] == "_")):
            delimiter = source[i + 2:source.index("(", i)]
            i = source.index(")" + delimiter + '"', i) + len(delimiter) + 2
        elif c == "'" and not (i and source[i - 1].isalnum()):  # not a digit separator (10'000)
            i = source.index("'", i + 3 if source[i + 1] == "\\" else i + 2) + 1
        elif c == '"':
            value, i = _string_at(source, i)
            out.append(value)
        else:
            if not c.isspace():
                out.append((c,))
            i += 1
    return out


def _skip_operand(toks: list, i: int) -> int:
    """The index after the operand of `+` that starts at toks[i]."""
    depth = 0
    while i < len(toks):
        t = toks[i]
        if isinstance(t, tuple):
            if t[0] in "([{":
                depth += 1
            elif t[0] in ")]}":
                if depth == 0:
                    return i
                depth -= 1
            elif depth == 0 and t[0] in "+,;?:":
                return i
        i += 1
    return i


def _literal_parts(value: str) -> list:
    parts: list = []
    for k, piece in enumerate(FMT_FIELD.split(value)):
        if k:
            parts.append(HOLE)
        parts.extend(piece)
    return parts


def templates(source: str) -> list[tuple]:
    """Every message template the source's string literals and their `+` chains make."""
    toks, found, i = tokens(source), [], 0
    while i < len(toks):
        if not isinstance(toks[i], str):
            i += 1
            continue
        parts: list = [HOLE] if i > 0 and toks[i - 1] == ("+",) else []
        while i < len(toks):
            if isinstance(toks[i], str):
                parts.extend(_literal_parts(toks[i]))
                i += 1
            elif toks[i] == ("+",):
                if i + 1 < len(toks) and not isinstance(toks[i + 1], str):
                    parts.append(HOLE)
                    i = _skip_operand(toks, i + 1)
                else:
                    i += 1
            else:
                break
        found.append(tuple(parts))
    return found


def source_templates(roots: list[Path]) -> list[tuple]:
    out = set()
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".cpp", ".h"):
                out.update(templates(path.read_text(encoding="utf-8", errors="replace")))
    return sorted(out, key=lambda t: ["" if p is HOLE else p for p in t])


def doc_line(line: str) -> str:
    """The quoted line with each `<value>` or `...` as one PLACEHOLDER character."""
    return DOC_PLACEHOLDER.sub(PLACEHOLDER, line.strip())


class Matcher:
    def __init__(self, all_templates: list[tuple]):
        # A template says something only with some words of its own: `{}: {}` would match anything.
        self.templates = [t for t in all_templates
                          if sum(1 for p in t if p is not HOLE and p.isalpha()) >= MIN_LETTERS]
        # Literal runs of each template, to skip the ones a line cannot match at a glance.
        self.runs = [["".join(run) for run in _runs(t) if len(run) >= 3] for t in self.templates]
        self.known: dict[tuple[str, int], bool] = {}

    def matches(self, line: str, depth: int = 2) -> bool:
        if (line, depth) not in self.known:
            self.known[(line, depth)] = any(
                all(r in line for r in runs) and _fits(t, line, self, depth)
                for t, runs in zip(self.templates, self.runs))
        return self.known[(line, depth)]

    def value(self, segment: str, depth: int) -> bool:
        """Whether a hole may take `segment` of the quoted line."""
        if not re.search(r"[A-Za-z0-9]", segment.replace(PLACEHOLDER, "")):
            return True
        if PLACEHOLDER not in segment and not re.search(r"\s", segment):
            return True
        return depth > 0 and self.matches(segment, depth - 1)


def _runs(template: tuple) -> list[list[str]]:
    runs, current = [], []
    for part in template:
        if part is HOLE:
            runs.append(current)
            current = []
        else:
            current.append(part)
    return runs + [current]


def _fits(template: tuple, line: str, matcher: Matcher, depth: int) -> bool:
    @functools.lru_cache(maxsize=None)
    def fit(i: int, j: int) -> bool:
        if i == len(template):
            return j == len(line)
        part = template[i]
        if part is HOLE:
            return any(matcher.value(line[j:k], depth) and fit(i + 1, k)
                       for k in range(j + 1, len(line) + 1))
        return j < len(line) and line[j] == part and fit(i + 1, j + 1)
    return fit(0, 0)
