"""lagsight against secured Kafka brokers: SASL_SSL with SCRAM-SHA-512 and PLAIN, mTLS, and ACLs that grant
it exactly what the README lists (Describe and DescribeConfigs on the cluster, Read on topics,
Describe on groups) and nothing more.

Two real brokers serve the whole module, with StandardAuthorizer and no ACL granting anything by
default:

- Kafka 4.1.1 (the harness's release): a SASL_SSL listener (SCRAM-SHA-512 and PLAIN) and an SSL
  listener that requires a client certificate (mTLS).
- Kafka 3.9.1: a SASL_SSL listener (SCRAM-SHA-512). librdkafka before 2.6.1 (Debian 12 ships
  2.0.2) sends a SCRAM message that Kafka 4 brokers refuse as invalid credentials, so SCRAM is
  proven here and its refusal by 4.1.1 is pinned, with lagsight's explanation.

Both keep the harness's PLAINTEXT listener, whose principal (ANONYMOUS) is the only super user:
the test makes topics, groups and ACLs there, and Kafka's own tools read the ground truth there.
The principals lagsight runs as are ``User:lagsight`` (SCRAM or PLAIN) and ``User:CN=<name>`` (client
certificates; Kafka's default SSL principal is the certificate's subject).

Over SSL (mTLS) and SASL/PLAIN lagsight reads committed offsets with its own batched OffsetFetch
client, in TLS with the same certificates (``batched_offset_fetch``, on by default), authenticated
with PLAIN on the SASL listener; over SCRAM, with librdkafka.

On each broker: topic ``orders`` (3 partitions, records an hour old) with the simple group ``app``;
topic ``secret`` and group ``hidden``, on which lagsight's principals are explicitly denied
Describe; and on 4.1.1 the classic group ``member``, a live consumer assigned both topics.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, ResourcePatternType, ResourceType)

import kafka_broker as kafka
import promtext
import workload
from conftest import LagsightProcess, _register_log_for_failures, wait_until
from kafka_broker import KafkaBroker

# Checks each partition's committed offset or lag in seconds: the opt-in families.
pytestmark = pytest.mark.partition_series

PASSWORD = "lagsight-scram-password"
SCRAM_PRINCIPAL = "User:lagsight"
MTLS_NAME = "lagsight-mtls"
RECORD_AGE_SECONDS = 3600
ORDERS_RECORDS = [10, 20, 30]
APP_COMMITS = {0: 4, 1: 5, 2: 6}
CLUSTER_RESOURCE = (ResourceType.BROKER, "kafka-cluster")

# The README's ACLs, as (resource type, name, operation). Read on topics implies Describe on them
# (Kafka's rule), and is what lag in seconds needs to read a record's timestamp.
MINIMAL_ACLS = {
    "cluster-describe": (*CLUSTER_RESOURCE, AclOperation.DESCRIBE),
    "cluster-describe-configs": (*CLUSTER_RESOURCE, AclOperation.DESCRIBE_CONFIGS),
    "topics-read": (ResourceType.TOPIC, "*", AclOperation.READ),
    "groups-describe": (ResourceType.GROUP, "*", AclOperation.DESCRIBE),
}
# What every principal of this module is refused, to see how lagsight reports a denial.
DENIED = [(ResourceType.GROUP, "hidden", AclOperation.DESCRIBE),
          (ResourceType.TOPIC, "secret", AclOperation.DESCRIBE)]


# ----------------------------------------------------------------------------------------------
# Certificates, brokers and ACLs


@dataclass(frozen=True)
class Certificates:
    """A throwaway CA, the brokers' key and certificate (one PEM file), and client certificates."""
    directory: Path
    ca: Path
    broker_keystore: Path

    def client(self, name: str) -> tuple[Path, Path]:
        """A client certificate and key with subject CN=<name>, signed by the CA (made once)."""
        cert, key = self.directory / f"{name}.pem", self.directory / f"{name}.key"
        if not cert.exists():
            _issue(self.directory, name, cert, key, extensions=None)
        return cert, key


def _openssl(directory: Path, *args: str) -> None:
    result = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True,
                            timeout=30, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}:\n{result.stderr}")


