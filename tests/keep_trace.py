#!/usr/bin/env python3
"""Keeps a recorded analysis trace of the integration suite as a replay fixture.

Every lagsight the integration tests start records what its analysis was handed
(--trace.record, tests/integration/conftest.py) into its work directory as analysis.trace (and
analysis.trace.1 once rotated). This copies such a recording, gzip-compressed, to
tests/fixtures/traces/NAME/trace.jsonl.gz and writes NAME/truth.txt from the --expect and
--never rules given (what the scenario's real systems established; see
tests/unit/recorded_traces_test.cpp for the format). Then regenerate the cause timeline and
review it:

  LAGSIGHT_REGENERATE_TRACE_TIMELINES=1 build/tests/unit/lagsight_unit_tests "[recorded]"

Usage: tests/keep_trace.py NAME TRACE --truth-note TEXT [--expect PAIR CAUSE]...
       [--never PAIR CAUSE]... [--only PAIR CAUSE,CAUSE...]...
"""

from __future__ import annotations

import argparse
import gzip
import pathlib
import shutil
import sys

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "traces"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the fixture's folder name")
    parser.add_argument("trace", type=pathlib.Path, help="analysis.trace of a suite's lagsight")
    parser.add_argument("--truth-note", required=True, action="append",
                        help="where the truth comes from (Kafka's tools, Flink's REST API)")
    parser.add_argument("--expect", nargs=2, action="append", default=[],
                        metavar=("PAIR", "CAUSE"), help="CLUSTER/GROUP/JOB and a cause it shows")
    parser.add_argument("--never", nargs=2, action="append", default=[],
                        metavar=("PAIR", "CAUSE"), help="CLUSTER/GROUP/JOB and a cause it never shows")
    parser.add_argument("--only", nargs=2, action="append", default=[],
                        metavar=("PAIR", "CAUSES"),
                        help="CLUSTER/GROUP/JOB and the comma-separated causes it may show")
    args = parser.parse_args()
    if not args.expect and not args.never and not args.only:
        parser.error("give at least one --expect or --never rule")

    folder = FIXTURES / args.name
    folder.mkdir(parents=True, exist_ok=True)
    parts = [p for p in (args.trace.with_name(args.trace.name + ".1"), args.trace) if p.exists()]
    with gzip.open(folder / "trace.jsonl.gz", "wb", compresslevel=9) as out:
        for part in parts:  # each file begins with the config and every source's state
            with part.open("rb") as source:
                shutil.copyfileobj(source, out)
    lines = [f"# {note}" for note in args.truth_note]
    lines += [f"expect {pair} {cause}" for pair, cause in args.expect]
    lines += [f"never {pair} {cause}" for pair, cause in args.never]
    lines += [f"only {pair} {causes}" for pair, causes in args.only]
    (folder / "truth.txt").write_text("\n".join(lines) + "\n")
    print(f"{folder}: {(folder / 'trace.jsonl.gz').stat().st_size} bytes from "
          f"{', '.join(str(p) for p in parts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
