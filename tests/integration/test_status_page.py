"""The status page at ``/`` in a real browser (headless Chromium, Debian's ``chromium``), on a real
Kafka broker and a real Flink 2.x job.

Ground truth: ``/metrics`` for which pairs and causes exist, Kafka's consumer-groups tool for the
Kafka-side lag. The page is read as Chromium rendered it (``--dump-dom``), not as lagsight sent it,
and a screenshot is left in build/test-artifacts/status-page.png for people to look at.
"""

from __future__ import annotations

import html.parser
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import kafka_broker as kafka
import promtext
from conftest import REPO_ROOT, wait_until
from flink_job import FlinkJob, JobSpec
from workload import commit_without_joining, create_topic, produce

ARTIFACTS = REPO_ROOT / "build" / "test-artifacts"
PARTITIONS = 3
RECORDS = 300
# Generous: Flink starts slowly on a loaded machine, and a cause needs two polls to confirm.
DIAGNOSIS_TIMEOUT = 240.0
CHROMIUM_TIMEOUT = 120.0

Pair = tuple[str, str, str, str]  # kafka_cluster, group, job_id, cause


def chromium(url: str, profile: Path, *args: str) -> str:
    """Runs headless Chromium on ``url`` and returns its stdout.

    The flags are the ones this machine needs: no sandbox as root, and no background networking
    (the machine's network is closed; Chromium would otherwise keep retrying Google's hosts).
    """
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed: run deploy/install-deps.sh", pytrace=False)
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}", *args, url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT,
                            check=False)
    assert result.returncode == 0, f"chromium exited {result.returncode}: {result.stderr[-2000:]}"
    return result.stdout