def _issue(directory: Path, common_name: str, cert: Path, key: Path,
           extensions: str | None) -> None:
    """A P-256 key (PKCS#8, unencrypted: what Kafka's PEM keystore and librdkafka both read) and
    a certificate for it signed by the CA in ``directory``."""
    request = directory / f"{common_name}.csr"
    _openssl(directory, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", str(key), "-out", str(request), "-subj", f"/CN={common_name}")
    extension_args = []
    if extensions is not None:
        extension_file = directory / f"{common_name}.ext"
        extension_file.write_text(extensions + "\n")
        extension_args = ["-extfile", str(extension_file)]
    _openssl(directory, "x509", "-req", "-in", str(request), "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-out", str(cert), *extension_args)


def make_certificates(directory: Path) -> Certificates:
    _openssl(directory, "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=lagsight test CA")
    cert, key = directory / "broker.pem", directory / "broker.key"
    # librdkafka checks the broker's name against the address it dialled (127.0.0.1).
    _issue(directory, "localhost", cert, key,
           extensions="subjectAltName=IP:127.0.0.1,DNS:localhost")
    keystore = directory / "broker-keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    return Certificates(directory, directory / "ca.pem", keystore)


def secured_broker(data_dir: Path, certificates: Certificates, kafka_version: str | None,
                   mtls: bool) -> KafkaBroker:
    listeners = {"SASL_SSL": "SASL_SSL"}
    if mtls:
        listeners["MTLS"] = "SSL"
    properties = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # The controller listener and the harness's PLAINTEXT listener authenticate nobody: their
        # ANONYMOUS principal must be the super user for KRaft's own requests, and is the test's.
        "super.users": "User:ANONYMOUS",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certificates.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    }
    if mtls:  # the newest broker also takes PLAIN on the same listener, as User:lagsight
        properties["sasl.enabled.mechanisms"] = "SCRAM-SHA-512,PLAIN"
        properties["listener.name.sasl_ssl.plain.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_lagsight="{PASSWORD}";')
    return KafkaBroker(data_dir, extra_properties=properties, extra_listeners=listeners,
                       scram_users={"lagsight": PASSWORD}, kafka_version=kafka_version)


def acl(principal: str, resource: tuple, permission: AclPermissionType) -> AclBinding:
    resource_type, name, operation = resource
    return AclBinding(resource_type, name, ResourcePatternType.LITERAL, principal, "*", operation,
                      permission)


def grant(broker: KafkaBroker, principal: str, allowed: list[tuple]) -> None:
    """Gives ``principal`` the ``allowed`` ACLs plus the module's denials, as the super user, and
    returns once the broker lists them all."""
    bindings = ([acl(principal, resource, AclPermissionType.ALLOW) for resource in allowed]
                + [acl(principal, resource, AclPermissionType.DENY) for resource in DENIED])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_acls(bindings).values():
        future.result(timeout=30)
    wait_until(lambda: set(bindings) <= set(acls_of(broker, principal)), 30,
               f"the ACLs of {principal} to be listed")


def acls_of(broker: KafkaBroker, principal: str) -> list[AclBinding]:
    """Every ACL the broker holds for ``principal`` (asked as the super user)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    query = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, principal, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    return admin.describe_acls(query).result(timeout=30)


def denied_requests(broker: KafkaBroker, principal: str) -> set[tuple[str, str, str]]:
    """(operation, resource, request) of every request of ``principal`` that the broker's
    authorizer refused, from its log (``kafka.authorizer.logger`` logs each denial at INFO)."""
    pattern = re.compile(rf"Principal = {re.escape(principal)} is Denied operation = (\S+) "
                         rf"from host = \S+ on resource = (\S+) for request = (\S+)")
    return {match.groups() for match in pattern.finditer(broker.log_file.read_text())}


@dataclass
class SecuredCluster:
    broker: KafkaBroker
    certificates: Certificates
    groups: set[str]  # every group the module made on this broker


def prepare(broker: KafkaBroker) -> set[str]:
    """Topics, records and groups of the module, made as the super user; returns the groups."""
    bootstrap = broker.bootstrap
    workload.create_topic(bootstrap, "orders", len(ORDERS_RECORDS))
    workload.create_topic(bootstrap, "secret", 1)
    an_hour_ago_ms = int(time.time() * 1000) - RECORD_AGE_SECONDS * 1000
    workload.produce(bootstrap, "orders", ORDERS_RECORDS, timestamp_ms=an_hour_ago_ms)
    workload.produce(bootstrap, "secret", [7], timestamp_ms=an_hour_ago_ms)
    workload.commit_without_joining(
        bootstrap, "app", {("orders", p): offset for p, offset in APP_COMMITS.items()})
    workload.commit_without_joining(bootstrap, "hidden", {("orders", 0): 1, ("secret", 0): 2})
    return {"app", "hidden"}


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SecuredCluster]]:
    """Both secured brokers, with the module's data and ACLs."""
    certificates = make_certificates(tmp_path_factory.mktemp("tls"))
    brokers = {
        "4.1.1": secured_broker(tmp_path_factory.mktemp("kafka-4.1.1"), certificates, None,
                                mtls=True),
        "3.9.1": secured_broker(tmp_path_factory.mktemp("kafka-3.9.1"), certificates, "3.9.1",
                                mtls=False),
    }
    member: workload.SubscribedConsumer | None = None
    try:
        # One after the other, from this thread: the harness ties each broker's life to the
        # thread that started it, so a pool's worker thread exiting would stop it.
        for broker in brokers.values():
            broker.start()
        result = {version: SecuredCluster(broker, certificates, prepare(broker))
                  for version, broker in brokers.items()}
        newest = result["4.1.1"]
        # A classic group with a member assigned both topics: the only place Kafka still names a
        # topic the principal may not Describe.
        member = workload.SubscribedConsumer(newest.broker.bootstrap, "member",
                                             ["orders", "secret"], commit_at=3).start()
        newest.groups.add("member")
        grant(result["3.9.1"].broker, SCRAM_PRINCIPAL, list(MINIMAL_ACLS.values()))
        grant(newest.broker, SCRAM_PRINCIPAL, list(MINIMAL_ACLS.values()))
        grant(newest.broker, f"User:CN={MTLS_NAME}", list(MINIMAL_ACLS.values()))
        yield result
    finally:
        if member is not None:
            member.stop()
        for broker in brokers.values():
            broker.stop()


@pytest.fixture
def cluster_logs(clusters: dict[str, SecuredCluster], request: pytest.FixtureRequest
                 ) -> dict[str, SecuredCluster]:
    for version, cluster in clusters.items():
        _register_log_for_failures(request, f"kafka {version} broker log", cluster.broker.log_file)
    return clusters


def scram_properties(certificates: Certificates, password: str = PASSWORD) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "lagsight", "sasl.password": password,
            "ssl.ca.location": str(certificates.ca)}


