"""--web.config.file (exporter-toolkit format) with real TLS clients: Python's ssl, curl, openssl.

Certificates are made by the openssl CLI in each test; bcrypt hashes by the PyPI ``bcrypt``
package, not by lagsight's libcrypt, so both sides of every check are independent. lagsight
polls the real broker, so /metrics carries real Kafka series over TLS.
"""

from __future__ import annotations

import base64
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import pytest
import yaml
from conftest import lagsight_config, wait_until
from kafka_broker import free_loopback_port

HTTP_TIMEOUT_SECONDS = 10.0
START_TIMEOUT_SECONDS = 30.0


# --- certificates, made by the openssl CLI -------------------------------------------------------

def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@dataclass
class Certificate:
    cert: Path
    key: Path


def make_ca(directory: Path, name: str) -> Certificate:
    ca = Certificate(directory / f"{name}.crt", directory / f"{name}.key")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(ca.key), "-out", str(ca.cert), "-days", "2",
            "-subj", f"/CN={name}")
    return ca


def make_signed(directory: Path, name: str, ca: Certificate, extensions: str) -> Certificate:
    leaf = Certificate(directory / f"{name}.crt", directory / f"{name}.key")
    request = directory / f"{name}.csr"
    extension_file = directory / f"{name}.ext"
    extension_file.write_text(extensions + "\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(leaf.key), "-out", str(request), "-subj", f"/CN={name}")
    openssl("x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key),
            "-CAcreateserial", "-out", str(leaf.cert), "-days", "2",
            "-extfile", str(extension_file))
    return leaf


@dataclass
class Pki:
    ca: Certificate
    server: Certificate
    other_ca: Certificate          # trusted by nobody here
    client_ca: Certificate
    client: Certificate            # signed by client_ca
    stranger: Certificate          # a client certificate signed by other_ca


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = make_ca(directory, "server-ca")
    other_ca = make_ca(directory, "other-ca")
    client_ca = make_ca(directory, "client-ca")
    server = make_signed(directory, "server", ca,
                         "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                         "extendedKeyUsage=serverAuth")
    client = make_signed(directory, "client", client_ca, "extendedKeyUsage=clientAuth")
    stranger = make_signed(directory, "stranger", other_ca, "extendedKeyUsage=clientAuth")
    return Pki(ca, server, other_ca, client_ca, client, stranger)


# --- lagsight with a web config ------------------------------------------------------------------

@dataclass
class Answer:
    status: int            # 0: no HTTP answer at all
    body: str
    headers: dict[str, str]
    error: str = ""


class WebLagsight:
    def __init__(self, binary: Path, work_dir: Path, bootstrap: str, web_config: dict | str):
        self.work_dir = work_dir
        self.port = free_loopback_port()
        self.config_file = work_dir / "lagsight.yaml"
        self.web_config_file = work_dir / "web.yml"
        self.log_file = work_dir / "lagsight.log"
        self.config_file.write_text(yaml.safe_dump(lagsight_config(bootstrap)))
        self.write_web_config(web_config)
        self.binary = binary
        self.process: subprocess.Popen | None = None

    def write_web_config(self, web_config: dict | str) -> None:
        text = web_config if isinstance(web_config, str) else yaml.safe_dump(web_config)
        # Written beside and renamed, as editors and Kubernetes do: never read half-written.
        staging = self.web_config_file.with_suffix(".tmp")
        staging.write_text(text)
        staging.replace(self.web_config_file)

    def start(self, ready: Callable[[], bool]) -> WebLagsight:
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                [str(self.binary), f"--config.file={self.config_file}",
                 f"--web.config.file={self.web_config_file}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=debug"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def up() -> bool:
            assert self.process.poll() is None, (
                f"lagsight exited with {self.process.returncode}: {self.log()[-2000:]}")
            return ready()
        wait_until(up, START_TIMEOUT_SECONDS, "lagsight to answer over its web config")
        return self

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=15)
        return self.process.returncode

    def url(self, path: str, scheme: str = "https") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"


@pytest.fixture
def start_web(lagsight_binary: Path, kafka_broker, tmp_path: Path) -> Iterator[Callable]:
    started: list[WebLagsight] = []

    def start(web_config: dict | str, ready: Callable[[WebLagsight], bool]) -> WebLagsight:
        work_dir = tmp_path / f"lagsight-{len(started)}"
        work_dir.mkdir()
        lagsight = WebLagsight(lagsight_binary, work_dir, kafka_broker.bootstrap, web_config)
        started.append(lagsight)
        return lagsight.start(lambda: ready(lagsight))

    yield start
    codes = [lagsight.stop() for lagsight in started]
    assert all(code == 0 for code in codes), f"exit codes after SIGTERM: {codes}"


def python_get(url: str, ca: Path | None = None, client: Certificate | None = None,
               auth: tuple[str, str] | None = None) -> Answer:
    """GET with Python's ssl and urllib; certificate and host name verified against ``ca``."""
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context(cafile=str(ca) if ca else None)
        if client:
            context.load_cert_chain(str(client.cert), str(client.key))
    request = urllib.request.Request(url)
    if auth:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS,
                                    context=context) as response:
            return Answer(response.status, response.read().decode(), dict(response.headers))
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.read().decode(errors="replace"), dict(error.headers))
    except (urllib.error.URLError, ssl.SSLError, ConnectionError, TimeoutError) as error:
        return Answer(0, "", {}, error=repr(error))


