"""Benchmark: lagsight beside other Kafka lag exporters, on one real broker, one after another.

Starts a real single-node Kafka with one 50-partition topic of known length, and for each scale
commits simple groups (as Flink does: no members) at a different position on every partition
(live_groups.py). Then runs each exporter alone on that broker while a committer moves a
rotating slice of groups to higher positions every few seconds, as on a live cluster, and prints
two Markdown tables. The first, per exporter:

- time to fresh /metrics: from the moment the exporter starts reading Kafka to the moment a
  scrape first returns what it read. lagsight polls on its own, so it is measured from outside
  (freshness.py: a probe asks every 50 ms); the peers read Kafka inside the scrape, so for them
  it is the scrape's duration. lagsight's own poll duration is shown beside it;
- render: lagsight's own render of its exposition after each poll, on a worker thread
  (lagsight_exposition_render_duration_seconds): its median in the fresh window (a poll every
  `--fresh-poll` seconds) and in the idle window; the peers render inside their scrape;
- scrape: the median time of a whole /metrics answer, asked as Prometheus asks (gzip accepted);
- RSS over an idle window with one refresh and one scrape every `--interval` seconds: VmRSS
  sampled every quarter second, its median and maximum, and the peak since start (VmHWM);
- CPU over that window, as a share of one core;
- series and bytes of one exposition (uncompressed, and as sent);
- lags and committed offsets checked against the generator's own record of what it committed
  and the producer's log ends, never against another exporter: after the windows the committer
  stops, each exporter is read once more from a refresh that began after the last commit, and
  every per-partition value of the scale's groups is compared. checked, wrong, missing, and
  extra (bench group-partitions that should not be there).

The second table (`--prometheus SECONDS`, 0 to skip; prometheus_bill.py) is what the exporter
costs a real Prometheus scraping it: series in its head, its memory, samples and bytes a scrape.

lagsight runs twice by default (`--lagsight-rows`): with its defaults, and with lag in seconds
off (its record reader reads records at the moved positions every poll, work the peers do not
do); `topic` adds a row at series level topic, whose lags are checked as each group's sum over
the topic. Peers run from binaries you give (this repository never vendors them):

    .venv/bin/python tests/bench/side_by_side.py --scales S1,S2 \\
        --kafka-exporter /path/to/kafka_exporter --kminion /path/to/kminion

Prints numbers and the agreement counts; asserts nothing. Exits non-zero only when the bench
itself could not run (commits that kept failing, an exporter that exited). S3 (1M
group-partitions) needs ~2.5 GB for kafka_exporter and several minutes per exporter.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from bench_exporters import (Exporter, kafka_exporter, kminion, lagsight_config,  # noqa: E402
                             lagsight_exporter)
from freshness import FreshnessProbe  # noqa: E402
from kafka_broker import KafkaBroker, free_loopback_port  # noqa: E402
from live_groups import (Agreement, CommitFailed, Committer, LiveGroups,  # noqa: E402
                         check, fill_topic, group_index)
from many_groups import RssSampler, rss_mb, stop_process  # noqa: E402
from prometheus_bill import Bill, bill_table, measure_bill  # noqa: E402
from scraping import first_value, samples, scrape, series_count  # noqa: E402

TOPIC = "bench"
PARTITIONS = 50
# Positions start in the first half of a partition and move up from there (live_groups.py).
RECORDS_PER_PARTITION = 2000
# lagsight's first polls also fill its record-timestamp cache for lag in seconds, within a
# budget per poll: the time to fresh /metrics is taken after them.
WARMUP_POLLS = 4
# Group-partitions of each scale (issue 14's S1, S2, S3).
SCALES = {"S1": 10_000, "S2": 100_000, "S3": 1_000_000}


@dataclass
class Settings:
    """The command line's knobs, as run() needs them."""
    scrapes: int
    fresh_poll: float
    interval: float
    window: float
    commit_every: float
    commit_slice: int
    prometheus_seconds: float
    prometheus_interval: float
    prometheus_timeout: float


@dataclass
class Result:
    fresh_s: list[float] = field(default_factory=list)  # time to fresh /metrics
    poll_s: list[float] = field(default_factory=list)   # lagsight: its own poll durations
    render_s: list[float] = field(default_factory=list)  # lagsight: in the fresh window
    # ... and in the idle window, one poll per interval: a render with the cores to itself, as
    # in production, where render_s shares them with frequent polls and the broker.
    render_at_interval_s: list[float] = field(default_factory=list)
    scrape_s: list[float] = field(default_factory=list)
    rss_mb: float = 0.0         # median over the window
    window_max_rss_mb: float = 0.0
    peak_rss_mb: float = 0.0    # since the start (VmHWM)
    cpu_share: float = 0.0
    series: int = 0
    bytes_plain: int = 0
    bytes_sent: int = 0
    lags: Agreement = field(default_factory=Agreement)
    offsets: Agreement | None = None  # None: the exporter exports no per-partition offset
    bill: Bill | None = None


