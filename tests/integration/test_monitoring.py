"""Monitoring assets: the alerting rules pass `promtool test rules` (Debian's Prometheus), and every metric
the rules and the Grafana dashboard query is one the code exports — read from the live /metrics endpoints of
the API and the projector, and from the registry for the governance worker's."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY

import services.governance.worker  # registers the governance worker metrics
import services.projector.metrics  # noqa: F401 - registers the projector metrics
from services.api.metrics import REVIEW_QUEUE_METRICS
from services.common.settings import Settings

pytestmark = pytest.mark.integration
MONITORING = Path(__file__).parents[2] / "deploy" / "monitoring"
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def family(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix) and not name.endswith("_seconds_total"):
            return name.removesuffix(suffix)
    return name


def queried(text: str) -> set[str]:
    return {family(m) for m in re.findall(r"\bopslore_[a-z_]+", text)}


def test_alerting_rules_pass_promtool() -> None:
    out = subprocess.run(["promtool", "test", "rules", "opslore-rules.test.yml"], cwd=MONITORING,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


def test_rules_and_dashboard_only_query_exported_metrics(settings: Settings) -> None:
    exported = {family(n) for n in REGISTRY._names_to_collectors} | set(REVIEW_QUEUE_METRICS)
    live = httpx.get(f"{settings.api_url}/metrics", timeout=10).text
    live += httpx.get(f"http://127.0.0.1:{settings.projector_metrics_port}/metrics", timeout=10).text
    exported |= {family(m) for m in re.findall(r"^(opslore_[a-z_]+)", live, flags=re.M)}
    assert "opslore_review_queue_pending" in live and "opslore_projector_lag_records" in live
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = "\n".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    rules = (MONITORING / "opslore-rules.yml").read_text()
    assert queried(exprs) and queried(rules)
    assert queried(exprs) <= exported, queried(exprs) - exported
    assert queried(rules) <= exported, queried(rules) - exported