def plain_properties(certificates: Certificates) -> dict[str, str]:
    """SASL_SSL with PLAIN: what Confluent Cloud's API keys use."""
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
            "sasl.username": "lagsight", "sasl.password": PASSWORD,
            "ssl.ca.location": str(certificates.ca)}


def mtls_properties(certificates: Certificates, name: str = MTLS_NAME) -> dict[str, str]:
    cert, key = certificates.client(name)
    return {"security.protocol": "SSL", "ssl.ca.location": str(certificates.ca),
            "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}


# ----------------------------------------------------------------------------------------------
# Reading lagsight


def value(metrics: promtext.Samples, name: str, **labels: str) -> float | None:
    series = promtext.select(metrics, name, kafka_cluster="local", **labels)
    assert len(series) <= 1, f"{name}{labels} matches several series: {series}"
    return next(iter(series.values()), None)


def by_partition(metrics: promtext.Samples, name: str, **labels: str) -> dict[tuple[str, int],
                                                                              float]:
    return {(dict(key)["topic"], int(dict(key)["partition"])): number
            for key, number in promtext.select(metrics, name, kafka_cluster="local",
                                               **labels).items()}


def exported_groups(metrics: promtext.Samples) -> set[str]:
    return {dict(key)["group"]
            for key in promtext.select(metrics, "lagsight_kafka_group_info", kafka_cluster="local")}


def warnings_in(log: Path) -> list[str]:
    """The messages of lagsight's warning lines (partial errors, failed polls), unescaped."""
    return [match.group(1).replace('\\"', '"')
            for match in re.finditer(r'level=warning msg="((?:[^"\\]|\\.)*)"', log.read_text())]


def assert_same_as_kafka_tools(metrics: promtext.Samples, broker: KafkaBroker) -> None:
    """Group ``app``'s committed offsets and lag equal what Kafka's consumer-groups tool reports as
    the super user, its lag in seconds was read from the records, and the retention from the
    broker's config: everything lagsight reads worked with the minimal ACLs."""
    truth = [row for row in kafka.consumer_groups_describe_all(broker.bootstrap)
             if row.group == "app"]
    assert {(row.topic, row.partition): row.current_offset for row in truth} == {
        ("orders", p): offset for p, offset in APP_COMMITS.items()}, "the tool disagrees"
    assert by_partition(metrics, "lagsight_kafka_group_committed_offset", group="app") == {
        (row.topic, row.partition): row.current_offset for row in truth}
    assert by_partition(metrics, "lagsight_kafka_group_lag_records", group="app") == {
        (row.topic, row.partition): row.lag for row in truth}
    ages = by_partition(metrics, "lagsight_kafka_group_lag_seconds", group="app",
                        method="record_timestamp")
    assert set(ages) == {("orders", p) for p in APP_COMMITS}, ages
    assert all(RECORD_AGE_SECONDS - 5 < age < RECORD_AGE_SECONDS + 120 for age in ages.values())
    assert value(metrics, "lagsight_kafka_offsets_retention_seconds") == 7 * 24 * 3600


def start(start_lagsight: Callable[..., LagsightProcess], bootstrap: str,
          properties: dict[str, str], groups: dict | None = None) -> LagsightProcess:
    return start_lagsight(bootstrap, groups=groups, properties=properties)


def settled(lagsight: LagsightProcess, description: str,
            condition: Callable[[promtext.Samples], bool]) -> promtext.Samples:
    """A scrape of a poll that started after the condition first held (so it holds steadily)."""
    lagsight.wait_for(condition, description)
    metrics = lagsight.wait_for_fresh_poll(time.time())
    assert condition(metrics), f"{description} held once, then not"
    return metrics


# ----------------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("kafka_version, listener, mechanism",
                         [("3.9.1", "SASL_SSL", "SCRAM-SHA-512"), ("4.1.1", "MTLS", None),
                          ("4.1.1", "SASL_SSL", "PLAIN")],
                         ids=["sasl-ssl-scram-sha-512-kafka-3.9.1", "mtls-kafka-4.1.1",
                              "sasl-ssl-plain-kafka-4.1.1"])
