"""helm/lagsight: `helm lint` and `helm template` with the real helm CLI, then the rendered
manifests checked field by field — the ConfigMap's config through `lagsight --config.check`,
the PrometheusRule against deploy/prometheus/lagsight-rules.yaml and `promtool check rules`.

No Kubernetes API server runs here, so the manifests are not validated by one (no kubeconform
schemas either: they are not in the package registries this project may use).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml
from deploy_tools import helm, lagsight_binary  # noqa: F401 (pytest fixtures)

REPO_ROOT = Path(__file__).resolve().parents[2]

CHART = REPO_ROOT / "helm" / "lagsight"
RULES = REPO_ROOT / "deploy" / "prometheus" / "lagsight-rules.yaml"

EVERYTHING = [
    "--set", "serviceMonitor.enabled=true",
    "--set", "serviceMonitor.labels.release=kube-prometheus-stack",
    "--set", "prometheusRule.enabled=true",
    "--set", "secretEnv.LAGSIGHT_KAFKA_PASSWORD.secretName=kafka-credentials",
    "--set", "secretEnv.LAGSIGHT_KAFKA_PASSWORD.key=password",
    "--set", "webConfig.existingSecret=lagsight-web",
    "--set", "webConfig.scheme=HTTPS",
]


def helm_run(helm: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HELM_CACHE_HOME": "/tmp/lagsight-helm-cache",
                               "HELM_CONFIG_HOME": "/tmp/lagsight-helm-config"})


def render(helm: str, *args: str) -> dict[str, dict]:
    result = helm_run(helm, "template", "monitoring", str(CHART), "--namespace", "observability",
                      *args)
    assert result.returncode == 0, result.stderr
    documents = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    by_kind = {}
    for doc in documents:
        for key in ("apiVersion", "kind", "metadata"):
            assert key in doc, f"{key} missing in {doc}"
        assert doc["kind"] not in by_kind, f"two {doc['kind']}s rendered"
        by_kind[doc["kind"]] = doc
    return by_kind


SHARDED = ["--set", "sharding.enabled=true", "--set", "sharding.shards=3"]


def test_helm_lint_passes_with_defaults_and_with_everything_on(helm: str):
    for extra in ([], EVERYTHING, EVERYTHING + SHARDED):
        result = helm_run(helm, "lint", "--strict", str(CHART), *extra)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "0 chart(s) failed" in result.stdout


def test_defaults_render_a_deployment_a_service_and_a_configmap_only(helm: str):
    assert set(render(helm)) == {"Deployment", "Service", "ConfigMap"}


def test_the_deployment_probes_runs_unprivileged_and_mounts_the_config(helm: str):
    manifests = render(helm, *EVERYTHING)
    pod = manifests["Deployment"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http",
                                                     "scheme": "HTTPS"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["ports"] == [{"name": "http", "containerPort": 9713, "protocol": "TCP"}]
    assert container["resources"]["requests"] == {"cpu": "50m", "memory": "64Mi"}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert "--config.file=/etc/lagsight/config/lagsight.yaml" in container["args"]
    assert "--web.config.file=/etc/lagsight/web/web.yml" in container["args"]
    assert container["env"] == [{"name": "LAGSIGHT_KAFKA_PASSWORD", "valueFrom": {
        "secretKeyRef": {"name": "kafka-credentials", "key": "password"}}}]
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == manifests["ConfigMap"]["metadata"]["name"]
    assert volumes["web-config"]["secret"]["secretName"] == "lagsight-web"
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert mounts == {"/etc/lagsight/config", "/etc/lagsight/web"}
    # The Service selects exactly the pods of this Deployment.
    selector = manifests["Service"]["spec"]["selector"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert manifests["Deployment"]["spec"]["selector"]["matchLabels"] == selector


def test_a_config_change_changes_the_checksum_that_rolls_the_pods(helm: str):
    def checksum(*args: str) -> str:
        pod = render(helm, *args)["Deployment"]["spec"]["template"]
        return pod["metadata"]["annotations"]["checksum/config"]
    assert checksum() == checksum()
    assert checksum() != checksum("--set", "config.kafka[0].poll_interval=30s")


def test_the_rendered_config_is_valid_for_lagsight(helm: str, lagsight_binary: Path,
                                                   tmp_path: Path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"config": {"kafka": [{
        "name": "prod", "bootstrap_servers": "kafka-0:9092,kafka-1:9092",
        "properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                       "sasl.username": "lagsight",
                       "sasl.password": "${LAGSIGHT_KAFKA_PASSWORD}"}}],
        "flink": [{"name": "flink", "rest_url": "http://jobmanager:8081",
                   "kafka_cluster": "prod"}]}}))
    for args in ([], ["-f", str(values)]):
        config_text = render(helm, *args)["ConfigMap"]["data"]["lagsight.yaml"]
        config = tmp_path / "lagsight.yaml"
        config.write_text(config_text)
        result = subprocess.run([str(lagsight_binary), f"--config.file={config}", "--config.check"],
                                capture_output=True, text=True, timeout=30,
                                env={**os.environ, "LAGSIGHT_KAFKA_PASSWORD": "x"})
        assert result.returncode == 0, (config_text, result.stderr)
    # ${VAR} reaches the file unexpanded: lagsight expands it from the Secret-backed env.
    assert "${LAGSIGHT_KAFKA_PASSWORD}" in config_text


def test_the_prometheus_rule_is_the_shipped_rules_file(helm: str, tmp_path: Path):
    rule = render(helm, *EVERYTHING)["PrometheusRule"]
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    shipped = yaml.safe_load(RULES.read_text())
    assert rule["spec"]["groups"] == shipped["groups"]
    # And the round trip through the chart still loads in Prometheus.
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found (Debian package prometheus)"
    extracted = tmp_path / "rules.yaml"
    extracted.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    result = subprocess.run([promtool, "check", "rules", str(extracted)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_links_its_runbook_under_the_configured_base(helm: str):
    """runbooks.baseUrl replaces the rules file's relative "docs/runbooks.md" in each alert's
    runbook_url, and nothing else; left empty, the links stay as the file has them."""
    shipped = yaml.safe_load(RULES.read_text())["groups"]
    shipped_alerts = [r for g in shipped for r in g["rules"] if "alert" in r]
    assert len(shipped_alerts) >= 10
    assert all(r["annotations"]["runbook_url"].startswith("docs/runbooks.md#runbook-")
               for r in shipped_alerts)
    base = "https://git.example.com/team/lagsight/-/blob/0123abc/docs/runbooks.md"
    for value in (base, base + "#"):
        rule = render(helm, *EVERYTHING, "--set", f"runbooks.baseUrl={value}")["PrometheusRule"]
        rendered = rule["spec"]["groups"]
        alerts = [r for g in rendered for r in g["rules"] if "alert" in r]
        assert len(alerts) == len(shipped_alerts)
        for alert, original in zip(alerts, shipped_alerts):
            url = original["annotations"]["runbook_url"]
            assert alert["annotations"]["runbook_url"] == base + url[len("docs/runbooks.md"):], \
                alert["alert"]
        # Everything but the links is the shipped file's.
        for alert in alerts:
            alert["annotations"]["runbook_url"] = "-"
        for original in shipped_alerts:
            original["annotations"]["runbook_url"] = "-"
        assert rendered == shipped
        shipped = yaml.safe_load(RULES.read_text())["groups"]
        shipped_alerts = [r for g in shipped for r in g["rules"] if "alert" in r]


def test_the_chart_reads_the_rules_file_itself_not_a_copy():
    link = CHART / "files" / "lagsight-rules.yaml"
    assert link.is_symlink() and link.resolve() == RULES.resolve()


def test_the_service_monitor_scrapes_as_job_lagsight(helm: str):
    manifests = render(helm, *EVERYTHING)
    monitor = manifests["ServiceMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "http" and endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "https"
    # Prometheus Operator takes the job label from this Service label: the rules want "lagsight".
    job_label = monitor["spec"]["jobLabel"]
    assert manifests["Service"]["metadata"]["labels"][job_label] == "lagsight"
    assert monitor["spec"]["selector"]["matchLabels"] == manifests["Service"]["spec"]["selector"]


def test_a_wrong_scheme_is_refused_with_a_clear_message(helm: str):
    result = helm_run(helm, "template", "x", str(CHART), "--set", "webConfig.scheme=ftp")
    assert result.returncode != 0
    assert 'webConfig.scheme must be HTTP or HTTPS, got "ftp"' in result.stderr


def test_sharded_mode_renders_a_statefulset_of_shards_behind_a_headless_service(helm: str):
    manifests = render(helm, *EVERYTHING, *SHARDED)
    assert set(manifests) == {"StatefulSet", "Service", "ConfigMap", "ServiceMonitor",
                              "PrometheusRule"}
    statefulset, service = manifests["StatefulSet"], manifests["Service"]
    assert statefulset["spec"]["replicas"] == 3
    assert statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert container["args"][-2:] == ["--shard=auto", "--total-shards=3"]
    assert {"name": "HOSTNAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in \
        container["env"]
    # Everything else of the pod is the Deployment's.
    deployment_pod = render(helm, *EVERYTHING)["Deployment"]["spec"]["template"]
    sharded_pod = statefulset["spec"]["template"]
    (plain,) = deployment_pod["spec"]["containers"]
    assert {k: v for k, v in container.items() if k not in ("args", "env")} == \
        {k: v for k, v in plain.items() if k not in ("args", "env")}
    assert sharded_pod["metadata"] == deployment_pod["metadata"]
    # The ServiceMonitor scrapes every shard through the one headless Service.
    monitor = manifests["ServiceMonitor"]
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert service["spec"]["selector"].items() <= sharded_pod["metadata"]["labels"].items()


def test_sharded_mode_refuses_a_shard_count_it_cannot_run(helm: str):
    for args, message in (
            (["--set", "sharding.shards=1"], "sharding.shards must be 2 to 1024, got 1"),
            (["--set", "replicaCount=2"], "replicaCount and sharding.enabled exclude each other")):
        result = helm_run(helm, "template", "x", str(CHART), "--set", "sharding.enabled=true",
                          *args)
        assert result.returncode != 0
        assert message in result.stderr, result.stderr


def test_a_sharded_pod_runs_as_the_shard_its_name_ends_with(helm: str, lagsight_binary: Path,
                                                             tmp_path: Path):
    """The rendered arguments and environment, given to the real binary as the kubelet would
    (the pod's name in HOSTNAME): the third pod says it is shard 2 of 3."""
    manifests = render(helm, *SHARDED)
    (container,) = manifests["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    config = tmp_path / "lagsight.yaml"
    config.write_text(manifests["ConfigMap"]["data"]["lagsight.yaml"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [arg.replace("/etc/lagsight/config/lagsight.yaml", str(config))
            .replace("--web.listen-address=:9713", f"--web.listen-address=127.0.0.1:{port}")
            for arg in container["args"]]
    pod_name = manifests["StatefulSet"]["metadata"]["name"] + "-2"
    process = subprocess.Popen([str(lagsight_binary), *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env={**os.environ, "HOSTNAME": pod_name})
    try:
        deadline = time.monotonic() + 20
        body = ""
        while time.monotonic() < deadline and "lagsight_shard_info{" not in body:
            assert process.poll() is None, process.stderr.read().decode()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    body = r.read().decode()
            except OSError:
                time.sleep(0.2)
        assert 'lagsight_shard_info{shard="2",total_shards="3"} 1' in body, body[-2000:]
    finally:
        process.terminate()
        process.wait(timeout=10)
    # A pod whose name ends in no ordinal is refused at start, with the reason.
    refused = subprocess.run([str(lagsight_binary), *args], capture_output=True, text=True,
                             timeout=10, env={**os.environ, "HOSTNAME": "lagsight"})
    assert refused.returncode == 2
    assert "does not end in a StatefulSet ordinal" in refused.stderr
