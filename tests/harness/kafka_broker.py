#!/usr/bin/env python3
"""A real single-node Apache Kafka broker (KRaft) and Kafka's own CLI tools, for tests and demos.

The broker and the tools run from the jars that tests/harness/kafka/pom.xml resolves from Maven
Central, so tests compare lagsight with what Kafka itself reports, never with a fake.

As a module: ``KafkaBroker`` (start/stop/restart on the same ports and data directory), and
runners and parsers for Kafka's ConsumerGroupCommand, GroupsCommand and GetOffsetShell. As a
CLI::

    python3 tests/harness/kafka_broker.py start --dir DIR [--port P]

runs a broker in the foreground, prints ``bootstrap=127.0.0.1:PORT`` and stops it cleanly on
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from processes import terminate

HARNESS_DIR = Path(__file__).resolve().parent
POM = HARNESS_DIR / "kafka" / "pom.xml"
CLASSPATH_FILE = HARNESS_DIR / "kafka" / "target" / "classpath.txt"

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
GROUPS_COMMAND = "org.apache.kafka.tools.GroupsCommand"
GET_OFFSET_SHELL = "org.apache.kafka.tools.GetOffsetShell"
CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"
TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"

# The tools are short-lived JVMs: a small heap, the C1 compiler only and the serial collector
# cut their start-up time roughly in half, and a quiet logger keeps stderr readable. The JVM's
# own warnings go to stderr, not into the stdout the tests parse: it printed "Cannot use file
# /tmp/hsperfdata_root/<pid> because it is locked by another process" into a consumer-groups
# table once (a suite run of 2026-12-07), and without its performance data file it has none to
# warn of.
TOOL_JVM_OPTIONS = [
    "-Xmx256m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:-UsePerfData",
    "-Xlog:disable",
    "-Xlog:all=warning:stderr",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
]
TOOL_TIMEOUT_SECONDS = 60.0


def kafka_classpath(version: str | None = None) -> str:
    """The Java classpath of Kafka's jars, resolved by Maven once and cached beside the pom.

    ``version`` asks for another Kafka release than the pom's (e.g. "3.9.1", for a client
    behaviour that differs between release lines); it is resolved with the same pom and cached
    apart. Resolution is repeated only when the pom is newer than the cached file, so a test run
    does not pay for Maven (about 5 s even with a warm local repository) every time.
    """
    cache = (CLASSPATH_FILE if version is None
             else CLASSPATH_FILE.with_name(f"classpath-{version}.txt"))
    if not cache.exists() or cache.stat().st_mtime < POM.stat().st_mtime:
        cache.parent.mkdir(parents=True, exist_ok=True)
        override = [] if version is None else [f"-Dkafka.version={version}"]
        result = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(POM), *override, "dependency:build-classpath",
             f"-Dmdep.outputFile={cache}"],
            capture_output=True, text=True, timeout=600, check=False)
        if result.returncode != 0 or not cache.exists():
            raise RuntimeError(
                f"mvn could not resolve Kafka's classpath (exit {result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}")
    return cache.read_text().strip()


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def random_cluster_id() -> str:
    """A KRaft cluster id in Kafka's own format: 16 random bytes, URL-safe base64, unpadded.

    Kafka refuses ids whose text starts with '-', as its own generator does.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM the broker when the thread that started it dies.

    A test run killed hard (CI timeout, Ctrl-C twice) then never leaves a broker holding ports.
    """
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class BrokerStartError(RuntimeError):
    """The broker did not come up in time; the message carries the tail of its log."""


class KafkaBroker:
    """One Kafka process acting as both KRaft controller and broker, on loopback ports only.

    The ports and the data directory are fixed at construction, so ``stop()`` followed by
    ``start()`` brings back the same cluster (same id, topics and committed offsets) at the same
    bootstrap address, which is what a client sees when a real broker restarts.

    For security tests: ``extra_listeners`` maps more listener names to their security protocol
    (e.g. ``{"SASL_SSL": "SASL_SSL", "MTLS": "SSL"}``), each on a port of its own
    (``listener_bootstrap(name)``); ``scram_users`` maps user names to passwords, stored as
    SCRAM-SHA-512 credentials when the log directory is formatted, so they exist before the
    broker first serves. Everything else (authorizer, TLS files, per-listener settings) goes in
    ``extra_properties``. The PLAINTEXT listener at ``bootstrap`` always stays: the harness's
    readiness check and Kafka's tools use it. ``kafka_version`` runs another Kafka release than
    the pom's (see ``kafka_classpath``).

    ``joins`` makes this process a second broker of that broker's cluster (broker role only,
    ``node_id`` 2 by default, formatted with the same cluster id, voting with its controller):
    for what only a cluster of two brokers shows, a group's coordinator moving between them.
    Start it after the broker it joins.
    """

    def __init__(self, data_dir: Path, port: int | None = None,
                 controller_port: int | None = None,
                 extra_properties: dict[str, str] | None = None,
                 heap: str = "512m",
                 extra_listeners: dict[str, str] | None = None,
                 scram_users: dict[str, str] | None = None,
                 kafka_version: str | None = None,
                 joins: KafkaBroker | None = None, node_id: int | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.joins = joins
        self.node_id = node_id or (2 if joins else 1)
        self.port = port or free_loopback_port()
        self.controller_port = controller_port or free_loopback_port()
        self.extra_properties = dict(extra_properties or {})
        self.heap = heap
        self.extra_listeners = dict(extra_listeners or {})
        self.listener_ports = {name: free_loopback_port() for name in self.extra_listeners}
        self.scram_users = dict(scram_users or {})
        self.kafka_version = kafka_version
        self.log_file = self.data_dir / "broker.log"
        self._process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def listener_bootstrap(self, name: str) -> str:
        """The address of one of ``extra_listeners``."""
        return f"127.0.0.1:{self.listener_ports[name]}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _properties(self) -> dict[str, str]:
        extra = "".join(f",{name}://127.0.0.1:{port}"
                        for name, port in self.listener_ports.items())
        protocols = "".join(f",{name}:{protocol}"
                            for name, protocol in self.extra_listeners.items())
        voters = self.joins or self
        properties = {
            "process.roles": "broker" if self.joins else "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"{voters.node_id}@127.0.0.1:{voters.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": (f"PLAINTEXT://127.0.0.1:{self.port}{extra}" if self.joins else
                          f"PLAINTEXT://127.0.0.1:{self.port},"
                          f"CONTROLLER://127.0.0.1:{self.controller_port}{extra}"),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}{extra}",
            "listener.security.protocol.map":
                f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{protocols}",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "kraft-logs"),
            "num.partitions": "1",
            # One node: every internal topic must live with a single replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # Few __consumer_offsets partitions: the first group operation creates them all.
            "offsets.topic.num.partitions": "3",
            # Tests want a joined consumer to be Stable at once, not after the default 3 s.
            "group.initial.rebalance.delay.ms": "0",
        }
        properties.update(self.extra_properties)
        return properties

    def configured(self, key: str) -> str:
        """The value of ``key`` in the broker's server.properties."""
        return self._properties()[key]

    def _write_properties(self) -> Path:
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in self._properties().items()))
        return path

    def _format_storage_once(self, classpath: str, properties_file: Path) -> None:
        """Formats the KRaft log directory on first start only; a restart keeps the cluster."""
        if (self.data_dir / "kraft-logs" / "meta.properties").exists():
            return
        scram = [argument for name, password in self.scram_users.items()
                 for argument in ("--add-scram",
                                  f"SCRAM-SHA-512=[name={name},password={password}]")]
        with self.log_file.open("ab") as log:
            result = subprocess.run(
                ["java", *TOOL_JVM_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool",
                 "format", "--cluster-id",
                 self.joins.stored_cluster_id() if self.joins else random_cluster_id(),
                 "--config", str(properties_file),
                 *scram],
                stdout=log, stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT_SECONDS, check=False)
        if result.returncode != 0:
            raise BrokerStartError(
                f"StorageTool format failed (exit {result.returncode}):\n{self.log_tail()}")

    def start(self, timeout: float = 90.0) -> None:
        """Starts the broker and returns once it answers a metadata request.

        Raises BrokerStartError with the log tail if the process exits or the deadline passes.
        """
        if self.running:
            raise RuntimeError(f"broker at {self.bootstrap} is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        classpath = kafka_classpath(self.kafka_version)
        properties_file = self._write_properties()
        self._format_storage_once(classpath, properties_file)
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                ["java", f"-Xmx{self.heap}", "-cp", classpath,
                 "kafka.Kafka", str(properties_file)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.data_dir, start_new_session=True, preexec_fn=_die_with_parent)
        try:
            self._wait_until_serving(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_until_serving(self, deadline: float) -> None:
        # A plain TCP connect first: librdkafka would log every refused connection to stderr.
        while not self._port_accepts():
            self._check_alive_before(deadline)
            time.sleep(0.1)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while True:
            self._check_alive_before(deadline)
            try:
                admin.list_topics(timeout=2)
                return
            except KafkaException:
                time.sleep(0.2)

    def _port_accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def _check_alive_before(self, deadline: float) -> None:
        assert self._process is not None
        exit_code = self._process.poll()
        if exit_code is not None:
            raise BrokerStartError(
                f"broker exited with {exit_code} while starting; log {self.log_file}:\n"
                f"{self.log_tail()}")
        if time.monotonic() > deadline:
            raise BrokerStartError(
                f"broker at {self.bootstrap} not serving before the deadline; log "
                f"{self.log_file}:\n{self.log_tail()}")

    def stop(self, timeout: float = 30.0) -> None:
        """Controlled shutdown (SIGTERM); SIGKILL only if it has not exited within the timeout."""
        terminate(self._process, timeout)
        self._process = None

    def stored_cluster_id(self) -> str:
        """The cluster id StorageTool wrote into this broker's log directory (meta.properties)."""
        meta = self.data_dir / "kraft-logs" / "meta.properties"
        for line in meta.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.removeprefix("cluster.id=").strip()
        raise ValueError(f"{meta} has no cluster.id line")

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_file.exists():
            return "(no broker log)"
        text = self.log_file.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# ----------------------------------------------------------------------------------------------
# Kafka's own CLI tools: the ground truth the integration tests compare lagsight against.


def run_kafka_tool(main_class: str, *args: str, timeout: float = TOOL_TIMEOUT_SECONDS,
                   version: str | None = None) -> str:
    """Runs one of Kafka's CLI classes (of ``version``, else the pom's release) and returns its
    stdout; raises with stderr on failure."""
    command = ["java", *TOOL_JVM_OPTIONS, "-cp", kafka_classpath(version), main_class, *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{main_class} {' '.join(args)} exited {result.returncode}:\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result.stdout


@dataclass(frozen=True)
class GroupOffsetRow:
    """One row of ``--describe``: a partition as the group sees it; None is the tool's '-'."""
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None


@dataclass(frozen=True)
class GroupListing:
    """One row of ``ConsumerGroupCommand --list --state --type``."""
    group: str
    type: str
    state: str


@dataclass(frozen=True)
class GroupProtocol:
    """One row of ``GroupsCommand --list``: the group's type and protocol type.

    This is the only tool output that tells a simple group apart: Kafka reports it as TYPE
    Classic like any classic group, but with an empty protocol type (not "consumer").
    """
    group: str
    type: str
    protocol: str

    @property
    def is_simple(self) -> bool:
        return self.type == "Classic" and self.protocol == ""


@dataclass(frozen=True)
class GroupMembership:
    """One group's row of ``--describe --state``: its coordinator's view of the group."""
    group: str
    state: str
    members: int
    coordinator_id: int | None = None  # the node id of the group's coordinator


# Headers exactly as Kafka 4.1 prints them, split on whitespace. A parser refuses any other
# header: a silently misparsed table would turn the ground truth of a test into noise.
DESCRIBE_OFFSETS_HEADER = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                           "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
LIST_STATE_TYPE_HEADER = ["GROUP", "TYPE", "STATE"]
DESCRIBE_STATE_HEADER = ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                         "#MEMBERS"]
GROUPS_LIST_HEADER = ["GROUP", "TYPE", "PROTOCOL"]


def _table_rows(output: str, header: list[str], min_fields: int | None = None
                ) -> list[list[str]]:
    """The rows of every table in ``output`` whose header is ``header``, split on whitespace.

    The tools print one table per group (a header line, rows, a blank line) on stdout. Each row
    must have as many fields as the header, or at least ``min_fields`` when trailing columns
    may be blank.
    """
    rows = []
    in_table = False
    for line in output.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == header[0]:
            if fields != header:
                raise ValueError(f"unexpected header {fields}, expected {header}")
            in_table = True
        elif in_table and (min_fields or len(header)) <= len(fields) <= len(header):
            rows.append(fields)
        else:
            raise ValueError(f"unexpected line in a {header[0]} table: {line!r}")
    return rows


def _optional_int(field: str) -> int | None:
    return None if field == "-" else int(field)


def parse_describe_offsets(output: str) -> list[GroupOffsetRow]:
    """Parses ``ConsumerGroupCommand --describe`` output."""
    return [GroupOffsetRow(group=group, topic=topic, partition=int(partition),
                           current_offset=_optional_int(current),
                           log_end_offset=_optional_int(end), lag=_optional_int(lag),
                           consumer_id=None if member == "-" else member)
            for group, topic, partition, current, end, lag, member, _host, _client
            in _table_rows(output, DESCRIBE_OFFSETS_HEADER)]


def parse_list_with_state_and_type(output: str) -> list[GroupListing]:
    """Parses ``ConsumerGroupCommand --list --state --type`` output."""
    return [GroupListing(group=group, type=type_, state=state)
            for group, type_, state in _table_rows(output, LIST_STATE_TYPE_HEADER)]


def parse_describe_state(output: str) -> list[GroupMembership]:
    """Parses ``ConsumerGroupCommand --describe --state`` output."""
    return [GroupMembership(group=fields[0], state=fields[4], members=int(fields[5]),
                            coordinator_id=int(fields[2].strip("()")))
            for fields in _table_rows(output, DESCRIBE_STATE_HEADER)]


def parse_groups_list(output: str) -> list[GroupProtocol]:
    """Parses ``GroupsCommand --list`` output; a blank PROTOCOL (simple group) is ''."""
    return [GroupProtocol(group=fields[0], type=fields[1],
                          protocol=fields[2] if len(fields) == 3 else "")
            for fields in _table_rows(output, GROUPS_LIST_HEADER, min_fields=2)]


def consumer_groups_describe_all(bootstrap: str) -> list[GroupOffsetRow]:
    """Every group's committed offset, log end offset and lag per partition, as Kafka reports."""
    return parse_describe_offsets(run_kafka_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--all-groups"))


def consumer_groups_list_with_state_and_type(bootstrap: str) -> list[GroupListing]:
    """Every group with its type (Classic or Consumer) and state, as Kafka reports."""
    return parse_list_with_state_and_type(run_kafka_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--list", "--state", "--type"))


def consumer_groups_describe_state(bootstrap: str) -> list[GroupMembership]:
    """Every group's state and member count, as its coordinator reports."""
    return parse_describe_state(run_kafka_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--all-groups",
        "--state"))


def groups_list(bootstrap: str) -> list[GroupProtocol]:
    """Every group with its type and protocol type (``kafka-groups.sh --list``)."""
    return parse_groups_list(run_kafka_tool(
        GROUPS_COMMAND, "--bootstrap-server", bootstrap, "--list"))


def topic_offsets(bootstrap: str, topic_regex: str, position: str
                  ) -> dict[tuple[str, int], int]:
    """Every partition's earliest or latest offset (``position``: "earliest" or "latest").

    Runs GetOffsetShell, which prints one ``topic:partition:offset`` line per partition of the
    topics matching ``topic_regex`` (a Java regex; topic names cannot contain ':').
    """
    output = run_kafka_tool(GET_OFFSET_SHELL, "--bootstrap-server", bootstrap,
                            "--topic", topic_regex, "--time", position)
    offsets = {}
    for line in output.splitlines():
        topic, partition, offset = line.split(":")
        offsets[(topic, int(partition))] = int(offset)
    return offsets


def delete_group(bootstrap: str, group: str) -> None:
    """Deletes a group and its committed offsets; Kafka refuses while the group has members.

    The tool exits 0 even when the deletion fails, so success is read from its message.
    """
    output = run_kafka_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--delete", "--group", group)
    if "was successful" not in output:
        raise RuntimeError(f"deleting group {group!r} did not succeed:\n{output}")


def reset_group_offsets(bootstrap: str, group: str, topic: str, partition: int,
                        offset: int) -> None:
    """Moves a member-less group's committed offset on one partition (``--reset-offsets
    --to-offset --execute``), as an operator does to reprocess; checks the tool's NEW-OFFSET."""
    output = run_kafka_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--reset-offsets",
        "--group", group, "--topic", f"{topic}:{partition}", "--to-offset", str(offset),
        "--execute")
    rows = _table_rows(output, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])
    if rows != [[group, topic, str(partition), str(offset)]]:
        raise RuntimeError(f"resetting {group} on {topic}:{partition} to {offset}:\n{output}")


def open_transaction_starts(bootstrap: str, topic: str, partition: int) -> list[int]:
    """The first offsets of the transactions open on a partition, as Kafka's
    ``kafka-transactions.sh describe-producers`` reports them (CurrentTransactionStartOffset of
    each producer; "None" for one with none open, left out). The partition's last stable offset
    is the lowest of them, else its log end."""
    output = run_kafka_tool(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap,
                            "describe-producers", "--topic", topic, "--partition", str(partition))
    header = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
              "LastTimestamp", "CurrentTransactionStartOffset"]
    return sorted(int(row[5]) for row in _table_rows(output, header) if row[5] != "None")