def test_minimal_acls_are_enough(cluster_logs, start_lagsight, kafka_version, listener,
                                 mechanism):
    """With only the README's ACLs, over SASL_SSL + SCRAM-SHA-512, SASL_SSL + PLAIN and mTLS,
    lagsight polls without a single partial error and reports what Kafka's own tool reports."""
    cluster = cluster_logs[kafka_version]
    properties = {"SCRAM-SHA-512": scram_properties, "PLAIN": plain_properties,
                  None: mtls_properties}[mechanism](cluster.certificates)
    # Only the group the principal may read: the denied ones are the next test's subject.
    lagsight = start(start_lagsight, cluster.broker.listener_bootstrap(listener), properties,
                     groups={"allow": ["app"]})
    metrics = settled(lagsight, "lag in seconds from record timestamps",
                      lambda m: len(by_partition(m, "lagsight_kafka_group_lag_seconds",
                                                 group="app", method="record_timestamp")) == 3)
    assert value(metrics, "lagsight_kafka_up") == 1
    assert value(metrics, "lagsight_kafka_poll_partial_errors") == 0, warnings_in(lagsight.log_file)
    assert_same_as_kafka_tools(metrics, cluster.broker)
    # Over mTLS and SASL/PLAIN the committed offsets came from lagsight's own batched OffsetFetch
    # (a poll in which it answered and nothing failed), in TLS, authenticated with PLAIN on the
    # SASL listener; SCRAM stays with librdkafka.
    log = lagsight.log_file.read_text()
    if mechanism == "SCRAM-SHA-512":
        assert ("own Kafka clients do not connect (SASL mechanism SCRAM-SHA-512 (lagsight's own "
                "clients speak PLAIN only)): KIP-848 members, share and streams groups are not "
                "read, classic groups are described through librdkafka, and committed offsets "
                "are read one request per group") in log, log
    else:
        assert "committed offsets read with batched OffsetFetch requests (KIP-709)" in log, log


