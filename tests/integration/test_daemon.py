"""The daemon's own behaviour, on a real broker: config check, reload, HTTP robustness, output.

Kafka-side numbers are checked against Kafka's own tool in test_kafka_lag.py; this file checks
what an operator relies on around them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import promtext
import yaml
from conftest import lagsight_config, wait_until
from workload import commit_without_joining, create_topic, produce

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_config_check(binary: Path, config_file: Path, env: dict | None = None
                     ) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), f"--config.file={config_file}", "--config.check"],
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, **(env or {})})


def test_config_check_accepts_the_shipped_example(lagsight_binary):
    result = run_config_check(lagsight_binary, REPO_ROOT / "config/lagsight.example.yaml",
                              {"LAGSIGHT_KAFKA_PASSWORD": "secret",
                               "LAGSIGHT_FLINK_PASSWORD": "secret"})
    assert result.returncode == 0, result.stderr
    assert "valid, 2 kafka cluster(s), 1 flink cluster(s)" in result.stdout


def test_config_check_reports_the_file_line_and_key(lagsight_binary, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("kafka:\n  - name: a\n    bootstrap_servers: b:9092\n    poll_interval: 15\n")
    result = run_config_check(lagsight_binary, config)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{config}:4: kafka[0].poll_interval: invalid duration \"15\" (use a number with a "
        f"unit: ms, s, m, h, d; e.g. 500ms, 15s, 1m30s)")


def test_config_check_reports_what_librdkafka_rejects(lagsight_binary, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("kafka:\n  - name: a\n    bootstrap_servers: b:9092\n"
                      "    properties:\n      no.such.property: x\n")
    result = run_config_check(lagsight_binary, config)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{config}: kafka cluster \"a\": properties.no.such.property: "
        f"No such configuration property: \"no.such.property\"")


def test_a_missing_config_file_is_a_clear_error(lagsight_binary, tmp_path):
    result = run_config_check(lagsight_binary, tmp_path / "absent.yaml")
    assert result.returncode == 1
    assert "absent.yaml: cannot read the configuration file" in result.stderr


def groups_in(metrics: promtext.Samples) -> set[str]:
    return {dict(key)["group"] for key in promtext.select(metrics, "lagsight_kafka_group_info")}


def reload_successful(metrics: promtext.Samples) -> float:
    (value,) = promtext.select(metrics, "lagsight_config_last_reload_successful").values()
    return value


def test_sighup_applies_a_new_config_and_keeps_the_old_one_when_the_new_is_bad(
        kafka_broker, start_lagsight, unique_prefix):
    bootstrap = kafka_broker.bootstrap
    topic = f"{unique_prefix}-t"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, [5, 5])
    kept, dropped = f"{unique_prefix}-kept", f"{unique_prefix}-dropped"
    for group in (kept, dropped):
        commit_without_joining(bootstrap, group, {(topic, 0): 1})
    lagsight = start_lagsight(bootstrap)
    lagsight.wait_for(lambda m: {kept, dropped} <= groups_in(m), "both groups exported")

    lagsight.config_file.write_text(yaml.safe_dump(
        lagsight_config(bootstrap, groups={"deny": [dropped]})))
    lagsight.send_signal(signal.SIGHUP)
    metrics = lagsight.wait_for(lambda m: kept in groups_in(m) and dropped not in groups_in(m),
                                "the denied group to go and the other to stay")
    assert reload_successful(metrics) == 1

    lagsight.config_file.write_text("kafka:\n  - name: [broken\n")
    lagsight.send_signal(signal.SIGHUP)
    metrics = lagsight.wait_for(
        lambda m: reload_successful(m) == 0,
        "the failed reload to show")
    assert lagsight.running
    # The running configuration (with its deny filter) goes on polling.
    since = time.time()
    metrics = lagsight.wait_for_fresh_poll(since)
    assert kept in groups_in(metrics) and dropped not in groups_in(metrics)

    status, body = post(lagsight.port, "/-/reload")
    assert status == 500 and "invalid YAML" in body


def post(port: int, path: str) -> tuple[int, str]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                           f"Connection: close\r\n\r\n".encode())
        response = read_all(connection).decode(errors="replace")
    status_line, _, rest = response.partition("\r\n")
    return int(status_line.split()[1]), rest.partition("\r\n\r\n")[2]


def read_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_slow_broken_and_oversized_clients_do_not_affect_others(kafka_broker, start_lagsight):
    lagsight = start_lagsight(kafka_broker.bootstrap)
    # The first poll first: under the sanitizers on a loaded machine it can end after the scrape
    # below, whose body must then already hold what the poll exports.
    lagsight.wait_for(lambda m: any(name == "lagsight_kafka_up" for name, _ in m), "the first poll")
    stalled = []
    for _ in range(20):  # clients that send half a request and then stall
        connection = socket.create_connection(("127.0.0.1", lagsight.port), timeout=10)
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        stalled.append(connection)
    garbage = socket.create_connection(("127.0.0.1", lagsight.port), timeout=10)
    garbage.sendall(b"\x00\xff not http at all\r\n\r\n")
    assert read_all(garbage).startswith(b"HTTP/1.1 400")
    garbage.close()

    started = time.monotonic()
    status, body = lagsight.get("/metrics")
    assert status == 200 and "lagsight_kafka_up" in body
    # Waiting behind the stalled clients would take their 30 s read timeout.
    assert time.monotonic() - started < 10, "a scrape waited behind stalled clients"

    with socket.create_connection(("127.0.0.1", lagsight.port), timeout=10) as big:
        big.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * 20000 + b"\r\n\r\n")
        answer = read_all(big)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:100]
    for connection in stalled:
        connection.close()
    assert lagsight.get("/healthz")[0] == 200


def lagsight_with_a_group(kafka_broker, start_lagsight, prefix: str):
    """A lagsight that exports one group with lag on a 3-partition topic."""
    bootstrap = kafka_broker.bootstrap
    topic = f"{prefix}-t"
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, [4, 4, 4])
    commit_without_joining(bootstrap, f"{prefix}-g", {(topic, 0): 2})
    lagsight = start_lagsight(bootstrap)
    lagsight.wait_for(lambda m: f"{prefix}-g" in groups_in(m), "the group")
    return lagsight


def test_live_exposition_passes_promtool(kafka_broker, start_lagsight, unique_prefix):
    lagsight = lagsight_with_a_group(kafka_broker, start_lagsight, unique_prefix)
    status, body = lagsight.get("/metrics")
    assert status == 200
    check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr


def test_metrics_are_gzipped_for_a_client_that_asks(kafka_broker, start_lagsight,
                                                   unique_prefix, tmp_path):
    """curl --compressed (Accept-Encoding as Prometheus sends it) gets gzip that inflates to the
    very text an identity request gets from the same render; a plain request gets plain text."""
    lagsight = lagsight_with_a_group(kafka_broker, start_lagsight, unique_prefix)
    url = f"http://127.0.0.1:{lagsight.port}/metrics"

    def curl(*args: str) -> tuple[str, bytes]:
        headers = tmp_path / "headers"
        done = subprocess.run(["curl", "-sS", "--fail", "-D", str(headers), *args, url],
                              capture_output=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return headers.read_text().lower(), done.stdout

    for _ in range(20):
        plain_headers, before = curl()
        gzip_headers, inflated = curl("--compressed")
        _, after = curl()
        if before == after:  # no render between the two plain requests: one exposition
            break
    else:
        raise AssertionError("the exposition changed under every attempt")
    assert "content-encoding: gzip" in gzip_headers and "vary: accept-encoding" in gzip_headers
    assert "content-encoding" not in plain_headers
    assert inflated == before
    _, raw = curl("-H", "Accept-Encoding: gzip")
    assert raw[:2] == b"\x1f\x8b" and len(raw) * 3 < len(before), (len(raw), len(before))


def test_json_logs_are_one_object_per_line(lagsight_binary, tmp_path):
    config = tmp_path / "lagsight.yaml"
    # Nothing listens on port 1: the poll fails quickly and is logged.
    config.write_text("kafka:\n  - name: nowhere\n    bootstrap_servers: 127.0.0.1:1\n"
                      "    poll_interval: 1s\n    request_timeout: 1s\n")
    process = subprocess.Popen([str(lagsight_binary), f"--config.file={config}",
                                "--web.listen-address=127.0.0.1:0", "--log.format=json"],
                               stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any("poll failed" in l for l in lines):
            lines.append(process.stderr.readline())
        assert any("poll failed" in l for l in lines), lines
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    for line in lines:
        if line.strip():
            record = json.loads(line)
            assert {"ts", "level", "msg"} <= record.keys()