def curl(*args: str) -> subprocess.CompletedProcess:
    """curl printing the status code last; exit code non-zero when no HTTP answer came."""
    return subprocess.run(["curl", "--silent", "--show-error", "--max-time", "20",
                           "--write-out", "\n%{http_code}", *args],
                          capture_output=True, text=True, timeout=60)


def curl_status(result: subprocess.CompletedProcess) -> int:
    return int(result.stdout.rsplit("\n", 1)[-1])


def s_client(port: int, *args: str) -> subprocess.CompletedProcess:
    """openssl s_client: handshake, one request, and its verdict on the server certificate."""
    return subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
         "-verify_return_error", "-ign_eof", *args],
        input="GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        capture_output=True, text=True, timeout=60)


def tls_config(pki: Pki, **extra) -> dict:
    return {"tls_server_config": {"cert_file": str(pki.server.cert),
                                  "key_file": str(pki.server.key), **extra}}


def hash_password(password: str, prefix: bytes = b"2b", cost: int = 10) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(cost, prefix)).decode()


# --- TLS -----------------------------------------------------------------------------------------

def test_tls_serves_real_metrics_to_python_curl_and_openssl_that_trust_its_ca(start_web, pki):
    lagsight = start_web(tls_config(pki),
                         lambda l: python_get(l.url("/readyz"), pki.ca.cert).status == 200)

    answer = python_get(lagsight.url("/metrics"), pki.ca.cert)
    assert answer.status == 200, answer
    assert 'lagsight_kafka_up{kafka_cluster="local"} 1' in answer.body

    result = curl("--cacert", str(pki.ca.cert), lagsight.url("/metrics"))
    assert result.returncode == 0, result.stderr
    assert curl_status(result) == 200
    assert "lagsight_kafka_group_info" in result.stdout or "lagsight_kafka_up" in result.stdout

    handshake = s_client(lagsight.port, "-CAfile", str(pki.ca.cert))
    assert handshake.returncode == 0, handshake.stderr
    assert "Verify return code: 0 (ok)" in handshake.stdout
    assert "HTTP/1.1 200 OK" in handshake.stdout
    # TLS 1.2 clients are served by default (the floor, as with exporter-toolkit).
    assert s_client(lagsight.port, "-CAfile", str(pki.ca.cert), "-tls1_2").returncode == 0


def test_clients_that_do_not_trust_the_certificate_are_refused(start_web, pki):
    lagsight = start_web(tls_config(pki),
                         lambda l: python_get(l.url("/healthz"), pki.ca.cert).status == 200)

    answer = python_get(lagsight.url("/metrics"), pki.other_ca.cert)
    assert answer.status == 0 and "CERTIFICATE_VERIFY_FAILED" in answer.error, answer

    result = curl("--cacert", str(pki.other_ca.cert), lagsight.url("/metrics"))
    assert result.returncode == 60, result  # curl: peer certificate cannot be authenticated

    handshake = s_client(lagsight.port, "-CAfile", str(pki.other_ca.cert))
    assert handshake.returncode != 0
    assert "Verify return code: 0 (ok)" not in handshake.stdout