def test_scram_to_kafka_4_is_refused_for_old_librdkafka_and_said_so(cluster_logs, start_lagsight):
    """Kafka 4.1.1 refuses the SCRAM of librdkafka < 2.6.1 with the right password: lagsight must
    say so in the error, not only "timed out". With a fixed librdkafka it must simply work."""
    cluster = cluster_logs["4.1.1"]
    lagsight = start(start_lagsight, cluster.broker.listener_bootstrap("SASL_SSL"),
                     scram_properties(cluster.certificates), groups={"allow": ["app"]})
    metrics = lagsight.wait_for(lambda m: (value(m, "lagsight_kafka_polls_total") or 0) >= 1,
                                "a first poll")
    if value(metrics, "lagsight_kafka_up") == 1:
        assert_same_as_kafka_tools(
            settled(lagsight, "lag in seconds", lambda m: len(by_partition(
                m, "lagsight_kafka_group_lag_seconds", group="app", method="record_timestamp"))
                == 3), cluster.broker)
        return
    failure = next(line for line in warnings_in(lagsight.log_file) if "poll failed" in line)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in failure, failure
    version = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+), which lagsight runs with, cannot "
                        r"authenticate with SCRAM to Kafka 4 brokers", failure)
    assert version is not None, failure
    assert tuple(int(part) for part in version.groups()) < (2, 6, 1)


def test_denied_group_and_topic_are_partial_errors(cluster_logs, start_lagsight):
    """A group and a topic the principal may not Describe are each named in a partial error (a
    counted series and a warning), never a silent hole, and the poll still succeeds."""
    cluster = cluster_logs["4.1.1"]
    # The super user sees what lagsight is denied: there is something to miss.
    truth = {(row.group, row.topic) for row in kafka.consumer_groups_describe_all(
        cluster.broker.bootstrap)}
    assert {("hidden", "orders"), ("hidden", "secret"), ("member", "secret")} <= truth
    lagsight = start(start_lagsight, cluster.broker.listener_bootstrap("MTLS"),
                     mtls_properties(cluster.certificates))
    # "hidden" is a simple group, so lagsight does not describe it (the listing says all a
    # description would): its denial shows where its offsets are read.
    expected = [
        'kafka cluster "local": reading committed offsets of group "hidden": '
        'FindCoordinator answered GROUP_AUTHORIZATION_FAILED (error code 30)',
        'kafka cluster "local": group "member" is assigned topic "secret", which the cluster\'s '
        'metadata does not show to lagsight (no Describe permission on it, or being created or '
        'deleted): the group\'s lag on it is not reported',
    ]
    metrics = settled(lagsight, "the two partial errors",
                      lambda m: value(m, "lagsight_kafka_poll_partial_errors") == len(expected))
    assert value(metrics, "lagsight_kafka_up") == 1
    assert sorted(set(warnings_in(lagsight.log_file))) == sorted(expected)
    # The rest is reported; the denied group is listed (Describe on the cluster) without lag.
    assert exported_groups(metrics) == cluster.groups
    assert set(by_partition(metrics, "lagsight_kafka_group_lag_records", group="app")) == {
        ("orders", p) for p in APP_COMMITS}
    assert by_partition(metrics, "lagsight_kafka_group_lag_records", group="hidden") == {}
    assert set(by_partition(metrics, "lagsight_kafka_group_lag_records", group="member")) == {
        ("orders", p) for p in APP_COMMITS}


def test_never_joins_or_commits(cluster_logs, start_lagsight):
    """After several polls reading record timestamps, Kafka lists no group but the module's, every
    committed offset is unchanged, the principal holds no Read on any group (what a join or a
    commit needs) and the broker refused it nothing but the module's two denials."""
    cluster = cluster_logs["4.1.1"]
    broker = cluster.broker
    principal = f"User:CN={MTLS_NAME}"
    committed_before = {(r.group, r.topic, r.partition): r.current_offset
                        for r in kafka.consumer_groups_describe_all(broker.bootstrap)}
    lagsight = start(start_lagsight, broker.listener_bootstrap("MTLS"),
                     mtls_properties(cluster.certificates))
    lagsight.wait_for(lambda m: (value(m, "lagsight_kafka_record_timestamp_fetches_total")
                                 or 0) > 0, "record timestamps read")
    for _ in range(3):
        lagsight.wait_for_fresh_poll(time.time())

    listed = {g.group for g in kafka.consumer_groups_list_with_state_and_type(broker.bootstrap)}
    assert listed == cluster.groups
    committed_after = {(r.group, r.topic, r.partition): r.current_offset
                       for r in kafka.consumer_groups_describe_all(broker.bootstrap)}
    assert committed_after == committed_before
    granted = acls_of(broker, principal)
    assert not [b for b in granted if b.restype == ResourceType.GROUP
                and b.operation in (AclOperation.READ, AclOperation.ALL)
                and b.permission_type == AclPermissionType.ALLOW], granted
    refused = {(operation, resource) for operation, resource, _ in
               denied_requests(broker, principal)}
    assert refused <= {("DESCRIBE", "Group:LITERAL:hidden"), ("DESCRIBE", "Topic:LITERAL:secret")}
    # The deliberate denial shows, so the authorizer log was read (the check above is not empty).
    assert ("DESCRIBE", "Group:LITERAL:hidden") in refused, refused


