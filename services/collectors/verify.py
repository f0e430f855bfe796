"""Verification of briefing hints against live telemetry ("current evidence forms conclusions").

`VerificationService.verify` owns the flow: read the briefing's cited versions and their checks (one
read transaction), run every check against live Prometheus / Kubernetes (no transaction open while
waiting on the network), then append, in ONE gateway request, the observations it made (trusted_tool,
to the current incident) and a `briefing.feedback` event per hint whose checks gave a verdict
(supported -> adopted, refuted -> refuted). Inconclusive hints get no feedback.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from schemas.ledger import EventType, Trust, envelope
from schemas.views import VerifyResult
from services.briefing.settler import CommitSettler
from services.collectors.kubernetes import KubernetesCollector
from services.collectors.observations import observation
from services.collectors.prometheus import CollectorError, PrometheusCollector
from services.common.auth import Principal
from services.common.db import Database
from services.common.errors import NotFound
from services.gateway.service import LedgerGateway
from services.memory import records

FEEDBACK = {"supported": "adopted", "refuted": "refuted"}


@dataclass
class CheckOutcome:
    source: str
    query: str
    expected: list[str]
    verdict: str  # supported | refuted | inconclusive
    signals_now: list[str] = field(default_factory=list)
    summary: str = ""
    values: dict[str, Any] | None = None


@dataclass
class HintVerdict:
    family_id: str
    version: int
    verdict: str
    checks: list[CheckOutcome]


def judge(expected: list[str], signals_now: list[str], had_data: bool) -> str:
    if not had_data or not expected:
        return "inconclusive"
    return "supported" if set(expected) & set(signals_now) else "refuted"


def combine(outcomes: list[CheckOutcome]) -> str:
    verdicts = {o.verdict for o in outcomes}
    if "supported" in verdicts:
        return "supported"
    return "refuted" if verdicts == {"refuted"} else "inconclusive"


class HintVerifier:
    def __init__(self, prometheus: PrometheusCollector | None, kubernetes: KubernetesCollector | None,
                 namespace: str = "default") -> None:
        self.prometheus = prometheus
        self.kubernetes = kubernetes
        self.namespace = namespace

    def run(self, check: dict[str, Any], namespace: str | None = None) -> CheckOutcome:
        expected = list(check.get("signals") or [])
        outcome = CheckOutcome(check["source"], check["query"], expected, "inconclusive")
        try:
            if self.kubernetes is not None and check["query"].startswith("pods "):
                _, ns, selector = [*check["query"].split(" ", 2), "", ""][:3]
                obs = self.kubernetes.pods(namespace or ns or self.namespace, selector)
                outcome.signals_now, outcome.summary, outcome.values = obs.signals, obs.summary, obs.values
                outcome.verdict = judge(expected, obs.signals, bool(obs.values.get("pods")))
            elif self.prometheus is not None and check["source"] in ("prometheus", "kubernetes"):
                result = self.prometheus.instant(check["query"])
                outcome.signals_now, outcome.summary, outcome.values = result.signals, result.summary, result.values()
                outcome.verdict = judge(expected, result.signals, bool(result.summaries))
            else:
                outcome.summary = f"no live source configured for {check['source']} checks"
        except CollectorError as exc:
            outcome.summary = exc.message
        return outcome


class VerificationService:
    def __init__(self, db: Database, gateway: LedgerGateway, verifier: HintVerifier,
                 settler: CommitSettler | None = None) -> None:
        """`settler`: the API process's, so that a briefing answered a moment ago is found."""
        self.db = db
        self.settler = settler or CommitSettler(0)
        self.gateway = gateway
        self.verifier = verifier

    def verify(self, principal: Principal, briefing_id: uuid.UUID, incident_id: str,
               namespace: str | None = None) -> VerifyResult:
        principal.require("agent")
        cited = self._cited_checks(principal, briefing_id)
        verdicts = []
        for fam, version, checks in cited:
            outcomes = [self.verifier.run(c, namespace) for c in checks]
            verdicts.append(HintVerdict(fam, version, combine(outcomes) if outcomes else "inconclusive", outcomes))
        events = self._events(principal, briefing_id, incident_id, verdicts)
        accepted = [r.event_id for r in self.gateway.append({"events": events}, principal)] if events else []
        return VerifyResult.model_validate({"briefing_id": briefing_id, "incident_id": incident_id,
                                            "hints": [asdict(v) for v in verdicts], "appended": accepted})

    def _cited_checks(self, principal: Principal, briefing_id: uuid.UUID) -> list[tuple[str, int, list[Any]]]:
        stored = self.settler.issued(self.db, principal.scoped_tenant, briefing_id)
        if stored is None:
            raise NotFound("no such briefing", field="briefing_id")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:  # versions are immutable
            checks = records.checks_of(cur, [(c.family_id, c.version) for c in stored.cited])
        return [(c.family_id, c.version, checks.get((c.family_id, c.version), [])) for c in stored.cited]

    @staticmethod
    def _events(principal: Principal, briefing_id: uuid.UUID, incident_id: str,
                verdicts: list[HintVerdict]) -> list[dict[str, Any]]:
        now = datetime.now(UTC)
        events = []
        seen: set[str] = set()
        for v in verdicts:
            for o in v.checks:
                if o.values is not None and o.query not in seen:
                    seen.add(o.query)
                    events.append(observation(incident_id, o.source, o.summary, writer="opslore-verifier",
                                              query=o.query, signals=o.signals_now, values=o.values, at=now))
            if v.verdict in FEEDBACK:
                refs = [e["event_id"] for e in events if e["payload"].get("query") in {o.query for o in v.checks}]
                events.append(envelope(EventType.BRIEFING_FEEDBACK, incident_id, {
                    "briefing_id": str(briefing_id), "family_id": v.family_id, "verdict": FEEDBACK[v.verdict],
                    "evidence_refs": refs}, writer_kind="tool", writer_id="opslore-verifier",
                    trust=Trust.TRUSTED_TOOL, at=now))
        return events
