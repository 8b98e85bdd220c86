#!/usr/bin/env python3
"""The configuration keys lagsight accepts, as its own parser states them: no list kept by hand.

lagsight is strict: a key it does not know is an error that lists the keys it knows there
(`kafka[0].series.zz: unknown key (known keys: granularity, ...)`; lib/config/section_reader.cpp,
lib/http/web_config.cpp). So this asks the real binary, with `--config.check`: it writes a small
valid configuration, plants one unknown key in a mapping, and reads the known keys from the error.
For each key found it then tries the key as a mapping and as a list of mappings; where the parser
answers with another "unknown key" there, the key holds a section of its own, walked the same way.
A value the parser refuses for another reason (a string, a list of names, `properties`, which
librdkafka checks) is a leaf.

Keys are written as the docs write them: `kafka[].series.granularity[].level`, `[]` for "each item
of the list". Web config keys (`--web.config.file`) come as their own set.

Usage: tests/docs/config_schema.py LAGSIGHT_BIN   (prints both sets, one key a line)
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

PROBE = "lagsight_docs_probe"
# The smallest configuration that reaches every section: each list holds one valid item, so a key
# planted anywhere is the first problem the parser meets. https, so `tls` is read.
MAIN_BASE = {
    "kafka": [{"name": "k", "bootstrap_servers": "127.0.0.1:9"}],
    "flink": [{"name": "f", "rest_url": "https://127.0.0.1:9", "kafka_cluster": "k"}],
    "positions": [{"name": "s", "store": "redis", "url": "redis://127.0.0.1:9", "job": ".*",
                   "key": "offsets:{topic}", "field": "{partition}"}],
    "diagnosis": {},
}
WEB_BASE: dict = {}
UNKNOWN = re.compile(r": (\S+): unknown key \(known keys: ([^)]*)\)")


class Checker:
    """Runs `lagsight --config.check` on configurations written to a temporary directory."""

    def __init__(self, binary: str, workdir: str):
        self.binary, self.workdir = binary, workdir
        self.main_file = os.path.join(workdir, "lagsight.yaml")
        self.web_file = os.path.join(workdir, "web.yml")

    def error(self, main: dict, web: dict | None = None) -> str:
        with open(self.main_file, "w", encoding="utf-8") as f:
            yaml.safe_dump(main, f)
        args = [self.binary, f"--config.file={self.main_file}", "--config.check"]
        if web is not None:
            with open(self.web_file, "w", encoding="utf-8") as f:
                yaml.safe_dump(web, f)
            args.append(f"--web.config.file={self.web_file}")
        result = subprocess.run(args, capture_output=True, text=True, timeout=30,
                                env={**os.environ, "LAGSIGHT_DOCS_PROBE": "x"})
        return result.stdout + result.stderr


def error_path(tokens: list) -> str:
    """How the parser names the place `tokens` leads to: kafka[0].series."""
    out = ""
    for token in tokens:
        out += f"[{token}]" if isinstance(token, int) else (f".{token}" if out else token)
    return out


def doc_path(tokens: list) -> str:
    """How the docs name it: kafka[].series."""
    return re.sub(r"\[\d+\]", "[]", error_path(tokens))


def node_at(tree, tokens: list):
    for token in tokens:
        tree = tree[token]
    return tree


def known_keys(ask, tree: dict, tokens: list) -> list[str] | None:
    """The keys the parser knows in the mapping at `tokens`, or None when it names none there."""
    probed = copy.deepcopy(tree)
    node_at(probed, tokens)[PROBE] = 1
    match = UNKNOWN.search(ask(probed))
    if not match or match.group(1) != error_path(tokens + [PROBE]):
        return None
    return [key.strip() for key in match.group(2).split(",")]


def walk(ask, tree: dict, tokens: list, found: set[str]) -> None:
    keys = known_keys(ask, tree, tokens)
    if keys is None:
        raise RuntimeError(f"the parser names no keys at {error_path(tokens) or 'the top'}: "
                           f"{ask(tree)!r}")
    for key in keys:
        found.add(doc_path(tokens + [key]))
        here = node_at(tree, tokens)
        value = here.get(key)
        if isinstance(value, dict):
            walk(ask, tree, tokens + [key], found)
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict):
            walk(ask, tree, tokens + [key, 0], found)
            continue
        if value is not None:
            continue                                   # a value of the base: a leaf
        for shape, inner in (({}, []), ([{}], [0])):
            trial = copy.deepcopy(tree)
            node_at(trial, tokens)[key] = copy.deepcopy(shape)
            if known_keys(ask, trial, tokens + [key] + inner) is not None:
                walk(ask, trial, tokens + [key] + inner, found)
                break


def main_config_keys(binary: str) -> set[str]:
    with tempfile.TemporaryDirectory() as workdir:
        checker = Checker(binary, workdir)
        found: set[str] = set()
        walk(checker.error, copy.deepcopy(MAIN_BASE), [], found)
        return found


def web_config_keys(binary: str) -> set[str]:
    with tempfile.TemporaryDirectory() as workdir:
        checker = Checker(binary, workdir)
        found: set[str] = set()
        walk(lambda web: checker.error(MAIN_BASE, web), copy.deepcopy(WEB_BASE), [], found)
        return found


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    binary = str(Path(sys.argv[1]).resolve())
    for title, keys in (("config", main_config_keys(binary)), ("web config", web_config_keys(binary))):
        print(f"# {title}")
        print("\n".join(sorted(keys)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