def test_plain_http_to_the_tls_listener_gets_a_400_that_says_why(start_web, pki):
    lagsight = start_web(tls_config(pki),
                         lambda l: python_get(l.url("/healthz"), pki.ca.cert).status == 200)

    answer = python_get(lagsight.url("/metrics", scheme="http"))
    assert answer.status == 400
    assert answer.body == "Client sent an HTTP request to an HTTPS server.\n"
    result = curl(lagsight.url("/metrics", scheme="http"))
    assert curl_status(result) == 400
    # The listener is still fine afterwards.
    assert python_get(lagsight.url("/healthz"), pki.ca.cert).status == 200


def test_min_version_tls13_refuses_tls12_clients(start_web, pki):
    lagsight = start_web(tls_config(pki, min_version="TLS13"),
                         lambda l: python_get(l.url("/healthz"), pki.ca.cert).status == 200)
    assert s_client(lagsight.port, "-CAfile", str(pki.ca.cert), "-tls1_3").returncode == 0
    refused = s_client(lagsight.port, "-CAfile", str(pki.ca.cert), "-tls1_2")
    assert refused.returncode != 0
    assert "HTTP/1.1 200" not in refused.stdout


def test_required_client_certificates_are_verified_against_client_ca_file(start_web, pki):
    config = tls_config(pki, client_auth_type="RequireAndVerifyClientCert",
                        client_ca_file=str(pki.client_ca.cert))
    lagsight = start_web(config, lambda l: python_get(l.url("/healthz"), pki.ca.cert,
                                                       client=pki.client).status == 200)

    assert python_get(lagsight.url("/metrics"), pki.ca.cert, client=pki.client).status == 200
    without = python_get(lagsight.url("/metrics"), pki.ca.cert)
    assert without.status == 0, without
    stranger = python_get(lagsight.url("/metrics"), pki.ca.cert, client=pki.stranger)
    assert stranger.status == 0, stranger

    base = ["--cacert", str(pki.ca.cert), lagsight.url("/metrics")]
    with_cert = curl("--cert", str(pki.client.cert), "--key", str(pki.client.key), *base)
    assert with_cert.returncode == 0 and curl_status(with_cert) == 200, with_cert.stderr
    assert curl(*base).returncode != 0
    assert curl("--cert", str(pki.stranger.cert), "--key", str(pki.stranger.key),
                *base).returncode != 0

    handshake = s_client(lagsight.port, "-CAfile", str(pki.ca.cert),
                         "-cert", str(pki.client.cert), "-key", str(pki.client.key))
    assert "HTTP/1.1 200 OK" in handshake.stdout, handshake.stdout + handshake.stderr
    refused = s_client(lagsight.port, "-CAfile", str(pki.ca.cert))
    assert "HTTP/1.1 200" not in refused.stdout


# --- basic auth ----------------------------------------------------------------------------------

def test_basic_auth_guards_every_path_with_bcrypt_hashes(start_web):
    users = {"prometheus": hash_password("scrape-secret"),
             "grafana": hash_password("other secret", prefix=b"2a")}
    prometheus = ("prometheus", "scrape-secret")
    lagsight = start_web({"basic_auth_users": users},
                         lambda l: python_get(l.url("/readyz", "http"),
                                              auth=prometheus).status == 200)

    for path in ("/metrics", "/", "/healthz", "/readyz"):
        assert python_get(lagsight.url(path, "http"), auth=prometheus).status == 200, path
        missing = python_get(lagsight.url(path, "http"))
        assert missing.status == 401, path
        assert missing.headers.get("WWW-Authenticate") == 'Basic realm="lagsight"'
    assert python_get(lagsight.url("/metrics", "http"),
                      auth=("grafana", "other secret")).status == 200
    for wrong in [("prometheus", "scrape-secreT"), ("prometheus", ""), ("grafana", "scrape-secret"),
                  ("nobody", "scrape-secret")]:
        assert python_get(lagsight.url("/metrics", "http"), auth=wrong).status == 401, wrong

    assert curl_status(curl("-u", "prometheus:scrape-secret", lagsight.url("/metrics", "http"))) == 200
    assert curl_status(curl("-u", "prometheus:wrong", lagsight.url("/metrics", "http"))) == 401
    assert curl_status(curl(lagsight.url("/metrics", "http"))) == 401


