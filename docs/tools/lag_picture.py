#!/usr/bin/env python3
"""Draws the README's picture from a recorded run: Kafka-side against Flink-side lag of two jobs.

The input is a trace that lagsight recorded (`--trace.record`; the integration suite keeps some in
tests/fixtures/traces/): per poll, the Kafka log ends and committed offsets, and the Flink readers'
positions, with their times. For each job the picture shows, over the same span of the run,
- the Kafka-side lag: log end minus the group's committed offset, at each Kafka poll (what
  Kafka's own tools show), and
- the Flink-side lag: log end minus the job's position (`currentOffset` + 1), computed as lagsight
  computes `lagsight_flink_lag_records` (docs/diagnosis.md, "Flink-side lag and the age of Flink's
  numbers"): a position is dated to the Flink poll before the one that first served it (the
  JobManager refreshes its metrics only every `metrics.fetcher.update-interval`), and compared
  with the log end of that moment, interpolated between Kafka polls.
The cause each panel is titled with is the active cause of the pair at the end of the span, read
from causes.txt next to the trace (the replay timeline the unit lane checks).

The committed picture was made by exactly this command, from the repository's root:

  python3 docs/tools/lag_picture.py tests/fixtures/traces/flink-diagnosis-2x/trace.jsonl.gz \
      docs/images/kafka-vs-flink-lag.svg

Python's standard library only; the SVG is written by hand (no plotting library needed).
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import pathlib
import re
import sys
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

KAFKA_COLOUR = "#d9480f"
FLINK_COLOUR = "#1864ab"
PANEL_W, PANEL_H = 440, 250
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 58, 14, 72, 44


@dataclass
class JobSeries:
    """What the picture needs of one job: its lags over time (seconds since the trace began)."""
    name: str
    kafka: list[tuple[float, float]] = field(default_factory=list)
    flink: list[tuple[float, float]] = field(default_factory=list)
    flink_seen: list[float] = field(default_factory=list)    # Flink polls that showed the job


def read_events(path: pathlib.Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def trace_start(events: list[dict]) -> float:
    """The time causes.txt counts from: the first event that carries one."""
    return next(e["now"] for e in events if "now" in e)


def log_ends(events: list[dict], t0: float) -> dict[tuple[str, int], list[tuple[float, int]]]:
    """(topic, partition) -> [(time the Kafka poll began, log end)], in time order."""
    ends: dict[tuple[str, int], list[tuple[float, int]]] = {}
    for e in events:
        snapshot = e.get("snapshot")
        if e["event"] != "kafka" or not snapshot:
            continue
        for topic, partition, _start, end, _stable in snapshot["partitions"]:
            if end is not None:
                ends.setdefault((topic, partition), []).append((snapshot["requested_at"] - t0, end))
    return ends


def log_end_at(history: list[tuple[float, int]], when: float) -> float | None:
    """The log end at `when`, interpolated between the two Kafka polls around it."""
    times = [t for t, _ in history]
    i = bisect.bisect_left(times, when)
    if i == 0 or i == len(history):
        return None
    (t1, e1), (t2, e2) = history[i - 1], history[i]
    return e1 + (e2 - e1) * (when - t1) / (t2 - t1) if t2 > t1 else e2


def kafka_side(events: list[dict], t0: float, job: JobSeries) -> None:
    """Log end minus committed offset of the job's group (named as the job), summed."""
    for e in events:
        snapshot = e.get("snapshot")
        if e["event"] != "kafka" or not snapshot:
            continue
        ends = {(p[0], p[1]): p[3] for p in snapshot["partitions"]}
        for group in snapshot["groups"]:
            if group["id"] != job.name or not group["committed"]:
                continue
            lag = sum(max(0, ends[(t, p)] - offset) for t, p, offset in group["committed"]
                      if ends.get((t, p)) is not None)
            job.kafka.append((snapshot["requested_at"] - t0, lag))


def flink_side(events: list[dict], t0: float, job: JobSeries, ends: dict) -> None:
    """Log end at the position's date minus the position, summed over the job's partitions."""
    previous_poll = None
    dated: dict[tuple[str, int], tuple[int, float]] = {}    # partition -> (position, its date)
    for e in events:
        snapshot = e.get("snapshot")
        if e["event"] != "flink" or not snapshot:
            continue
        now = snapshot["requested_at"] - t0
        for entry in snapshot["jobs"]:
            if entry["overview"]["name"] != job.name or entry["overview"]["state"] != "RUNNING":
                continue
            job.flink_seen.append(now)
            for source in entry["sources"]:
                for topic, partition, current, _committed in source["partitions"]:
                    if current is None:
                        continue
                    key, position = (topic, partition), current + 1
                    if key not in dated or dated[key][0] != position:
                        dated[key] = (position, previous_poll if previous_poll is not None else now)
            lags = [log_end_at(ends.get(k, []), when) for k, (_, when) in dated.items()]
            if dated and all(x is not None for x in lags):
                job.flink.append((now, sum(max(0.0, end - pos) for end, (pos, _) in
                                           zip(lags, dated.values()))))
        previous_poll = now


def active_cause(causes: pathlib.Path, job: str, until: float) -> str:
    """The pair's active cause at `until`, from the replay timeline next to the trace."""
    cause = "?"
    pattern = re.compile(r"^\+([\d.]+) [^/]+/" + re.escape(job) + "/" + re.escape(job) +
                         r": ([a-z_]+|\(none\))")
    for line in causes.read_text(encoding="utf-8").splitlines():
        m = pattern.match(line)
        if m and float(m.group(1)) <= until:
            cause = m.group(2)
    return cause


