"""The exporters the side-by-side bench runs: how to start each, and where its values are.

lagsight runs with its defaults (whatever they are in the binary under test: no ``series:``
switch is set), with lag in seconds off (``lag_seconds_fetch_budget: 0``), since reading records
for lag in seconds is work the peers do not do, and, on request, at topic level (``series:
granularity: [{level: topic}]``: what a user pays who gives up per-partition lag). The peers run from binaries you
give (this repository never vendors them), configured to report every group, simple ones
included, per partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# bootstrap, port, work directory, poll interval (lagsight's; seconds) -> argv, environment
Command = Callable[[str, int, Path, float], tuple[list[str], dict[str, str]]]


@dataclass
class Exporter:
    """How to run one exporter and read its per-partition lag (and committed offset)."""
    name: str
    command: Command
    lag_metric: str
    group_label: str
    offset_metric: str | None = None  # per-partition committed offset, where exported
    topic_label: str = "topic"
    partition_label: str = "partition"
    polls_on_its_own: bool = False  # lagsight: its exposition changes between scrapes
    lag_seconds_budget: int | None = None  # lagsight: its config's, None for the default
    # lagsight at topic level: the lag is checked as each group's sum over the topic
    # (lag_metric then has no partition label).
    topic_level: bool = False

    @property
    def config_name(self) -> str:
        """A file name for this exporter's work directory and log."""
        return "".join(c if c.isalnum() else "-" for c in self.name).strip("-")


def lagsight_config(bootstrap: str, interval: float, exporter: Exporter) -> str:
    budget = exporter.lag_seconds_budget
    budget_line = f"    lag_seconds_fetch_budget: {budget}\n" if budget is not None else ""
    series = ("    series:\n      granularity:\n        - { level: topic }\n"
              if exporter.topic_level else "")
    return (f"kafka:\n  - name: bench\n    bootstrap_servers: {bootstrap}\n"
            f"    poll_interval: {round(interval * 1000)}ms\n    request_timeout: 30s\n"
            f"    poll_timeout: 300s\n{budget_line}{series}")


def lagsight_exporter(binary: Path, name: str = "lagsight",
                      lag_seconds_budget: int | None = None,
                      topic_level: bool = False) -> Exporter:
    """lagsight at its defaults, but for ``lag_seconds_budget`` and ``topic_level`` when given.
    The bench reloads it (SIGHUP) with another interval by rewriting lagsight.yaml with
    ``lagsight_config``."""
    exporter = Exporter(name, lambda *_: ([], {}),
                        "lagsight_kafka_group_topic_lag_records" if topic_level
                        else "lagsight_kafka_group_lag_records", "group",
                        offset_metric=None if topic_level
                        else "lagsight_kafka_group_committed_offset",
                        polls_on_its_own=True, lag_seconds_budget=lag_seconds_budget,
                        topic_level=topic_level)

    def command(bootstrap: str, port: int, work: Path,
                interval: float) -> tuple[list[str], dict[str, str]]:
        (work / "lagsight.yaml").write_text(lagsight_config(bootstrap, interval, exporter))
        return ([str(binary), f"--config.file={work / 'lagsight.yaml'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], {})
    exporter.command = command
    return exporter


def kafka_exporter(binary: Path) -> Exporter:
    def command(bootstrap: str, port: int, work: Path,
                interval: float) -> tuple[list[str], dict[str, str]]:
        # --offset.show-all (its default): every group's lag, also of groups without members.
        return ([str(binary), f"--kafka.server={bootstrap}",
                 f"--web.listen-address=127.0.0.1:{port}", "--offset.show-all",
                 "--kafka.version=3.7.0"], {})
    return Exporter("kafka_exporter", command, "kafka_consumergroup_lag", "consumergroup",
                    offset_metric="kafka_consumergroup_current_offset")


def kminion(binary: Path, template: Path | None) -> Exporter:
    def command(bootstrap: str, port: int, work: Path,
                interval: float) -> tuple[list[str], dict[str, str]]:
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
    # KMinion exports committed offsets summed per topic only, not per partition.
    return Exporter("kminion", command, "kminion_kafka_consumer_group_topic_partition_lag",
                    "group_id", topic_label="topic_name", partition_label="partition_id")
