"""`opslore collect` appends trusted observations, once or on a schedule (APScheduler)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import TenantFactory
from tests.integration.fake_kube import fake_kube_api
from tests.integration.helpers import episode_with
from tests.integration.prom import LivePrometheus

pytestmark = pytest.mark.integration



def opslore(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *args], env=os.environ | env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_prometheus_collector_on_a_schedule(tenant_client: TenantFactory, prom: LivePrometheus) -> None:
    client = tenant_client(role="agent")
    prom.pool_pending.labels(service="cart-api").set(75)
    prom.wait_for('db_pool_pending{service="cart-api"}', 75)
    done = opslore("collect", "prometheus", "--incident", "INC-CLI", "--query", 'db_pool_pending{service="cart-api"}',
                   "--every", "0.5", "--times", "2", OPSLORE_API_KEY=client.key, OPSLORE_PROMETHEUS_URL=prom.url)
    assert done.returncode == 0, done.stderr
    episode = episode_with(client, "INC-CLI", 2)
    assert all(o["trust"] == "trusted_tool" and o["signals"] == ["db_pool_saturation"]
               for o in episode["observations"])


def test_kubernetes_collector_once_and_its_errors(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="agent")
    with fake_kube_api() as fake:
        done = opslore("collect", "kubernetes", "--incident", "INC-K8S", "--selector", "app=search-api",
                       "--namespace", "prod", "--deployment", "search-api",
                       OPSLORE_API_KEY=client.key, OPSLORE_KUBE_HOST=fake.url)
        assert done.returncode == 0, done.stderr
        denied = opslore("collect", "kubernetes", "--incident", "INC-K8S", "--selector", "app=x",
                         "--namespace", "kube-system", OPSLORE_API_KEY=client.key, OPSLORE_KUBE_HOST=fake.url)
    assert denied.returncode == 1 and "RBAC" in denied.stdout
    episode = episode_with(client, "INC-K8S", 3)
    signals = {s for o in episode["observations"] for s in o["signals"]}
    assert {"oom_killed", "crash_loop", "recent_deploy"} <= signals
