"""Benchmark: lagsight beside other Kafka lag exporters, on one real broker, one after another.

Starts a real single-node Kafka, and for each scale commits the offsets of simple groups (as
Flink does: no members) on one 50-partition topic holding records, so that every group-partition
has a lag. Then runs each exporter alone on that same broker state and prints one table:

- refresh: how long the exporter takes to read the cluster. lagsight polls on its own
  (lagsight_kafka_poll_duration_seconds, the median of its polls); the peers read Kafka while they
  are scraped, so for them it is the scrape's duration;
- render: lagsight's own render of its exposition after each poll, on a worker thread
  (lagsight_exposition_render_duration_seconds, the median); the peers render inside their scrape;
- scrape: the median time of a whole /metrics answer, asked as Prometheus asks (gzip accepted);
- RSS over a window with one refresh and one scrape every `--interval` seconds (the idle cost of
  a deployment): VmRSS sampled every quarter second, its median (steady) and its maximum (every
  exporter's own refresh falls in the window: the peers' scrapes, lagsight's polls), and the
  process's peak since it started (VmHWM, its first read of the cluster included);
- CPU over that window, as a share of one core;
- series and bytes of one exposition (uncompressed, and as sent);
- agreement: per-partition lags of the bench groups equal to lagsight's, out of lagsight's.

Peers run from binaries you give (this repository never vendors them):

    .venv/bin/python tests/bench/side_by_side.py --scales S1,S2 \\
        --kafka-exporter /path/to/kafka_exporter --kminion /path/to/kminion

Prints numbers; asserts nothing. S3 (1M group-partitions) needs ~2.5 GB for kafka_exporter and
several minutes per exporter.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from kafka_broker import KafkaBroker, free_loopback_port  # noqa: E402
from many_groups import commit_groups, rss_mb  # noqa: E402
from workload import create_topic, produce  # noqa: E402

PARTITIONS = 50
WARMUP_POLLS = 8
RECORDS_PER_PARTITION = 100
# Group-partitions of each scale (issue 14's S1, S2, S3).
SCALES = {"S1": 10_000, "S2": 100_000, "S3": 1_000_000}

_SAMPLE = re.compile(rb'^(\w+)\{([^}]*)\} (\S+)$', re.MULTILINE)
_LABEL = re.compile(rb'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class Exporter:
    """How to run one exporter and read its per-partition lag."""
    name: str
    command: Callable[[str, int, Path], tuple[list[str], dict[str, str]]]  # bootstrap, port, dir
    lag_metric: str
    group_label: str
    topic_label: str = "topic"
    partition_label: str = "partition"
    polls_on_its_own: bool = False  # lagsight: refresh from its own poll metrics


@dataclass
class Result:
    refresh_s: list[float] = field(default_factory=list)
    render_s: list[float] = field(default_factory=list)  # lagsight: its renders, off the scrape
    # ... and in the CPU window, one poll per interval: a render with the cores to itself, as
    # in production, where render_s shares them with polls back to back and the broker.
    render_at_interval_s: list[float] = field(default_factory=list)
    scrape_s: list[float] = field(default_factory=list)
    rss_mb: float = 0.0         # median over the window
    window_max_rss_mb: float = 0.0
    peak_rss_mb: float = 0.0    # since the start (VmHWM)
    cpu_share: float = 0.0
    series: int = 0
    bytes_plain: int = 0
    bytes_sent: int = 0
    lags: dict[tuple[str, str, int], float] = field(default_factory=dict)


def lagsight_config(bootstrap: str, interval: float) -> str:
    return (f"kafka:\n  - name: bench\n    bootstrap_servers: {bootstrap}\n"
            f"    poll_interval: {round(interval * 1000)}ms\n    request_timeout: 30s\n"
            f"    poll_timeout: 300s\n")


def lagsight_exporter(binary: Path) -> Exporter:
    def command(bootstrap: str, port: int, work: Path) -> tuple[list[str], dict[str, str]]:
        # Polls back to back while refresh and scrape are measured; run() then reloads it with
        # the CPU window's interval (lagsight_reconfigure).
        (work / "lagsight.yaml").write_text(lagsight_config(bootstrap, 0.5))
        return ([str(binary), f"--config.file={work / 'lagsight.yaml'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], {})
    return Exporter("lagsight", command, "lagsight_kafka_group_lag_records", "group",
                    polls_on_its_own=True)


def kafka_exporter(binary: Path) -> Exporter:
    def command(bootstrap: str, port: int, work: Path) -> tuple[list[str], dict[str, str]]:
        # --offset.show-all (its default): every group's lag, also of groups without members.
        return ([str(binary), f"--kafka.server={bootstrap}",
                 f"--web.listen-address=127.0.0.1:{port}", "--offset.show-all",
                 "--kafka.version=3.7.0"], {})
    return Exporter("kafka_exporter", command, "kafka_consumergroup_lag", "consumergroup")


def kminion(binary: Path, template: Path | None) -> Exporter:
    def command(bootstrap: str, port: int, work: Path) -> tuple[list[str], dict[str, str]]:
        config = work / "kminion.yaml"
        if template is not None:
            config.write_text(template.read_text().replace("__BROKERS__", bootstrap)
                              .replace("__PORT__", str(port)))
        else:
            # adminApi: every group the brokers list, simple and empty ones included, with all
            # their committed offsets, read again on every scrape. Group patterns in slashes are
            # regular expressions.
            config.write_text(
                "kafka:\n"
                f"  brokers: [\"{bootstrap}\"]\n"
                "minion:\n"
                "  consumerGroups:\n"
                "    enabled: true\n"
                "    scrapeMode: adminApi\n"
                "    granularity: partition\n"
                "    allowedGroups: [\"/.*/\"]\n"
                "  logDirs:\n"
                "    enabled: false\n"
                "  endToEnd:\n"
                "    enabled: false\n"
                "exporter:\n"
                "  namespace: kminion\n"
                "  host: 127.0.0.1\n"
                f"  port: {port}\n")
        return [str(binary)], {"CONFIG_FILEPATH": str(config)}
    return Exporter("kminion", command, "kminion_kafka_consumer_group_topic_partition_lag",
                    "group_id", topic_label="topic_name", partition_label="partition_id")


def scrape(port: int) -> tuple[float, bytes, int]:
    """One /metrics answer as Prometheus asks for it: (seconds, plain text, bytes sent)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as answer:
        body = answer.read()
        elapsed = time.perf_counter() - started
        sent = len(body)
        if answer.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return elapsed, body, sent


