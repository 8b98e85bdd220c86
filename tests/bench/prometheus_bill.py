"""What an exporter costs the user's Prometheus: a real Prometheus scraping only that exporter.

An exporter's own memory and CPU are half of its bill; the other half is paid by the Prometheus
that ingests it: every series lives in its head block, every scrape is parsed. ``measure_bill``
starts Debian's Prometheus (``/usr/bin/prometheus``, 2.42) in a directory of its own, on a free
port, scraping one exporter at a fixed interval and timeout (the same for every exporter, long
enough for the slowest peer's scrape), lets it run for a while from its first scrape on, and
reads back:

- from Prometheus's own /metrics: ``prometheus_tsdb_head_series`` (the exporter's series, the
  eight Prometheus adds per target, and every series that came and went in the window: a label
  value that changes is a new series) and ``go_memstats_heap_inuse_bytes``;
- its resident size (VmRSS from /proc, every second: median and maximum over the window);
- per scrape, from its query API: ``scrape_samples_scraped`` and ``scrape_body_size_bytes``
  (the uncompressed body; this metric needs ``--enable-feature=extra-scrape-metrics``), the
  scrape's duration as Prometheus timed it, and how many scrapes succeeded (``up``).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kafka_broker import free_loopback_port
from many_groups import RssSampler, stop_process
from scraping import first_value

PROMETHEUS = Path("/usr/bin/prometheus")
# Series Prometheus adds per target: up, scrape_duration_seconds, scrape_samples_scraped,
# scrape_samples_post_metric_relabeling, scrape_series_added, and with extra-scrape-metrics
# scrape_timeout_seconds, scrape_sample_limit, scrape_body_size_bytes.
TARGET_SERIES = 8


@dataclass
class Bill:
    head_series: int = 0
    rss_median_mb: float = 0.0
    rss_max_mb: float = 0.0
    heap_inuse_mb: float = 0.0          # at the end of the window
    samples_per_scrape: float = 0.0     # the latest successful scrape's
    body_bytes_per_scrape: float = 0.0  # uncompressed, the latest successful scrape's
    scrape_s: float | None = None       # median of the window's scrapes (failed ones too)
    scrapes_up: int = 0
    scrapes: int = 0

    @property
    def churned_series(self) -> int:
        """Series in the head beyond the latest scrape's samples and the target's own 8: series
        that came and went within the window (a label value that changes makes a new series,
        which the head keeps until it is compacted, 2 h later)."""
        return max(0, self.head_series - round(self.samples_per_scrape) - TARGET_SERIES)


def _config(target_port: int, interval: float, timeout: float) -> str:
    return ("global:\n"
            f"  scrape_interval: {round(interval * 1000)}ms\n"
            f"  scrape_timeout: {round(timeout * 1000)}ms\n"
            "scrape_configs:\n"
            "  - job_name: exporter\n"
            f"    static_configs: [{{targets: [\"127.0.0.1:{target_port}\"]}}]\n")


def _get(port: int, path: str, timeout: float = 60) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as answer:
        return answer.read()


def _query(port: int, expression: str) -> float | None:
    """One instant query's single value (None when the answer is empty)."""
    answer = json.loads(_get(port, "/api/v1/query?" +
                             urllib.parse.urlencode({"query": expression})))
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def _wait_ready(process: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited with {process.returncode}; see {log}")
        try:
            _get(port, "/-/ready", timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"prometheus not ready within 60 s; see {log}")


def _wait_first_scrape(port: int, timeout: float) -> None:
    """Until Prometheus has scraped the target once: its first scrape comes at an offset of
    its own within the interval, so a window started before it holds one scrape fewer for one
    exporter than for another."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _query(port, "count(up)"):
            return
        time.sleep(0.5)
    raise RuntimeError(f"prometheus did not scrape the exporter within {timeout} s")


def _read_back(port: int, bill: Bill, seconds: float) -> None:
    """Fills ``bill`` from Prometheus's own metrics and its query API."""
    own = _get(port, "/metrics")
    bill.head_series = int(first_value(own, "prometheus_tsdb_head_series") or 0)
    bill.heap_inuse_mb = (first_value(own, "go_memstats_heap_inuse_bytes") or 0) / 1e6
    window = f"[{round(seconds) + 60}s]"
    bill.samples_per_scrape = _query(port, "scrape_samples_scraped") or 0.0
    bill.body_bytes_per_scrape = _query(port, "scrape_body_size_bytes") or 0.0
    bill.scrapes = int(_query(port, f"count_over_time(up{window})") or 0)
    bill.scrapes_up = int(_query(port, f"sum_over_time(up{window})") or 0)
    bill.scrape_s = _query(port, f"quantile_over_time(0.5, scrape_duration_seconds{window})")


def measure_bill(target_port: int, work: Path, seconds: float, interval: float,
                 timeout: float) -> Bill:
    """Runs a Prometheus scraping 127.0.0.1:target_port for ``seconds``; returns its bill."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_loopback_port()
    (work / "prometheus.yml").write_text(_config(target_port, interval, timeout))
    log_path = work / "prometheus.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(PROMETHEUS), f"--config.file={work / 'prometheus.yml'}",
             f"--storage.tsdb.path={work / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
             "--enable-feature=extra-scrape-metrics", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT)
    bill = Bill()
    try:
        _wait_ready(process, port, log_path)
        _wait_first_scrape(port, interval + timeout + 30)
        with RssSampler(process.pid, 1.0) as rss:
            time.sleep(seconds)
        bill.rss_median_mb = statistics.median(rss.samples)
        bill.rss_max_mb = max(rss.samples)
        _read_back(port, bill, seconds)
    finally:
        stop_process(process)
    return bill


def bill_table(rows: list[tuple[str, str, int, Bill]], interval: float, seconds: float) -> str:
    """The Markdown table of the bills: (scale, exporter, group-partitions, bill) a row."""
    lines = [f"| scale | exporter | series in head | per group-partition | beyond one scrape's "
             f"| Prometheus RSS median, max | heap in use | samples a scrape | body a scrape "
             f"(plain) | scrape as Prometheus timed it | scrapes up (every {interval:g} s, "
             f"{seconds:g} s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for scale, name, group_partitions, b in rows:
        scrape = f"{b.scrape_s * 1000:.0f} ms" if b.scrape_s is not None else "n/a"
        lines.append(
            f"| {scale} ({group_partitions:,}) | {name} | {b.head_series:,} | "
            f"{b.head_series / group_partitions:.2f} | {b.churned_series:,} | "
            f"{b.rss_median_mb:.0f} MB, "
            f"{b.rss_max_mb:.0f} MB | {b.heap_inuse_mb:.0f} MB | {b.samples_per_scrape:,.0f} | "
            f"{b.body_bytes_per_scrape / 1e6:.1f} MB | {scrape} | {b.scrapes_up} / {b.scrapes} |")
    return "\n".join(lines)
