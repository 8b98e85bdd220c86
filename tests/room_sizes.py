#!/usr/bin/env python3
"""Prints the largest rooms of lagsight's code: the longest files and functions under lib/ and cmd/.

A file past 600 lines or a function past 80 is doing two jobs (the team's rule): split it by
what it does. With --check it exits 1 while any is over, so the unit lane keeps the rule.
Lines are counted as lizard (PyPI, tests/harness/requirements.txt) counts them: a file's lines,
a function's from its first line to its last.

Usage: tests/room_sizes.py [--check] [--most N]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import lizard

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
ROOT = pathlib.Path(__file__).resolve().parent.parent
PLACES = ("lib", "cmd")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 while a room is too large")
    parser.add_argument("--most", type=int, default=8, help="rows of each kind to print")
    args = parser.parse_args()

    sources = sorted(path for place in PLACES for path in (ROOT / place).rglob("*")
                     if path.suffix in (".cpp", ".h"))
    files: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for path in sources:
        relative = str(path.relative_to(ROOT))
        files.append((len(path.read_text(encoding="utf-8").splitlines()), relative))
        for function in lizard.analyze_file(str(path)).function_list:
            functions.append((function.length, f"{relative}:{function.start_line} {function.name}"))
    files.sort(reverse=True)
    functions.sort(reverse=True)

    print(f"largest files (limit {MAX_FILE_LINES} lines), of {len(files)}:")
    for lines, name in files[:args.most]:
        print(f"  {lines:5d}  {name}")
    print(f"longest functions (limit {MAX_FUNCTION_LINES} lines), of {len(functions)}:")
    for lines, name in functions[:args.most]:
        print(f"  {lines:5d}  {name}")
    over = [name for lines, name in files if lines > MAX_FILE_LINES] + \
           [name for lines, name in functions if lines > MAX_FUNCTION_LINES]
    if over:
        print(f"{len(over)} over the limits: " + "; ".join(over))
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
