"""A strict parser of the Prometheus text exposition format (version 0.0.4), for tests.

Tests compare lagsight's /metrics with Kafka's own tools, so a parser that quietly skipped a
malformed line or merged a duplicated series would hide exactly the bugs they look for: every
deviation from the format raises ``ExpositionError`` instead.
"""

from __future__ import annotations

import math
import re

SeriesKey = tuple[str, frozenset[tuple[str, str]]]
Samples = dict[SeriesKey, float]

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_SPECIAL_VALUES = {"NaN": math.nan, "+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf}


class ExpositionError(ValueError):
    """The text is not valid Prometheus exposition; the message names the line."""


def parse(text: str) -> Samples:
    """Maps each sample's ``(metric name, frozenset of (label, value) pairs)`` to its value.

    Comment lines (# HELP, # TYPE, others) and blank lines carry no sample and are skipped. A
    duplicate series (same name, same label set) raises, and so does a family described twice
    (a second ``# HELP`` or ``# TYPE`` line for one name), which Prometheus's own text parser
    refuses: every test that parses an exposition fails on either.
    """
    samples: Samples = {}
    described: set[tuple[str, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        metadata = re.match(r"# (HELP|TYPE) (\S+)", line)
        if metadata:
            if metadata.groups() in described:
                raise ExpositionError(f"line {number}: second {metadata.group(1)} line for "
                                      f"{metadata.group(2)} (duplicate family): {line!r}")
            described.add(metadata.groups())
        if not line.strip() or line.startswith("#"):
            continue
        try:
            key, value = _parse_sample(line)
        except ExpositionError as error:
            raise ExpositionError(f"line {number}: {error}: {line!r}") from None
        if key in samples:
            raise ExpositionError(f"line {number}: duplicate series: {line!r}")
        samples[key] = value
    return samples


def select(samples: Samples, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The series of metric ``name`` whose labels include ``labels``, keyed by their label set."""
    wanted = set(labels.items())
    return {label_set: value for (metric, label_set), value in samples.items()
            if metric == name and wanted <= label_set}


def by_partition(samples: Samples, name: str, **labels: str) -> dict[int, float]:
    """``select`` keyed by the series' ``partition`` label (one series per partition)."""
    return {int(dict(label_set)["partition"]): value
            for label_set, value in select(samples, name, **labels).items()}


def _parse_sample(line: str) -> tuple[SeriesKey, float]:
    name_match = _METRIC_NAME.match(line)
    if name_match is None:
        raise ExpositionError("no metric name")
    name = name_match.group()
    position = name_match.end()
    labels: dict[str, str] = {}
    if position < len(line) and line[position] == "{":
        labels, position = _parse_labels(line, position + 1)
    rest = line[position:].split()
    # A sample is "value" or "value timestamp_ms", separated from the series by whitespace.
    if not rest or len(rest) > 2 or not line[position].isspace():
        raise ExpositionError("expected a value (and optional timestamp) after the series")
    if len(rest) == 2 and not re.fullmatch(r"-?[0-9]+", rest[1]):
        raise ExpositionError(f"bad timestamp {rest[1]!r}")
    return (name, frozenset(labels.items())), _parse_value(rest[0])


def _parse_labels(line: str, position: int) -> tuple[dict[str, str], int]:
    """Parses ``name="value",...}`` starting just after '{'; returns labels and the end index."""
    labels: dict[str, str] = {}
    while True:
        if line.startswith("}", position):
            return labels, position + 1
        label_match = _LABEL_NAME.match(line, position)
        if label_match is None or not line.startswith('="', label_match.end()):
            raise ExpositionError(f"bad label at column {position}")
        label = label_match.group()
        value, position = _parse_label_value(line, label_match.end() + 2)
        if label in labels:
            raise ExpositionError(f"label {label} repeated")
        labels[label] = value
        if line.startswith(",", position):
            position += 1
        elif not line.startswith("}", position):
            raise ExpositionError(f"expected ',' or '}}' at column {position}")


def _parse_label_value(line: str, position: int) -> tuple[str, int]:
    """Reads a quoted label value from just after its opening quote; returns it unescaped."""
    characters = []
    while position < len(line):
        character = line[position]
        if character == '"':
            return "".join(characters), position + 1
        if character == "\\":
            escaped = line[position + 1:position + 2]
            if escaped not in _ESCAPES:
                raise ExpositionError(f"bad escape at column {position}")
            characters.append(_ESCAPES[escaped])
            position += 2
        else:
            characters.append(character)
            position += 1
    raise ExpositionError("unterminated label value")


def _parse_value(text: str) -> float:
    if text in _SPECIAL_VALUES:
        return _SPECIAL_VALUES[text]
    if not _NUMBER.fullmatch(text):
        raise ExpositionError(f"bad value {text!r}")
    return float(text)
