"""Memory-on vs memory-off: does briefing make a deterministic planner better, never worse?

Memory: the corpus archetypes' past incidents, learned and approved in one fresh tenant; two of them
are then retracted. Trials: a new occurrence of every archetype (its opening alert and a first
observation worded differently, resolution hidden) plus novel incidents whose cause is not in memory.
The planner orders root-cause categories: memory-off by the tenant's base rates (the answer's causes by
their `prior`), then a fixed SRE checklist; memory-on with the hinted categories first (the evidence causes,
which hints follow), then the same order. Per trial: rank of the true category,
checks until it is verified (a hinted hypothesis costs its `verify_with` checks, others one each),
and whether a hint was harmful (a wrong hint above the right one, or a hint citing a retracted or
foreign record). The gate fails when memory-on is worse on mean rank or mean checks, or its
harmful-hint rate exceeds the allowed maximum.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from replay.corpus.build import incident, load
from replay.runner import learn_incident
from replay.scenario import Scenario, ScenarioIncident
from services.cli.client import OpsloreClient

CHECKLIST = [
    "bad_deploy", "configuration", "dependency", "capacity", "network", "dns", "certificate_expiry", "tls",
    "db_connection_pool", "slow_query", "db_locks", "db_replication", "disk_full", "disk_io", "resource_limits",
    "memory_leak", "gc", "cpu", "node", "queue_backlog", "queue_broker", "cache", "rate_limit", "retry_storm",
    "clock", "auth", "storage", "ingress", "data", "batch_job", "observability", "search", "image_pull",
]
RETRACTED = ("cache-stampede", "zh-dns")
NOVEL = [  # causes that memory knows nothing about: briefing should abstain and change nothing
    {"alert": "ClockSkewDetected", "service": "ledger-writer", "category": "clock",
     "text": "ntp offset 4 seconds on ledger-writer hosts, signatures rejected", "signals": ["ntp_offset_high"]},
    {"alert": "ImagePullErrors", "service": "batch-runner", "category": "image_pull",
     "text": "pods stuck in ErrImagePull for the new batch-runner tag", "signals": ["image_pull_error"]},
    {"alert": "SearchShardsUnassigned", "service": "search-cluster", "category": "search",
     "text": "cluster status red, 12 unassigned shards after a node restart", "signals": ["shards_unassigned"]},
]
Brief = Callable[[dict[str, Any]], dict[str, Any]]  # a briefing request -> its answer (hints, causes)


@dataclass
class Trial:
    name: str
    true_category: str
    rank_off: int
    rank_on: int
    checks_off: int
    checks_on: int
    harmful: bool
    hints: int


@dataclass
class GateResult:
    trials: list[Trial] = field(default_factory=list)
    max_harmful_rate: float = 0.10

    def metric(self, name: str) -> float:
        return round(statistics.fmean(getattr(t, name) for t in self.trials), 4) if self.trials else 0.0

    @property
    def harmful_rate(self) -> float:
        return round(sum(t.harmful for t in self.trials) / len(self.trials), 4) if self.trials else 0.0

    @property
    def failures(self) -> list[str]:
        out = []
        if self.metric("rank_on") > self.metric("rank_off"):
            out.append(f"mean rank with memory {self.metric('rank_on')} > without {self.metric('rank_off')}")
        if self.metric("checks_on") > self.metric("checks_off"):
            out.append(f"mean checks with memory {self.metric('checks_on')} > without {self.metric('checks_off')}")
        if self.harmful_rate > self.max_harmful_rate:
            out.append(f"harmful-hint rate {self.harmful_rate} > allowed {self.max_harmful_rate}")
        return out

    @property
    def passed(self) -> bool:
        return bool(self.trials) and not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "failures": self.failures, "trials": len(self.trials),
                "memory_off": {"mean_rank": self.metric("rank_off"), "mean_checks": self.metric("checks_off"),
                               "harmful_hint_rate": 0.0},
                "memory_on": {"mean_rank": self.metric("rank_on"), "mean_checks": self.metric("checks_on"),
                              "harmful_hint_rate": self.harmful_rate},
                "max_harmful_rate": self.max_harmful_rate, "per_trial": [asdict(t) for t in self.trials]}


def base_order(answer: dict[str, Any]) -> list[str]:
    """The tenant's categories by base rate, as the answer's causes state them (most frequent first)."""
    return [c["category"] for c in sorted(answer.get("causes") or [], key=lambda c: (-c["prior"], c["category"]))]


def plan(hints: list[dict[str, Any]], base: list[str] | None = None) -> list[tuple[str, int]]:
    """Ordered (category, cost in checks) hypotheses: hinted categories first (the evidence causes: hints follow
    them), then the tenant's categories by base rate, then the checklist."""
    order: list[tuple[str, int]] = []
    for h in hints:
        category = h.get("root_cause_category")
        if category and category not in {c for c, _ in order}:
            order.append((category, max(1, len(h.get("verify_with") or []))))
    order += [(c, 1) for c in (base or []) if c not in {c for c, _ in order}]
    order += [(c, 1) for c in CHECKLIST if c not in {c for c, _ in order}]
    return order