class RenderedPage(html.parser.HTMLParser):
    """What the tests read off the rendered DOM: the rows, their cells, every URL attribute."""

    URL_ATTRIBUTES = {"src", "href", "action", "srcset", "poster", "data", "xlink:href"}

    def __init__(self, dom: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[dict[str, str]] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self._cell: str | None = None
        self.feed(dom)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        values = {name: value or "" for name, value in attrs}
        self.urls += [value for name, value in values.items() if name in self.URL_ATTRIBUTES]
        if tag == "meta" and values.get("http-equiv", "").lower() == "refresh":
            self.urls += re.findall(r"url=(\S+)", values.get("content", ""), re.IGNORECASE)
        if tag == "tr" and "data-cause" in values:
            self.rows.append({name.removeprefix("data-"): value for name, value in values.items()
                              if name.startswith("data-")})
        if tag == "td" and self.rows:
            classes = values.get("class", "").split()
            self._cell = next((c for c in classes if c in ("kafka-lag", "flink-lag")), None)
        if tag == "div" and self.rows and "group" in values.get("class", "").split():
            self._cell = "group-text"
        if self._cell:
            self.rows[-1].setdefault(self._cell, "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "div"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell:
            self.rows[-1][self._cell] += data


def diagnosed_pairs(metrics: promtext.Samples) -> set[Pair]:
    pairs = set()
    for labels in promtext.select(metrics, "lagsight_diagnosis"):
        label = dict(labels)
        pairs.add((label["kafka_cluster"], label["group"], label["job_id"], label["cause"]))
    return pairs


def tool_lag(rows: list[kafka.GroupOffsetRow], group: str) -> int:
    """The group's total lag as Kafka's tool prints it (its LAG column, summed)."""
    lags = [row.lag for row in rows if row.group == group]
    assert lags and None not in lags, f"the tool shows no complete lag for {group!r}: {lags}"
    return sum(lags)


def test_status_page_in_a_browser(kafka_broker, start_lagsight, unique_prefix, tmp_path):
    bootstrap = kafka_broker.bootstrap
    job_topic = f"{unique_prefix}.orders"
    lonely_topic = f"{unique_prefix}.nogroup"
    kafka_only_topic = f"{unique_prefix}.audit"
    for topic in (job_topic, lonely_topic, kafka_only_topic):
        create_topic(bootstrap, topic, PARTITIONS)
        produce(bootstrap, topic, [RECORDS] * PARTITIONS)
    job_group = f"{unique_prefix}-orders"
    # Group ids are user data with no character restrictions: the page must show this as text.
    hostile_group = f"{unique_prefix}-<script>alert(\"x\")</script>'&<b>"
    commit_without_joining(bootstrap, hostile_group,
                           {(kafka_only_topic, p): 100 for p in range(PARTITIONS)})
    specs = [JobSpec(name=f"{unique_prefix}-enrich", topics=[job_topic], group=job_group,
                     checkpoint_ms=1000),
             # No group.id, yet the config maps it to a group: it commits nothing where the
             # operator expects commits, so the diagnosis calls the pair offsets_missing (a
             # problem row). Without the mapping, committing nothing is by design and healthy.
             JobSpec(name=f"{unique_prefix}-nogroup", topics=[lonely_topic], group=None,
                     start="earliest", checkpoint_ms=1000)]
    expected_group = f"{unique_prefix}-lonely"

    with FlinkJob("2.x", specs, tmp_path / "flink", bootstrap=bootstrap) as flink:
        lagsight = start_lagsight(
            bootstrap, groups={"allow": [re.escape(unique_prefix) + ".*"]},
            flink=[{"name": "mini", "rest_url": flink.rest_url, "kafka_cluster": "local",
                    "poll_interval": "1s", "request_timeout": "5s",
                    "groups": [{"job": re.escape(specs[1].name), "group": expected_group}]}])
        job_id = flink.jobs[specs[0].name]
        lonely_id = flink.jobs[specs[1].name]

        # The job read and committed everything, so its group's lag is stable for the reading.
        def committed_everything() -> bool:
            rows = [r for r in kafka.consumer_groups_describe_all(bootstrap) if r.group == job_group]
            return len(rows) == PARTITIONS and all(r.current_offset == RECORDS for r in rows)
        wait_until(committed_everything, DIAGNOSIS_TIMEOUT, "the Flink job to commit everything",
                   interval=2)

        # The job that commits nothing to its mapped group is offsets_missing once it has run
        # past the grace period.
        def all_pairs_diagnosed(metrics: promtext.Samples) -> bool:
            pairs = diagnosed_pairs(metrics)
            groups_and_jobs = {(group, job) for _, group, job, _ in pairs}
            return ({(job_group, job_id), (hostile_group, "")} <= groups_and_jobs
                    and ("local", expected_group, lonely_id, "offsets_missing") in pairs)
        lagsight.wait_for(all_pairs_diagnosed, "lagsight_diagnosis for both jobs and the group",
                          timeout=DIAGNOSIS_TIMEOUT)

        # The page and /metrics come from one render, but a poll can land between reading the
        # two: read until /metrics shows the same pairs and causes before and after the page.
        url = f"http://127.0.0.1:{lagsight.port}/"
        for attempt in range(5):
            tool_before = kafka.consumer_groups_describe_all(bootstrap)
            before = diagnosed_pairs(lagsight.scrape())
            dom = chromium(url, tmp_path / f"profile-dom-{attempt}", "--dump-dom")
            after = diagnosed_pairs(lagsight.scrape())
            tool_after = kafka.consumer_groups_describe_all(bootstrap)
            if before == after:
                break
            time.sleep(2)
        else:
            pytest.fail(f"the diagnosis kept changing while the page loaded: {before} / {after}")
        page = RenderedPage(dom)

        # (b) Exactly the pairs and causes /metrics reports, each once.
        shown = [(row["kafka-cluster"], row["group"], row["job-id"], row["cause"])
                 for row in page.rows]
        assert len(shown) == len(set(shown)), f"a pair is shown twice: {shown}"
        assert set(shown) == after
        assert ("local", expected_group, lonely_id, "offsets_missing") in after
        assert shown[0][3] == "offsets_missing", "problems sort first"
        # The hostile name is text in the page, not markup: no script element, and the group
        # cell's text is the whole name, its <script> and <b> included.
        assert "script" not in page.tags
        rows_by_group = {row["group"]: row for row in page.rows}
        assert rows_by_group[hostile_group]["group-text"] == hostile_group

        # Kafka lag on the page equals Kafka's tool, read before and after the page.
        for group in (job_group, hostile_group):
            shown_lag = int(rows_by_group[group]["kafka-lag"].replace(",", ""))
            low, high = sorted((tool_lag(tool_before, group), tool_lag(tool_after, group)))
            assert low <= shown_lag <= high, (group, shown_lag, low, high)
        assert tool_lag(tool_after, hostile_group) == PARTITIONS * (RECORDS - 100)
        assert rows_by_group[hostile_group]["flink-lag"] == "\u2013"  # no Flink side
        assert rows_by_group[job_group]["flink-lag"] == "0"  # the job read everything

        # (c) Nothing from elsewhere: every URL in the page is a relative path on lagsight.
        assert page.urls, "the page links /metrics"
        for link in page.urls:
            assert not re.match(r"^[a-z][a-z0-9+.-]*:|^//", link, re.IGNORECASE), link

        # (a) A screenshot for people to look at.
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        screenshot = ARTIFACTS / "status-page.png"
        screenshot.unlink(missing_ok=True)
        chromium(url, tmp_path / "profile-shot", f"--screenshot={screenshot}",
                 "--window-size=1280,900")
        assert screenshot.is_file() and screenshot.stat().st_size > 10_000, (
            "chromium wrote no screenshot")

        # Served as HTML that may load nothing from elsewhere.
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.headers["Content-Type"] == "text/html; charset=utf-8"
            assert response.headers["Content-Security-Policy"] == (
                "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