# The partition of a value an exporter sums over the topic (lagsight at topic level).
WHOLE_TOPIC = -1


def exported(exporter: Exporter, body: bytes, metric: str) -> dict[tuple[str, int], float]:
    """{(group, partition): value} of the bench groups on the bench topic in an exposition;
    {(group, WHOLE_TOPIC): sum} from an exporter at topic level."""
    values = {}
    for labels, value in samples(body, metric):
        group = labels.get(exporter.group_label, "")
        if group_index(group) is not None and labels.get(exporter.topic_label) == TOPIC:
            partition = (WHOLE_TOPIC if exporter.topic_level
                         else int(labels[exporter.partition_label]))
            values[(group, partition)] = value
    return values


def expected_lags(exporter: Exporter, live: LiveGroups, groups: int) -> dict[tuple[str, int], int]:
    """The generator's lags, as the exporter exports them: per partition, or summed per topic."""
    lags = {key: lag for key, (_, lag) in live.expected(groups).items()}
    if not exporter.topic_level:
        return lags
    sums: dict[tuple[str, int], int] = {}
    for (group, _), lag in lags.items():
        sums[(group, WHOLE_TOPIC)] = sums.get((group, WHOLE_TOPIC), 0) + lag
    return sums


def wait_first_exposition(exporter: Exporter, process: subprocess.Popen, port: int,
                          log: Path) -> None:
    """Until the first exposition with lags: a first read of a big cluster takes a while."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{exporter.name} exited with {process.returncode}; see {log}")
        try:
            _, body, _ = scrape(port)
        except OSError:
            time.sleep(0.5)
            continue
        if exported(exporter, body, exporter.lag_metric):
            return
        time.sleep(0.5)
    raise TimeoutError(f"{exporter.name} showed no lag within 900 s; see {log}")


def measure_fresh(exporter: Exporter, port: int, scrapes: int, result: Result) -> bytes:
    """The fresh window: scrapes back to back, and lagsight's polls as the probe sees them.

    Returns the last exposition. The peers' time to fresh /metrics is their scrape's duration;
    lagsight's comes from the probe, after WARMUP_POLLS polls.
    """
    probe = FreshnessProbe(port) if exporter.polls_on_its_own else None
    deadline = time.monotonic() + 900
    body = b""
    while len(result.scrape_s) < scrapes or (
            probe is not None and len(probe.polls) < WARMUP_POLLS + scrapes and
            time.monotonic() < deadline):
        elapsed, body, sent = scrape(port)
        result.scrape_s.append(elapsed)
        result.bytes_plain, result.bytes_sent = len(body), sent
        if probe is None:
            result.fresh_s.append(elapsed)
        time.sleep(0.2)
    if probe is not None:
        probe.stop()
        polls = probe.polls[WARMUP_POLLS:]
        result.fresh_s = [poll.time_to_fresh for poll in polls]
        result.poll_s = [poll.poll_s for poll in polls]
        result.render_s = [poll.render_s for poll in polls if poll.render_s is not None]
    result.series = series_count(body)
    return body


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_idle(exporter: Exporter, process: subprocess.Popen, port: int, interval: float,
                 window: float, result: Result) -> None:
    """The idle cost: one scrape per interval over the window (lagsight polls at that interval
    on its own; the peers refresh when scraped). The resident size is sampled through the
    window, not read once: a single reading lands wherever it lands in the exporter's cycle."""
    with RssSampler(process.pid, 0.25) as sampler:
        cpu_before, wall_before = cpu_seconds(process.pid), time.monotonic()
        first = True
        while time.monotonic() - wall_before < window:
            _, body, _ = scrape(port)
            # The window's first scrape may still show a render from the fresh window.
            render = first_value(body, "lagsight_exposition_render_duration_seconds")
            if exporter.polls_on_its_own and not first and render is not None:
                result.render_at_interval_s.append(render)
            first = False
            time.sleep(max(0.0, interval - (time.monotonic() - wall_before) % interval))
        result.cpu_share = ((cpu_seconds(process.pid) - cpu_before)
                            / (time.monotonic() - wall_before))
    result.rss_mb = statistics.median(sampler.samples)
    result.window_max_rss_mb = max(sampler.samples)
    result.peak_rss_mb = rss_mb(process.pid, "VmHWM")