def test_tls_and_basic_auth_together_and_cached_scrapes_are_cheap(start_web, pki):
    credentials = ("prometheus", "scrape-secret")
    config = {**tls_config(pki), "basic_auth_users": {"prometheus": hash_password(credentials[1])}}
    lagsight = start_web(config, lambda l: python_get(l.url("/readyz"), pki.ca.cert,
                                                       auth=credentials).status == 200)
    url = lagsight.url("/healthz")

    def timed(auth: tuple[str, str]) -> float:
        started = time.perf_counter()
        assert python_get(url, pki.ca.cert, auth=auth).status in (200, 401)
        return time.perf_counter() - started

    # Wrong passwords are checked in full (bcrypt, cost 10), right ones come from the cache.
    wrong = sorted(timed(("prometheus", f"wrong-{i}")) for i in range(5))
    cached = sorted(timed(credentials) for _ in range(20))
    print(f"\nbcrypt cost 10 over TLS, per request: wrong password median "
          f"{wrong[2] * 1000:.1f} ms, cached right password median {cached[10] * 1000:.1f} ms")
    assert cached[10] < wrong[2], (cached, wrong)
    result = curl("--cacert", str(pki.ca.cert), "-u", "prometheus:scrape-secret",
                  lagsight.url("/metrics"))
    assert curl_status(result) == 200 and "lagsight_kafka_up" in result.stdout
    assert curl_status(curl("--cacert", str(pki.ca.cert), lagsight.url("/metrics"))) == 401


# --- changes and errors --------------------------------------------------------------------------

def test_a_changed_web_config_applies_to_new_connections_and_a_bad_one_is_ignored(start_web, pki):
    lagsight = start_web({}, lambda l: python_get(l.url("/healthz", "http")).status == 200)

    lagsight.write_web_config({"basic_auth_users": {"alice": hash_password("pw", cost=4)}})
    wait_until(lambda: python_get(lagsight.url("/healthz", "http")).status == 401, 10,
               "basic auth to apply without a restart")
    assert python_get(lagsight.url("/healthz", "http"), auth=("alice", "pw")).status == 200

    lagsight.write_web_config("basic_auth_users:\n  alice: not-a-hash\n")
    time.sleep(0.5)
    assert python_get(lagsight.url("/healthz", "http")).status == 401
    assert python_get(lagsight.url("/healthz", "http"), auth=("alice", "pw")).status == 200
    wait_until(lambda: "web config: keeping the running TLS and authentication settings" in
               lagsight.log() and "not a bcrypt hash" in lagsight.log(), 10, "the error logged")

    lagsight.write_web_config(tls_config(pki))
    wait_until(lambda: python_get(lagsight.url("/healthz"), pki.ca.cert).status == 200, 10,
               "TLS to apply without a restart")


def test_a_web_config_truncated_in_place_keeps_basic_auth_until_a_valid_one_replaces_it(start_web):
    # An editor that saves in place truncates first: an empty web config used to mean plain HTTP
    # without authentication, so every scrape in that window went through without credentials.
    lagsight = start_web({"basic_auth_users": {"alice": hash_password("pw", cost=4)}},
                         lambda l: python_get(l.url("/healthz", "http")).status == 401)
    empty_error = (f"{lagsight.web_config_file}: the web configuration is empty (or only "
                   f"comments); for plain HTTP without authentication, leave out --web.config.file")
    kept = "web config: keeping the running TLS and authentication settings: " + empty_error

    for damaged, times_logged in (("", 1), ("# being rewritten\n", 2)):
        with lagsight.web_config_file.open("w") as file:  # truncates in place, as such a save does
            file.write(damaged)
        # The file is checked when a connection opens: each poll opens one.
        wait_until(lambda: python_get(lagsight.url("/healthz", "http")).status == 401 and
                   lagsight.log().count(kept) >= times_logged, 10,
                   f"the error about {damaged!r} logged")
        for path in ("/metrics", "/healthz", "/"):
            assert python_get(lagsight.url(path, "http")).status == 401, (damaged, path)
        assert python_get(lagsight.url("/healthz", "http"), auth=("alice", "pw")).status == 200

    lagsight.write_web_config({"basic_auth_users": {"bob": hash_password("pw2", cost=4)}})
    wait_until(lambda: python_get(lagsight.url("/healthz", "http"),
                                  auth=("bob", "pw2")).status == 200, 10, "the valid file to apply")
    assert python_get(lagsight.url("/healthz", "http"), auth=("alice", "pw")).status == 401
    assert python_get(lagsight.url("/healthz", "http")).status == 401