def test_wrong_password_is_down_with_the_reason(cluster_logs, start_lagsight):
    """A wrong SCRAM password: lagsight_kafka_up 0, a warning naming the authentication failure,
    and lagsight keeps running (and exits cleanly at teardown)."""
    cluster = cluster_logs["3.9.1"]
    lagsight = start(start_lagsight, cluster.broker.listener_bootstrap("SASL_SSL"),
                     scram_properties(cluster.certificates, password="not-the-password"))
    metrics = lagsight.wait_for(lambda m: (value(m, "lagsight_kafka_poll_failures_total")
                                           or 0) >= 2, "two failed polls")
    assert value(metrics, "lagsight_kafka_up") == 0
    failures = [line for line in warnings_in(lagsight.log_file) if "poll failed" in line]
    assert failures, "no poll failure was logged"
    assert ("SASL authentication error: Authentication failed during authentication due to "
            "invalid credentials with SASL mechanism SCRAM-SHA-512") in failures[0], failures[0]
    assert lagsight.running


def test_each_acl_of_the_minimal_set_is_needed(cluster_logs, start_lagsight):
    """One principal per README ACL, holding all the others: without that one, lagsight loses
    exactly what it is for (so the set is minimal), and says so, except where Kafka hides it."""
    cluster = cluster_logs["4.1.1"]
    broker = cluster.broker
    names = {dropped: f"lagsight-without-{dropped}" for dropped in MINIMAL_ACLS}
    for dropped, name in names.items():
        kept = [resource for key, resource in MINIMAL_ACLS.items() if key != dropped]
        if dropped == "topics-read":
            kept.append((ResourceType.TOPIC, "*", AclOperation.DESCRIBE))  # lag in records only
        grant(broker, f"User:CN={name}", kept)
    processes = {dropped: start(start_lagsight, broker.listener_bootstrap("MTLS"),
                                mtls_properties(cluster.certificates, name))
                 for dropped, name in names.items()}
    scraped = {dropped: lagsight.wait_for_fresh_poll(time.time())
               for dropped, lagsight in processes.items()}
    for dropped, metrics in scraped.items():
        assert value(metrics, "lagsight_kafka_up") == 1, dropped

    # Without Describe on the cluster, Kafka lists only the groups the principal may Describe:
    # "hidden" vanishes without any error. With it, "hidden" is listed and its denial reported.
    no_cluster = scraped["cluster-describe"]
    assert exported_groups(no_cluster) == cluster.groups - {"hidden"}
    assert not [w for w in warnings_in(processes["cluster-describe"].log_file) if "hidden" in w]

    no_configs = scraped["cluster-describe-configs"]
    assert value(no_configs, "lagsight_kafka_offsets_retention_seconds") is None
    assert any("reading broker config offsets.retention.minutes" in w and
               "Cluster authorization failed" in w
               for w in warnings_in(processes["cluster-describe-configs"].log_file))

    # Describe without Read: lag in records, but no record timestamp can be read.
    no_read = scraped["topics-read"]
    assert set(by_partition(no_read, "lagsight_kafka_group_lag_records", group="app")) == {
        ("orders", p) for p in APP_COMMITS}
    assert by_partition(no_read, "lagsight_kafka_group_lag_seconds", group="app",
                        method="record_timestamp") == {}
    assert any("record timestamp at orders/" in w and "Topic authorization failed" in w
               for w in warnings_in(processes["topics-read"].log_file))

    no_groups = scraped["groups-describe"]
    assert by_partition(no_groups, "lagsight_kafka_group_lag_records") == {}
    assert any('reading committed offsets of group "app": ' in w and
               "GROUP_AUTHORIZATION_FAILED" in w
               for w in warnings_in(processes["groups-describe"].log_file))