def nice_step(span: float, ticks: int = 5) -> float:
    raw = span / ticks
    magnitude = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def polyline(points: list[tuple[float, float]], colour: str, step: bool) -> str:
    coords, last_y = [], None
    for x, y in points:
        if step and last_y is not None:
            coords.append(f"{x:.1f},{last_y:.1f}")
        coords.append(f"{x:.1f},{y:.1f}")
        last_y = y
    return (f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
            f'stroke-linejoin="round" points="{" ".join(coords)}"/>')


def panel(ox: float, job: JobSeries, span: tuple[float, float], title: str, note: str) -> str:
    """One job's chart with its own lag scale; the time axis is the same for both panels."""
    x0, x1 = span
    inner = [p for series in (job.kafka, job.flink) for p in series if x0 <= p[0] <= x1]
    top = max([y for _, y in inner] + [10])
    ystep = nice_step(top)
    ymax = ystep * (int(top / ystep) + 1)
    w, h = PANEL_W - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B
    sx = lambda t: ox + MARGIN_L + (t - x0) / (x1 - x0) * w  # noqa: E731
    sy = lambda v: MARGIN_T + h - v / ymax * h  # noqa: E731
    out = [f'<text x="{ox + MARGIN_L}" y="20" class="t">{escape(title)}</text>',
           f'<text x="{ox + MARGIN_L}" y="38" class="n">job {escape(job.name)}</text>',
           f'<text x="{ox + MARGIN_L}" y="55" class="n">{escape(note)}</text>']
    for i in range(int(ymax / ystep) + 1):
        v = i * ystep
        out.append(f'<line x1="{sx(x0):.1f}" x2="{sx(x1):.1f}" y1="{sy(v):.1f}" y2="{sy(v):.1f}" '
                   'class="g"/>')
        out.append(f'<text x="{sx(x0) - 6:.1f}" y="{sy(v) + 4:.1f}" class="a" '
                   f'text-anchor="end">{v:g}</text>')
    tstep = nice_step(x1 - x0, 6)
    t = 0.0
    while x0 + t <= x1:
        out.append(f'<text x="{sx(x0 + t):.1f}" y="{MARGIN_T + h + 16}" class="a" '
                   f'text-anchor="middle">{t:g}</text>')
        t += tstep
    out.append(f'<text x="{ox + MARGIN_L + w / 2:.1f}" y="{PANEL_H - 8}" class="a" '
               'text-anchor="middle">seconds</text>')
    out.append(f'<text transform="translate({ox + 14},{MARGIN_T + h / 2:.1f}) rotate(-90)" '
               'class="a" text-anchor="middle">lag (records)</text>')
    for series, colour, step in ((job.kafka, KAFKA_COLOUR, False), (job.flink, FLINK_COLOUR, True)):
        shown = [(sx(x), sy(y)) for x, y in series if x0 <= x <= x1]
        if shown:
            out.append(polyline(shown, colour, step))
    return "\n".join(out)


def legend(y: float) -> str:
    items = [(KAFKA_COLOUR, "Kafka-side lag: log end − group's committed offset (Kafka's tools)"),
             (FLINK_COLOUR, "Flink-side lag: log end − the job's own position "
                            "(lagsight_flink_lag_records)")]
    out, x = [], MARGIN_L
    for colour, text in items:
        out.append(f'<line x1="{x}" x2="{x + 22}" y1="{y}" y2="{y}" stroke="{colour}" '
                   'stroke-width="3"/>')
        out.append(f'<text x="{x + 28}" y="{y + 4}" class="a">{escape(text)}</text>')
        y += 18
    return "\n".join(out)


def render(jobs: list[tuple[JobSeries, str, str]], span: tuple[float, float], source: str) -> str:
    width, height = 2 * PANEL_W, PANEL_H + 62
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
             '<style>.t{font-size:14px;font-weight:bold}.n{font-size:12px;fill:#333}'
             '.a{font-size:11px;fill:#444}.g{stroke:#e5e5e5;stroke-width:1}</style>',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, (job, title, note) in enumerate(jobs):
        parts.append(panel(i * PANEL_W, job, span, title, note))
    parts.append(legend(PANEL_H + 12))
    parts.append(f'<text x="{width - MARGIN_R}" y="{height - 6}" class="a" text-anchor="end">'
                 f'{escape(source)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=pathlib.Path, help="trace.jsonl(.gz) recorded by lagsight")
    parser.add_argument("svg", type=pathlib.Path, help="the SVG to write")
    parser.add_argument("--sawtooth-job", default="dg-981a33-long-interval")
    parser.add_argument("--behind-job", default="dg-981a33-behind")
    args = parser.parse_args()

    events = read_events(args.trace)
    t0 = trace_start(events)
    ends = log_ends(events, t0)
    jobs = [JobSeries(args.sawtooth_job), JobSeries(args.behind_job)]
    for job in jobs:
        kafka_side(events, t0, job)
        flink_side(events, t0, job, ends)
        if not job.kafka or not job.flink:
            print(f"{job.name}: no Kafka-side or Flink-side lag in {args.trace}", file=sys.stderr)
            return 1
    # The span both jobs ran in: the behind job's life, as the Flink polls saw it.
    span = (jobs[1].flink_seen[0], jobs[1].flink_seen[-1])
    causes = args.trace.parent / "causes.txt"
    titled = []
    for job, what in zip(jobs, ("Keeps pace, checkpoints every 12 s",
                                "Reads slower than records arrive")):
        cause = active_cause(causes, job.name, span[1]) if causes.exists() else "?"
        titled.append((job, what, f"lagsight_diagnosis{{cause=\"{cause}\"}}"))
    source = f"recorded run: {args.trace.parent.name} (real Kafka + Flink 2.x), " \
             f"{span[1] - span[0]:.0f} s, 1 s polls"
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(render(titled, span, source), encoding="utf-8")
    print(f"wrote {args.svg} ({args.svg.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