def run_check(binary: Path, tmp_path: Path, web_config: str) -> subprocess.CompletedProcess:
    config = tmp_path / "lagsight.yaml"
    config.write_text(yaml.safe_dump(lagsight_config("127.0.0.1:1")))
    web = tmp_path / "web.yml"
    web.write_text(web_config)
    return subprocess.run([str(binary), f"--config.file={config}", f"--web.config.file={web}",
                           "--config.check"], capture_output=True, text=True, timeout=30)


def test_bad_web_configs_are_clear_errors_at_check_and_at_start(lagsight_binary, tmp_path, pki):
    web = tmp_path / "web.yml"
    # A FIFO as a certificate: opening it used to block (at start, or on the server's thread at a
    # reload) until something wrote to it.
    fifo = tmp_path / "cert.fifo"
    os.mkfifo(fifo)
    result = run_check(lagsight_binary, tmp_path,
                       f"tls_server_config:\n  cert_file: {fifo}\n  key_file: {fifo}\n")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{web}:2: tls_server_config.cert_file: cannot read \"{fifo}\": not a regular file "
        f"(it is a FIFO)")

    for empty in ("", "# nothing here yet\n"):
        result = run_check(lagsight_binary, tmp_path, empty)
        assert result.returncode == 1, empty
        assert result.stderr.strip() == (
            f"{web}: the web configuration is empty (or only comments); for plain HTTP without "
            f"authentication, leave out --web.config.file")

    result = run_check(lagsight_binary, tmp_path, "tls_server_config:\n  cert_fil: x\n")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{web}:2: tls_server_config.cert_fil: unknown key (known keys: cert_file, key_file, "
        f"client_auth_type, client_ca_file, min_version, max_version)")

    result = run_check(lagsight_binary, tmp_path,
                       "tls_server_config:\n  cert_file: absent.crt\n  key_file: absent.key\n")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{web}:2: tls_server_config.cert_file: cannot read \"{tmp_path}/absent.crt\": "
        f"No such file or directory")

    # A key that is not the certificate's.
    result = run_check(lagsight_binary, tmp_path,
                       f"tls_server_config:\n  cert_file: {pki.server.cert}\n"
                       f"  key_file: {pki.client.key}\n")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{web}:3: tls_server_config.key_file: the private key \"{pki.client.key}\" does not "
        f"belong to the certificate \"{pki.server.cert}\"")

    good = run_check(lagsight_binary, tmp_path,
                     f"tls_server_config:\n  cert_file: {pki.server.cert}\n"
                     f"  key_file: {pki.server.key}\n")
    assert good.returncode == 0, good.stderr
    assert f"{web}: valid" in good.stdout

    # The daemon itself refuses to start with a bad file, before serving anything.
    web.write_text("basic_auth_users:\n  alice: plaintext\n")
    config = tmp_path / "lagsight.yaml"
    port = free_loopback_port()
    started = subprocess.run([str(lagsight_binary), f"--config.file={config}",
                              f"--web.config.file={web}",
                              f"--web.listen-address=127.0.0.1:{port}"],
                             capture_output=True, text=True, timeout=30, env=dict(os.environ))
    assert started.returncode == 1
    assert f"{web}:2: basic_auth_users.alice: not a bcrypt hash" in started.stderr + started.stdout
