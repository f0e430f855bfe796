"""KubernetesCollector: read-only pod, event and rollout facts through the official client.

Signals: `oom_killed` (a container's last termination was OOMKilled), `crash_loop` (waiting in
CrashLoopBackOff), `restarts_high` (restart count at or above the threshold), `image_pull_error`,
`pods_pending`. A 403 from the API server becomes a clear CollectorError naming the missing RBAC
permission; nothing is retried with other credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from services.collectors.prometheus import CollectorError

RESTARTS_HIGH = 5


@dataclass
class PodFacts:
    name: str
    phase: str
    restarts: int = 0
    reasons: list[str] = field(default_factory=list)  # termination and waiting reasons


@dataclass
class KubeObservation:
    query: str
    summary: str
    signals: list[str]
    values: dict[str, Any]


def api_client(host: str | None = None, kubeconfig: str | None = None) -> k8s.ApiClient:
    """A client for `host` (tests, proxies) or from kubeconfig / in-cluster configuration."""
    if host:
        config = k8s.Configuration()
        config.host = host
        return k8s.ApiClient(config)
    from kubernetes import config as kube_config

    try:
        kube_config.load_incluster_config()  # type: ignore[no-untyped-call]
    except kube_config.ConfigException:
        kube_config.load_kube_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    return k8s.ApiClient()


class KubernetesCollector:
    source = "kubernetes"

    def __init__(self, api: k8s.ApiClient) -> None:
        self.core = k8s.CoreV1Api(api)
        self.apps = k8s.AppsV1Api(api)

    def pods(self, namespace: str, selector: str) -> KubeObservation:
        pods = self._call(f"list pods in {namespace}",
                          lambda: self.core.list_namespaced_pod(namespace, label_selector=selector))
        facts = [_pod_facts(p) for p in pods.items]
        signals = _pod_signals(facts)
        phases: dict[str, int] = {}
        for f in facts:
            phases[f.phase] = phases.get(f.phase, 0) + 1
        reasons = sorted({r for f in facts for r in f.reasons})
        summary = (f"{len(facts)} pods ({', '.join(f'{n} {p}' for p, n in sorted(phases.items()))}); "
                   f"max restarts {max((f.restarts for f in facts), default=0)}"
                   + (f"; reasons: {', '.join(reasons)}" if reasons else ""))
        return KubeObservation(f"pods {namespace} {selector}", summary, signals,
                               {"pods": [f.__dict__ for f in facts[:50]]})

    def events(self, namespace: str, involving: str | None = None, limit: int = 20) -> KubeObservation:
        events = self._call(f"list events in {namespace}", lambda: self.core.list_namespaced_event(namespace))
        items = [e for e in events.items if involving is None or (e.involved_object.name or "").startswith(involving)]
        items.sort(key=lambda e: str(e.last_timestamp or e.event_time or ""), reverse=True)
        warnings = [e for e in items if e.type == "Warning"][:limit]
        lines = [f"{e.reason} x{e.count or 1} on {e.involved_object.name}: {e.message}" for e in warnings[:5]]
        signals = sorted({s for e in warnings for s in _event_signals(e.reason or "")})
        return KubeObservation(f"events {namespace} {involving or '*'}",
                               f"{len(warnings)} warning events" + (": " + " | ".join(lines) if lines else ""),
                               signals, {"warnings": [{"reason": e.reason, "count": e.count} for e in warnings]})

    def rollout(self, namespace: str, deployment: str) -> KubeObservation:
        dep = self._call(f"get deployment {deployment}",
                         lambda: self.apps.read_namespaced_deployment(deployment, namespace))
        selector = ",".join(f"{k}={v}" for k, v in (dep.spec.selector.match_labels or {}).items())
        sets = self._call(f"list replicasets in {namespace}",
                          lambda: self.apps.list_namespaced_replica_set(namespace, label_selector=selector))
        history = sorted(((int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", 0)),
                           rs.spec.template.spec.containers[0].image, rs.metadata.creation_timestamp)
                          for rs in sets.items), reverse=True)
        current = history[0] if history else (0, "?", None)
        summary = f"deployment {deployment} at revision {current[0]} ({current[1]})"
        if len(history) > 1:
            summary += f", previous revision {history[1][0]} ({history[1][1]}) created {history[1][2]}"
        ready = dep.status.ready_replicas or 0
        summary += f"; {ready}/{dep.spec.replicas} ready"
        signals = ["recent_deploy"] if len(history) > 1 else []
        if ready < (dep.spec.replicas or 0):
            signals.append("replicas_unavailable")
        return KubeObservation(f"rollout {namespace} {deployment}", summary, signals,
                               {"revisions": [{"revision": r, "image": i} for r, i, _ in history[:10]]})

    @staticmethod
    def _call(what: str, fn: Any) -> Any:
        try:
            return fn()
        except ApiException as exc:
            if exc.status in (401, 403):
                raise CollectorError(f"kubernetes denied '{what}' (HTTP {exc.status}): the collector's service "
                                     f"account needs RBAC get/list on that resource") from None
            raise CollectorError(f"kubernetes '{what}' failed: HTTP {exc.status} {exc.reason}") from None
        except (HTTPError, OSError) as exc:
            raise CollectorError(f"kubernetes API unreachable for '{what}': {exc}") from None


def _pod_facts(pod: Any) -> PodFacts:
    facts = PodFacts(pod.metadata.name, pod.status.phase or "Unknown")
    for cs in pod.status.container_statuses or []:
        facts.restarts = max(facts.restarts, cs.restart_count or 0)
        for state in (cs.last_state, cs.state):
            if state is None:
                continue
            if state.terminated is not None and state.terminated.reason:
                facts.reasons.append(state.terminated.reason)
            if state.waiting is not None and state.waiting.reason:
                facts.reasons.append(state.waiting.reason)
    return facts


def _pod_signals(facts: list[PodFacts]) -> list[str]:
    reasons = {r for f in facts for r in f.reasons}
    signals = []
    if "OOMKilled" in reasons:
        signals.append("oom_killed")
    if "CrashLoopBackOff" in reasons:
        signals.append("crash_loop")
    if reasons & {"ImagePullBackOff", "ErrImagePull"}:
        signals.append("image_pull_error")
    if any(f.restarts >= RESTARTS_HIGH for f in facts):
        signals.append("restarts_high")
    if any(f.phase == "Pending" for f in facts):
        signals.append("pods_pending")
    return signals


def _event_signals(reason: str) -> list[str]:
    return {"OOMKilling": ["oom_killed"], "BackOff": ["crash_loop"], "Failed": [], "FailedScheduling": ["pods_pending"],
            "Unhealthy": ["probe_failing"], "Evicted": ["pod_evicted"]}.get(reason, [])
