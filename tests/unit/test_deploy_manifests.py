"""deploy/kubernetes renders with kustomize and every object validates against the Kubernetes schemas
offline (kubernetes-validate, strict); the production shape holds: probes, resources, non-root, secrets by
reference only, and every OPSLORE_* setting in the ConfigMap is one the code reads."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from services.common.settings import Settings

ROOT = Path(__file__).parents[2]
OVERLAY = ROOT / "deploy" / "kubernetes" / "overlays" / "production"
K8S_VERSION = "1.31.0"


def kustomize(path: Path) -> str:
    """kubectl's built-in kustomize, else a kustomize binary (install.sh builds one when neither exists)."""
    cached = Path(os.environ.get("OPSLORE_CACHE_DIR", Path.home() / ".cache" / "opslore")) / "bin" / "kustomize"
    if shutil.which("kubectl"):
        cmd = ["kubectl", "kustomize", str(path)]
    elif shutil.which("kustomize") or cached.exists():
        cmd = [shutil.which("kustomize") or str(cached), "build", str(path)]
    else:
        pytest.fail("neither kubectl nor kustomize is installed: run deploy/local/install.sh")
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(kustomize(OVERLAY)) if d]


def test_every_object_validates_against_the_kubernetes_schemas(objects: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ConfigMap", "Deployment", "Deployment", "Deployment", "Job", "Namespace", "NetworkPolicy",
                     "PodDisruptionBudget", "Service", "ServiceAccount"]
    for obj in objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)  # raises ValidationError naming the field


def pods(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("Deployment", "Job")}


def test_workloads_are_probed_sized_unprivileged_and_read_secrets_by_reference(objects: list[dict[str, Any]]) -> None:
    for name, spec in pods(objects).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        for c in spec["containers"]:
            assert c["resources"]["requests"] and c["resources"]["limits"]["memory"], name
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, name
            if name != "opslore-migrate":
                assert c["livenessProbe"], name
            for env in c.get("env", []):
                if env["name"] in ("OPSLORE_DATABASE_URL", "OPSLORE_OWNER_DATABASE_URL", "OPSLORE_ADMIN_TOKEN",
                                   "OPSLORE_UI_SECRET"):
                    assert "secretKeyRef" in env["valueFrom"] and "value" not in env, (name, env["name"])
    api = pods(objects)["opslore-api"]["containers"][0]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz" and api["args"] == ["api"]
    deployed = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in objects if o["kind"] == "Deployment"}
    assert set(deployed) == {"opslore-api", "opslore-projector", "opslore-governance"}
    for name, spec in deployed.items():  # every Deployment: readiness, liveness and resources
        for c in spec["containers"]:
            ports = {p["name"] for p in c["ports"]}
            for probe in ("readinessProbe", "livenessProbe"):
                assert c[probe]["httpGet"]["port"] in ports, (name, probe)  # a named port of the container
            assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", name
            assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", name
            assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"], name
            assert c["resources"]["limits"]["memory"], name
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    config = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    assert deployments["opslore-api"]["spec"]["replicas"] == 3 and config["OPSLORE_API_WORKERS"] == "4"
    assert deployments["opslore-projector"]["spec"]["replicas"] <= int(config["OPSLORE_TOPIC_PARTITIONS"])
    pdb = next(o for o in objects if o["kind"] == "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == deployments["opslore-api"]["spec"]["selector"]["matchLabels"]
    assert all(o["metadata"].get("namespace") == "opslore" for o in objects if o["kind"] != "Namespace")


def test_the_configmap_only_names_settings_the_code_reads(objects: list[dict[str, Any]],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    config = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    fields = {f"OPSLORE_{name.upper()}" for name in Settings.model_fields}
    assert set(config) <= fields, set(config) - fields
    for key, value in config.items():
        monkeypatch.setenv(key, value)
    parsed = Settings()  # parsed as the pods will parse it, from the environment
    assert parsed.api_workers == 4 and parsed.log_format == "json" and "opslore:*" in parsed.mcp_allowed_hosts
