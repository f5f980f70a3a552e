"""deploy/: the Kubernetes manifests validate against the Kubernetes schemas (kubernetes-validate,
strict), their probes and grace period fit the drain, the nginx configuration passes `nginx -t`, and
the Compose file passes `docker compose config` where a Docker engine runs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from deploy import servers
from kumitate.policies.idempotency import lease_s
from tests.servers import unavailable

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S_VERSION = "1.37.0"
MANIFESTS = sorted((DEPLOY / "k8s").glob("*.yaml"))


def documents() -> dict[str, dict[str, Any]]:
    found = {}
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            found[doc["kind"]] = doc
    return found


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_each_manifest_is_valid_kubernetes(path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)  # raises on any violation


def test_the_manifests_have_what_an_operator_needs() -> None:
    docs = documents()
    assert {"Deployment", "Service", "ConfigMap", "Secret", "PodDisruptionBudget", "HorizontalPodAutoscaler"} <= set(
        docs
    )
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"requests", "limits"} <= set(container["resources"])
    assert {e.get("configMapRef", e.get("secretRef"))["name"] for e in container["envFrom"]} == {"kumitate"}
    # the drain fits in the grace period: readiness off for the delay, then the longest call in flight
    delay = float(docs["ConfigMap"]["data"]["KUMITATE_DRAIN_DELAY_S"])
    readiness = container["readinessProbe"]
    assert delay > readiness["periodSeconds"] * readiness["failureThreshold"]
    assert pod["terminationGracePeriodSeconds"] >= delay + lease_s(None)
    assert docs["Deployment"]["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_supervisord_waits_for_the_drain_before_it_kills() -> None:
    conf = (DEPLOY / "supervisor-instance.conf").read_text()
    stopwait = int(conf.split("stopwaitsecs=")[1].split()[0])
    assert stopwait >= lease_s(None) + 1  # the cluster's drain delay is 1 s
    assert "autorestart=true" in conf


def test_the_nginx_configuration_is_accepted_by_nginx(tmp_path: Path) -> None:
    nginx = servers.which("nginx")
    if nginx is None:
        unavailable("nginx is not installed (make cluster-install)")
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        servers.fill(
            servers.NGINX_TEMPLATE,
            dir=tmp_path,
            listen=f"127.0.0.1:{servers.free_port()}",
            servers="    server 127.0.0.1:1 max_fails=1 fail_timeout=2s;",
        )
    )
    assert re.findall(r"@[a-z_]+@", conf.read_text()) == []  # every placeholder filled
    result = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(conf)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_compose_file_is_valid() -> None:
    data = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert {"postgres", "redis", "kumitate", "nginx"} <= set(data["services"])
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True).returncode != 0:
        pytest.skip("no Docker engine here: `docker compose config` needs one (the YAML itself was read)")
    env = {"POSTGRES_PASSWORD": "x", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [docker, "compose", "-f", str(DEPLOY / "compose.yaml"), "config", "--quiet"], capture_output=True, env=env
    )
    assert result.returncode == 0, result.stderr