def samples(body: bytes, name: str) -> list[tuple[dict[str, str], float]]:
    found = []
    for match in _SAMPLE.finditer(body):
        if match.group(1).decode() != name:
            continue
        labels = {k.decode(): v.decode() for k, v in _LABEL.findall(match.group(2))}
        found.append((labels, float(match.group(3))))
    return found


def first_value(body: bytes, name: str) -> float | None:
    match = re.search(rb"^" + name.encode() + rb"(?:\{[^}]*\})? (\S+)$", body, re.MULTILINE)
    return float(match.group(1)) if match else None


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(exporter: Exporter, bootstrap: str, work: Path, scrapes: int, interval: float,
        window: float, prefix: str) -> Result:
    port = free_loopback_port()
    args, env = exporter.command(bootstrap, port, work)
    log = (work / f"{exporter.name}.log").open("wb")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, **env})
    result = Result()
    try:
        # Until the first exposition with lags: a first read of a big cluster takes a while.
        deadline = time.monotonic() + 900
        body = b""
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{exporter.name} exited with {process.returncode}; "
                                   f"see {work / (exporter.name + '.log')}")
            try:
                _, body, _ = scrape(port)
            except OSError:
                time.sleep(0.5)
                continue
            if samples(body, exporter.lag_metric):
                break
            time.sleep(0.5)
        # Scrapes back to back: their durations; lagsight's refresh is the median of its own
        # polls meanwhile, after WARMUP_POLLS (the first polls also fill its record-timestamp
        # cache for lag in seconds, within a budget per poll).
        first_polls = first_value(body, "lagsight_kafka_polls_total") or 0
        last_polls = first_polls
        while len(result.scrape_s) < scrapes or (
                exporter.polls_on_its_own and len(result.refresh_s) < scrapes and
                time.monotonic() < deadline):
            elapsed, body, sent = scrape(port)
            result.scrape_s.append(elapsed)
            if exporter.polls_on_its_own:
                polls = first_value(body, "lagsight_kafka_polls_total") or 0
                if polls > last_polls:
                    last_polls = polls
                    if polls > first_polls + WARMUP_POLLS:
                        refresh = first_value(body, "lagsight_kafka_poll_duration_seconds")
                        if refresh is not None:
                            result.refresh_s.append(refresh)
                        render = first_value(body, "lagsight_exposition_render_duration_seconds")
                        if render is not None:
                            result.render_s.append(render)
            else:
                result.refresh_s.append(elapsed)
            time.sleep(0.2)
        if exporter.polls_on_its_own:
            (work / "lagsight.yaml").write_text(lagsight_config(bootstrap, interval))
            process.send_signal(signal.SIGHUP)
        result.series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
        result.bytes_plain, result.bytes_sent = len(body), sent
        result.lags = {(labels[exporter.group_label], labels[exporter.topic_label],
                        int(labels[exporter.partition_label])): value
                       for labels, value in samples(body, exporter.lag_metric)
                       if labels.get(exporter.group_label, "").startswith(prefix)}
        # The idle cost: one scrape per interval over the window (lagsight polls at that
        # interval on its own; the peers refresh when scraped).
        # The resident size is sampled through the window, not read once: a single reading
        # lands wherever it lands in the exporter's cycle.
        rss_samples: list[float] = []
        window_over = threading.Event()

        def sample_rss() -> None:
            while not window_over.wait(0.25):
                rss_samples.append(rss_mb(process.pid))

        sampler = threading.Thread(target=sample_rss, daemon=True)
        cpu_before, wall_before = cpu_seconds(process.pid), time.monotonic()
        sampler.start()
        first = True
        while time.monotonic() - wall_before < window:
            _, body, _ = scrape(port)
            # The window's first scrape may still show a render from the polls back to back.
            render = first_value(body, "lagsight_exposition_render_duration_seconds")
            if exporter.polls_on_its_own and not first and render is not None:
                result.render_at_interval_s.append(render)
            first = False
            time.sleep(max(0.0, interval - (time.monotonic() - wall_before) % interval))
        result.cpu_share = (cpu_seconds(process.pid) - cpu_before) / (time.monotonic() -
                                                                      wall_before)
        window_over.set()
        sampler.join()
        result.rss_mb = statistics.median(rss_samples)
        result.window_max_rss_mb = max(rss_samples)
        result.peak_rss_mb = rss_mb(process.pid, "VmHWM")
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
    return result