def check_against_truth(exporter: Exporter, port: int, live: LiveGroups, groups: int,
                        interval: float, result: Result) -> None:
    """Reads the exporter once more, from a refresh that began after the last commit, and
    compares every per-partition value of the scale's groups with the generator's."""
    last_commit = live.last_commit_unix
    if exporter.polls_on_its_own:
        probe = FreshnessProbe(port)
        try:
            probe.wait_for_poll_after(last_commit, timeout=2 * interval + 600)
        finally:
            probe.stop()
    else:
        # kafka_exporter by default (--concurrent.enable=false) answers a scrape that comes
        # while another one reads Kafka with that one's results: a scrape Prometheus started
        # before the last commit may still be running. After this scrape none is.
        scrape(port)
    # A peer reads Kafka in this scrape, which starts after the last commit was confirmed.
    _, body, _ = scrape(port)
    expected = live.expected(groups)
    result.lags = check(exported(exporter, body, exporter.lag_metric),
                        expected_lags(exporter, live, groups))
    offsets = (exported(exporter, body, exporter.offset_metric)
               if exporter.offset_metric else {})
    if offsets:  # not exported at all (a peer, or a lagsight whose defaults leave it out): n/a
        result.offsets = check(offsets, {key: committed
                                         for key, (committed, _) in expected.items()})


def run(exporter: Exporter, bootstrap: str, work: Path, live: LiveGroups, groups: int,
        settings: Settings) -> Result:
    """One exporter alone on the broker, the committer moving positions all along."""
    port = free_loopback_port()
    args, env = exporter.command(bootstrap, port, work, settings.fresh_poll)
    log_path = work / f"{exporter.config_name}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, **env})
    result = Result()
    committer = None
    try:
        wait_first_exposition(exporter, process, port, log_path)
        committer = Committer(live, groups, settings.commit_every, settings.commit_slice)
        measure_fresh(exporter, port, settings.scrapes, result)
        if exporter.polls_on_its_own:
            (work / "lagsight.yaml").write_text(lagsight_config(
                bootstrap, settings.interval, exporter))
            process.send_signal(signal.SIGHUP)
        measure_idle(exporter, process, port, settings.interval, settings.window, result)
        if settings.prometheus_seconds > 0:
            result.bill = measure_bill(port, work / "prometheus", settings.prometheus_seconds,
                                       settings.prometheus_interval, settings.prometheus_timeout)
        committer, stopping = None, committer
        stopping.stop()
        check_against_truth(exporter, port, live, groups, settings.interval, result)
        if process.poll() is not None:
            raise RuntimeError(f"{exporter.name} exited with {process.returncode}; "
                               f"see {log_path}")
    finally:
        if committer is not None:
            committer.stop()
        stop_process(process)
        log.close()
    return result


