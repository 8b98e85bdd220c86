"""The Flink REST client's TLS and authentication against a FAKE Flink REST server (fake_flink.py)
serving real Flink's recorded answers: the server verified against the configured CA (or not, when
told), its host name checked, a CA changed by a reload; basic and bearer credentials sent, wrong
ones refused. Each failure takes only that cluster down; the Kafka half keeps polling.
"""

from __future__ import annotations

import base64
import signal
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fake_flink import (FAULT_DEADLINE_SECONDS, FakeFlink, assert_kafka_half_fresh, flink_cluster,
                        flink_up, per_job, single, wait_for_log, wait_healthy)


@pytest.fixture
def fake_flink() -> Iterator[FakeFlink]:
    with FakeFlink() as fake:
        yield fake


def openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, f"openssl {' '.join(args)}: {result.stderr}"


def make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    """A throwaway CA (EC P-256, valid one day); returns (certificate, key)."""
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key.name, "-out", cert.name, "-days", "1",
            "-subj", f"/CN=lagsight test {name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    return cert, key


def make_server_cert(directory: Path, name: str, ca: tuple[Path, Path],
                     subject_alt_name: str) -> tuple[Path, Path]:
    """A server certificate signed by ``ca``; returns (certificate, key)."""
    cert, key, csr = (directory / f"{name}.pem", directory / f"{name}.key",
                      directory / f"{name}.csr")
    extensions = directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={subject_alt_name}\nbasicConstraints=CA:FALSE\n"
                          "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key.name, "-out", csr.name, "-subj", "/CN=fake flink",
            cwd=directory)
    openssl("x509", "-req", "-in", csr.name, "-CA", ca[0].name, "-CAkey", ca[1].name,
            "-set_serial", str(int(time.time() * 1000)), "-days", "1", "-out", cert.name,
            "-extfile", extensions.name, cwd=directory)
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def test_tls_verifies_the_server_against_the_configured_ca(kafka_broker, start_lagsight,
                                                            tmp_path):
    """https:// is verified against tls.ca_file, including the name (here the IP SAN): a server
    the CA did not sign, or a certificate for another name, is refused and logged as such;
    insecure_skip_verify connects anyway. A fixed CA file (reloaded) recovers the cluster."""
    pki = tmp_path / "pki"
    pki.mkdir()
    ca = make_ca(pki, "ca")
    other_ca = make_ca(pki, "other-ca")
    server = make_server_cert(pki, "server", ca, "IP:127.0.0.1")
    wrong_name = make_server_cert(pki, "wrong-name", ca, "DNS:flink.invalid")

    with FakeFlink(server_context(*server)) as fake, \
            FakeFlink(server_context(*wrong_name)) as wrong_name_fake:
        clusters = [
            flink_cluster(fake.url, "trusted", tls={"ca_file": str(ca[0])}),
            flink_cluster(fake.url, "untrusted", tls={"ca_file": str(other_ca[0])}),
            flink_cluster(fake.url, "skip-verify",
                          tls={"ca_file": str(other_ca[0]), "insecure_skip_verify": True}),
            flink_cluster(wrong_name_fake.url, "wrong-name", tls={"ca_file": str(ca[0])}),
        ]
        lagsight = start_lagsight(kafka_broker.bootstrap, flink=clusters)
        wait_healthy(lagsight, "trusted")
        wait_healthy(lagsight, "skip-verify")
        metrics = lagsight.wait_for(
            lambda m: flink_up(m, "untrusted") == 0 and flink_up(m, "wrong-name") == 0,
            "the unverifiable clusters down", timeout=FAULT_DEADLINE_SECONDS)
        assert per_job(metrics, "lagsight_flink_job_info", "untrusted") == {}
        assert per_job(metrics, "lagsight_flink_job_info", "wrong-name") == {}
        for name in ("untrusted", "wrong-name"):
            wait_for_log(lagsight, 0, f'flink cluster "{name}": poll failed', "TLS handshake",
                         "certificate verify failed")
        assert fake.tls_failures and wrong_name_fake.tls_failures
        assert_kafka_half_fresh(lagsight)

        # The operator fixes the CA file; SIGHUP reloads; the cluster comes up.
        clusters[1]["tls"]["ca_file"] = str(ca[0])
        config = yaml.safe_load(lagsight.config_file.read_text())
        config["flink"] = clusters
        lagsight.config_file.write_text(yaml.safe_dump(config, sort_keys=False))
        lagsight.send_signal(signal.SIGHUP)
        wait_healthy(lagsight, "untrusted")
        metrics = wait_healthy(lagsight, "trusted")
        assert single(metrics, "lagsight_config_last_reload_successful") == 1
        assert lagsight.running


# --- authentication -------------------------------------------------------------------------

def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_authentication_basic_and_bearer(kafka_broker, start_lagsight, fake_flink):
    """A JobManager behind an authenticating proxy: the right Basic or Bearer credentials are
    sent on every request and poll fine; wrong or missing ones get 401 and up 0, and come up
    once the server accepts them."""
    fake_flink.accepted_authorizations = {basic("lagsight", "s3cret:with colon"),
                                          "Bearer tok-123.abc"}
    clusters = [
        flink_cluster(fake_flink.url, "basic",
                      auth={"username": "lagsight", "password": "s3cret:with colon"}),
        flink_cluster(fake_flink.url, "bearer", auth={"bearer_token": "tok-123.abc"}),
        flink_cluster(fake_flink.url, "wrong-password",
                      auth={"username": "lagsight", "password": "wrong"}),
        flink_cluster(fake_flink.url, "no-auth"),
    ]
    lagsight = start_lagsight(kafka_broker.bootstrap, flink=clusters)
    wait_healthy(lagsight, "basic")
    wait_healthy(lagsight, "bearer")
    metrics = lagsight.wait_for(
        lambda m: flink_up(m, "wrong-password") == 0 and flink_up(m, "no-auth") == 0,
        "the unauthenticated clusters down", timeout=FAULT_DEADLINE_SECONDS)
    assert per_job(metrics, "lagsight_flink_job_info", "wrong-password") == {}
    for name in ("wrong-password", "no-auth"):
        wait_for_log(lagsight, 0, f'flink cluster "{name}": poll failed', "HTTP 401")
    sent = fake_flink.authorizations_sent()
    assert basic("lagsight", "wrong") in sent and None in sent
    assert_kafka_half_fresh(lagsight)

    fake_flink.accepted_authorizations = None  # the proxy stops requiring credentials
    for name in ("wrong-password", "no-auth", "basic", "bearer"):
        wait_healthy(lagsight, name)
    assert lagsight.running


# --- hostile answers: cap, deadline, memory ---------------------------------------------------