def rank_and_checks(order: list[tuple[str, int]], truth: str) -> tuple[int, int]:
    checks = 0
    for position, (category, cost) in enumerate(order, 1):
        checks += cost
        if category == truth:
            return position, checks
    return len(order) + 1, checks + 1


def harmful(hints: list[dict[str, Any]], truth: str, allowed: set[str]) -> bool:
    if any(str(h["family_id"]) not in allowed for h in hints):
        return True  # cites a retracted, superseded or foreign record
    return bool(hints) and hints[0].get("root_cause_category") != truth  # a wrong hint leads


def trial(name: str, truth: str, request: dict[str, Any], brief: Brief, allowed: set[str]) -> Trial:
    answer = brief(request)
    hints, base = list(answer.get("hints") or []), base_order(answer)
    rank_off, checks_off = rank_and_checks(plan([], base), truth)
    rank_on, checks_on = rank_and_checks(plan(hints, base), truth)
    return Trial(name, truth, rank_off, rank_on, checks_off, checks_on, harmful(hints, truth, allowed), len(hints))


def _learn(client: OpsloreClient, incidents: list[ScenarioIncident]) -> None:
    scenario = Scenario(name="memory-gate", project="gate", incidents=incidents)
    for inc in incidents:
        learn_incident(scenario, inc, client)


def build_memory(admin: OpsloreClient, api_url: str) -> tuple[OpsloreClient, list[dict[str, Any]]]:
    archetypes = load()
    tenant = f"gate-{uuid.uuid4().hex[:10]}"
    client = OpsloreClient(api_url, admin.create_key(tenant, "reviewer", "gate"))
    _learn(client, [ScenarioIncident.model_validate(incident(a, f"PAST-{a['id']}", k))
                    for k, a in enumerate(archetypes)])
    for arch_id in RETRACTED:
        for rec in client.records(incident_id=f"PAST-{arch_id}"):
            client.record_op(str(rec["family_id"]), "retract", {"reason": "gate: known-wrong lesson"})
    client.calibrate()  # the tenant's abstention point from the memory just learned
    client.calibrate_causes()  # and its causes model now, not whenever the background run reaches it
    return client, archetypes


def trials_for(archetypes: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    out = [(a["id"], a["category"], {"alert": {"name": a["alert"]}, "services": [a["service"]],
                                     "signals": a["signals"], "text": a["ask"]}) for a in archetypes]
    out += [(f"novel-{n['category']}", n["category"], {"alert": {"name": n["alert"]}, "services": [n["service"]],
                                                       "signals": n["signals"], "text": n["text"]}) for n in NOVEL]
    return out


def run_gate(client: OpsloreClient, archetypes: list[dict[str, Any]], brief: Brief,
             progress: Callable[[str], None] | None = None, max_harmful_rate: float = 0.10) -> GateResult:
    allowed = {str(r["family_id"]) for r in client.records(state="active")}
    result = GateResult(max_harmful_rate=max_harmful_rate)
    for name, truth, request in trials_for(archetypes):
        result.trials.append(trial(name, truth, request, brief, allowed))
        if progress:
            progress(name)
    return result


def live_brief(client: OpsloreClient) -> Brief:
    def brief(request: dict[str, Any]) -> dict[str, Any]:
        return client.briefing(request)
    return brief