def median_s(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s" if values else "n/a"


def table(rows: list[tuple[str, Exporter, int, Result]], interval: float) -> str:
    lines = ["| scale | exporter | time to fresh /metrics (median) | poll, lagsight's own "
             "(median) | render (median: fresh window, at the interval) | scrape (median) | "
             "RSS median, max in window (peak since start) | CPU at the interval | series | "
             "exposition (sent) | lags: checked, wrong, missing, extra | committed offsets: "
             "checked, wrong, missing, extra |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for scale, exporter, group_partitions, r in rows:
        # The peers read Kafka and render while scraped: both are inside their scrape.
        own = exporter.polls_on_its_own
        render = median_s(r.render_s) if own else "in the scrape"
        if r.render_at_interval_s:
            render += f", {median_s(r.render_at_interval_s)}"
        offsets = r.offsets.cell() if r.offsets is not None else "not exported"
        lines.append(
            f"| {scale} ({group_partitions:,}) | {exporter.name} | {median_s(r.fresh_s)} | "
            f"{median_s(r.poll_s) if own else 'in the scrape'} | {render} | "
            f"{statistics.median(r.scrape_s) * 1000:.0f} ms | {r.rss_mb:.0f} MB, "
            f"{r.window_max_rss_mb:.0f} ({r.peak_rss_mb:.0f}) | {r.cpu_share * 100:.1f} % | "
            f"{r.series:,} | {r.bytes_plain / 1e6:.1f} MB ({r.bytes_sent / 1e6:.1f} MB) | "
            f"{r.lags.cell()} | {offsets} |")
    return "\n".join(lines)


def disagreements(rows: list[tuple[str, Exporter, int, Result]]) -> str:
    """The first wrong values of every exporter that had any, to look into."""
    lines = []
    for scale, exporter, _, r in rows:
        for what, agreement in (("lag", r.lags), ("committed offset", r.offsets)):
            if agreement is not None and agreement.examples:
                lines.append(f"{scale} {exporter.name}, {what}: " +
                             "; ".join(agreement.examples))
    return "\n".join(lines)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", default="S1,S2", help="comma-separated: S1, S2, S3")
    parser.add_argument("--lagsight", type=Path, default=REPO / "build/cmd/lagsight/lagsight")
    parser.add_argument("--lagsight-rows", default="defaults,no-lag-s",
                        help="comma-separated lagsight configurations: defaults, no-lag-s (lag "
                             "in seconds off), topic (series.granularity level topic)")
    parser.add_argument("--kafka-exporter", type=Path, help="a kafka_exporter binary")
    parser.add_argument("--kminion", type=Path, help="a KMinion binary")
    parser.add_argument("--kminion-config", type=Path,
                        help="a KMinion YAML with __BROKERS__ and __PORT__ (else a built-in one)")
    parser.add_argument("--scrapes", type=int, default=5,
                        help="back-to-back scrapes measured (and lagsight polls, after "
                             f"{WARMUP_POLLS} warm-up polls)")
    parser.add_argument("--fresh-poll", type=float, default=3.0,
                        help="lagsight's poll interval in the fresh window, seconds")
    parser.add_argument("--interval", type=float, default=15.0,
                        help="poll (lagsight) and scrape interval of the idle window, seconds")
    parser.add_argument("--window", type=float, default=60.0, help="idle window, seconds")
    parser.add_argument("--commit-every", type=float, default=2.0,
                        help="seconds between two moves of the committer")
    parser.add_argument("--commit-slice", type=int, default=20,
                        help="groups a move commits at higher positions (in turn)")
    parser.add_argument("--prometheus", type=float, default=180.0,
                        help="seconds a real Prometheus scrapes each exporter (0: none)")
    parser.add_argument("--prometheus-interval", type=float, default=30.0,
                        help="its scrape interval, seconds (the same for every exporter)")
    parser.add_argument("--prometheus-timeout", type=float, default=25.0,
                        help="its scrape timeout, seconds")
    return parser.parse_args()


def exporters_to_run(args: argparse.Namespace) -> list[Exporter]:
    rows = {"defaults": lambda: lagsight_exporter(args.lagsight),
            "no-lag-s": lambda: lagsight_exporter(args.lagsight, "lagsight (no lag s)",
                                                  lag_seconds_budget=0),
            "topic": lambda: lagsight_exporter(args.lagsight, "lagsight (topic level)",
                                               topic_level=True)}
    exporters = []
    for row in args.lagsight_rows.split(","):
        if row not in rows:
            raise SystemExit(f"--lagsight-rows: {row!r} is not one of {', '.join(rows)}")
        exporters.append(rows[row]())
    if args.kafka_exporter:
        exporters.append(kafka_exporter(args.kafka_exporter))
    if args.kminion:
        exporters.append(kminion(args.kminion, args.kminion_config))
    return exporters


def print_tables(rows: list[tuple[str, Exporter, int, Result]], settings: Settings) -> None:
    print(table(rows, settings.interval))
    bills = [(scale, exporter.name, gp, r.bill) for scale, exporter, gp, r in rows if r.bill]
    if bills:
        print()
        print(bill_table(bills, settings.prometheus_interval, settings.prometheus_seconds))
    wrong = disagreements(rows)
    if wrong:
        print("\nValues that disagree with the generator:\n" + wrong)
    print(flush=True)


def main() -> int:
    args = arguments()
    settings = Settings(args.scrapes, args.fresh_poll, args.interval, args.window,
                        args.commit_every, args.commit_slice, args.prometheus,
                        args.prometheus_interval, args.prometheus_timeout)
    exporters = exporters_to_run(args)
    rows: list[tuple[str, Exporter, int, Result]] = []
    work = Path(tempfile.mkdtemp(prefix="lagsight-side-by-side-"))
    print(f"work directory {work}", flush=True)
    with KafkaBroker(work / "kafka") as broker:
        live = LiveGroups(broker.bootstrap, TOPIC, PARTITIONS, fill_topic(
            broker.bootstrap, TOPIC, PARTITIONS, RECORDS_PER_PARTITION))
        try:
            for scale in args.scales.split(","):
                groups = SCALES[scale] // PARTITIONS
                # Scales grow: commit only the groups the last scale did not have. Each exporter
                # sees exactly this scale's groups, so the scales run from the smallest up.
                started = time.monotonic()
                live.add_groups(live.groups, max(live.groups, groups))
                print(f"{scale}: {groups:,} groups x {PARTITIONS} partitions committed in "
                      f"{time.monotonic() - started:.0f} s", flush=True)
                for exporter in exporters:
                    scale_dir = work / scale / exporter.config_name
                    scale_dir.mkdir(parents=True)
                    result = run(exporter, broker.bootstrap, scale_dir, live, groups, settings)
                    rows.append((scale, exporter, SCALES[scale], result))
                    print(f"  {exporter.name}: done", flush=True)
                print_tables(rows, settings)
        except CommitFailed as error:
            print(f"the bench could not keep its data set: {error}", file=sys.stderr)
            return 1
    print(f"groups committed again after a failed commit: {live.retried_groups}")
    print()
    print_tables(rows, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