def table(rows: list[tuple[str, str, int, Result, int, int]]) -> str:
    lines = ["| scale | exporter | refresh (median) | render (median: back to back, at the "
             "interval) | scrape (median) | RSS "
             "median, max in window (peak since start) | CPU at the "
             "interval | series | exposition (sent) | lags equal to lagsight's, of those "
             "either reports |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for scale, name, group_partitions, r, equal, total in rows:
        # The peers render while scraped: their render is inside their scrape.
        render = (f"{statistics.median(r.render_s):.3f} s" if r.render_s else
                  "n/a" if name == "lagsight" else "in the scrape")
        if r.render_at_interval_s:
            render += f", {statistics.median(r.render_at_interval_s):.3f} s"
        refresh = f"{statistics.median(r.refresh_s):.3f} s" if r.refresh_s else "n/a"
        lines.append(
            f"| {scale} ({group_partitions:,}) | {name} | {refresh} | "
            f"{render} | {statistics.median(r.scrape_s) * 1000:.0f} ms | {r.rss_mb:.0f} MB, "
            f"{r.window_max_rss_mb:.0f} ({r.peak_rss_mb:.0f}) | {r.cpu_share * 100:.1f} % | {r.series:,} | "
            f"{r.bytes_plain / 1e6:.1f} MB ({r.bytes_sent / 1e6:.1f} MB) | {equal:,} / {total:,} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", default="S1,S2", help="comma-separated: S1, S2, S3")
    parser.add_argument("--lagsight", type=Path, default=REPO / "build/cmd/lagsight/lagsight")
    parser.add_argument("--kafka-exporter", type=Path, help="a kafka_exporter binary")
    parser.add_argument("--kminion", type=Path, help="a KMinion binary")
    parser.add_argument("--kminion-config", type=Path,
                        help="a KMinion YAML with __BROKERS__ and __PORT__ (else a built-in one)")
    parser.add_argument("--scrapes", type=int, default=5, help="back-to-back scrapes measured")
    parser.add_argument("--interval", type=float, default=15.0,
                        help="poll (lagsight) and scrape interval of the CPU window, seconds")
    parser.add_argument("--window", type=float, default=60.0, help="CPU window, seconds")
    args = parser.parse_args()

    exporters = [lagsight_exporter(args.lagsight)]
    if args.kafka_exporter:
        exporters.append(kafka_exporter(args.kafka_exporter))
    if args.kminion:
        exporters.append(kminion(args.kminion, args.kminion_config))

    rows = []
    work = Path(tempfile.mkdtemp(prefix="lagsight-side-by-side-"))
    with KafkaBroker(work / "kafka") as broker:
        topic = "bench"
        create_topic(broker.bootstrap, topic, PARTITIONS)
        produce(broker.bootstrap, topic, [RECORDS_PER_PARTITION] * PARTITIONS)
        committed_groups = 0
        for scale in args.scales.split(","):
            group_partitions = SCALES[scale]
            groups = group_partitions // PARTITIONS
            # Scales grow: commit only the groups the last scale did not have. The group names
            # of commit_groups are bench-00000, bench-00001, ...
            started = time.monotonic()
            commit_groups(broker.bootstrap, topic, groups, PARTITIONS, first=committed_groups)
            committed_groups = max(committed_groups, groups)
            print(f"{scale}: {groups:,} groups x {PARTITIONS} partitions committed in "
                  f"{time.monotonic() - started:.0f} s", flush=True)
            # Each exporter sees exactly this scale's groups: the bench groups beyond it would
            # be read too, so the scales run from the smallest up.
            results = {}
            for exporter in exporters:
                scale_dir = work / scale / exporter.name
                scale_dir.mkdir(parents=True)
                results[exporter.name] = run(exporter, broker.bootstrap, scale_dir, args.scrapes,
                                             args.interval, args.window, "bench-")
                print(f"  {exporter.name}: done", flush=True)
            # Agreement over every group-partition either of the two reports a lag for.
            reference = results["lagsight"].lags
            for name, result in results.items():
                keys = reference.keys() | result.lags.keys()
                equal = sum(1 for key in keys if key in reference and
                            result.lags.get(key) == reference[key])
                rows.append((scale, name, group_partitions, result, equal, len(keys)))
            print(table(rows), flush=True)
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
