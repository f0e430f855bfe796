"""The Kubernetes collector through the official client against a local API server with recorded data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.collectors.kubernetes import KubernetesCollector, api_client
from services.collectors.prometheus import CollectorError
from tests.integration.fake_kube import FakeKube, fake_kube_api

pytestmark = pytest.mark.integration


@pytest.fixture
def kube() -> Iterator[tuple[KubernetesCollector, FakeKube]]:
    with fake_kube_api() as fake:
        yield KubernetesCollector(api_client(host=fake.url)), fake


def test_pods_reveal_oom_kills_crash_loops_and_pending(kube: tuple[KubernetesCollector, FakeKube]) -> None:
    collector, fake = kube
    obs = collector.pods("prod", "app=search-api")
    assert obs.signals == ["oom_killed", "crash_loop", "restarts_high", "pods_pending"]
    assert "3 pods (1 Pending, 2 Running)" in obs.summary and "max restarts 7" in obs.summary
    assert "OOMKilled" in obs.summary and "CrashLoopBackOff" in obs.summary
    assert fake.requests[0] == ("GET", "/api/v1/namespaces/prod/pods?labelSelector=app%3Dsearch-api")


def test_events_and_rollout_history(kube: tuple[KubernetesCollector, FakeKube]) -> None:
    collector, fake = kube
    events = collector.events("prod", "search-api")
    assert events.signals == ["crash_loop", "oom_killed", "pods_pending"]
    assert events.summary.startswith("3 warning events") and "OOMKilling x7" in events.summary
    rollout = collector.rollout("prod", "search-api")
    assert "revision 14 (registry.local/search-api:4.12.0)" in rollout.summary
    assert "previous revision 13 (registry.local/search-api:4.11.3)" in rollout.summary
    assert "1/3 ready" in rollout.summary and rollout.signals == ["recent_deploy", "replicas_unavailable"]
    assert {verb for verb, _ in fake.requests} == {"GET"}  # read-only


def test_denied_access_is_a_clear_error(kube: tuple[KubernetesCollector, FakeKube]) -> None:
    collector, _ = kube
    with pytest.raises(CollectorError) as err:
        collector.pods("kube-system", "app=x")
    assert "HTTP 403" in err.value.message and "RBAC" in err.value.message


def test_unreachable_api_is_a_clear_error() -> None:
    collector = KubernetesCollector(api_client(host="http://127.0.0.1:9"))
    with pytest.raises(CollectorError) as err:
        collector.pods("prod", "app=x")
    assert "unreachable" in err.value.message or "failed" in err.value.message