def cluster_id(bootstrap: str) -> str:
    """The cluster id the broker at ``bootstrap`` answers with (``kafka-cluster.sh cluster-id``)."""
    output = run_kafka_tool(CLUSTER_TOOL, "cluster-id", "--bootstrap-server", bootstrap)
    match = re.fullmatch(r"Cluster ID: (\S+)", output.strip())
    if match is None:
        raise ValueError(f"unexpected ClusterTool output: {output!r}")
    return match.group(1)


def broker_configs(bootstrap: str, broker_id: int = 1) -> dict[str, str]:
    """One broker's effective configuration as it reports it (``kafka-configs.sh --describe
    --entity-type brokers --all``), defaults included; sensitive values are not shown by Kafka.
    """
    output = run_kafka_tool(CONFIG_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                            "--entity-type", "brokers", "--entity-name", str(broker_id), "--all")
    configs = {}
    for line in output.splitlines()[1:]:
        match = re.fullmatch(r"\s+([a-z0-9._-]+)=(.*) sensitive=(?:true|false) synonyms=\{.*\}",
                             line)
        if match is None:
            raise ValueError(f"unexpected line in kafka-configs output: {line!r}")
        configs[match.group(1)] = match.group(2)
    if not configs:
        raise ValueError(f"kafka-configs printed no configs: {output!r}")
    return configs


# ----------------------------------------------------------------------------------------------
# CLI


def _run_in_foreground(data_dir: Path, port: int | None) -> int:
    """Runs a broker until SIGTERM or SIGINT, then stops it cleanly."""
    stop_requested = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop_requested.set())
    broker = KafkaBroker(data_dir, port=port)
    try:
        broker.start()
        print(f"bootstrap={broker.bootstrap}", flush=True)
        print(f"log={broker.log_file}", file=sys.stderr, flush=True)
        while not stop_requested.wait(timeout=1.0):
            if not broker.running:
                print(f"broker exited on its own; log tail:\n{broker.log_tail()}",
                      file=sys.stderr)
                return 1
    finally:
        broker.stop()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="run a broker in the foreground until signalled")
    start.add_argument("--dir", required=True, type=Path,
                       help="data directory (kept: starting again on it restores the cluster)")
    start.add_argument("--port", type=int, help="client port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    return _run_in_foreground(args.dir, args.port)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
