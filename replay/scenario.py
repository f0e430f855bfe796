"""Replay scenario files (format: replay/scenarios/README.md), parsed into strict models."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

EVENT_NAMESPACE = uuid.UUID("3b5f0d4e-2a71-4c1b-9a0e-8d6f7c5b4a39")


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScenarioEvent(_M):
    type: str
    at: str
    writer: dict[str, str] = Field(default_factory=lambda: {"kind": "agent", "id": "replay"})
    trust: str = "trusted_tool"
    ref: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


class ScenarioIncident(_M):
    id: str
    tenant: str = "main"
    review: Literal["approve", "reject", "none"] = "approve"
    approve_edits: dict[str, Any] | None = None
    expect_candidate: bool = True
    events: list[ScenarioEvent]


class AfterStep(_M):
    op: Literal["retract", "supersede", "rollback", "expire"]
    incident: str
    tenant: str = "main"
    reason: str = "replay"
    summary: str | None = None
    to_version: int | None = None


class FeedbackStep(_M):
    incident: str
    verdict: Literal["adopted", "refuted", "ignored"]


class Expect(_M):
    cites: list[str] = Field(default_factory=list)
    top1_cites: str | None = None
    not_cites: list[str] = Field(default_factory=list)
    warnings: dict[str, list[str]] = Field(default_factory=dict)
    no_warnings: dict[str, list[str]] = Field(default_factory=dict)
    no_hints: bool = False
    max_hints: int | None = None
    min_hints: int | None = None
    text_absent: list[str] = Field(default_factory=list)
    top_cause: str | None = None  # the first of the answer's causes (v1.3) is this category
    raises: list[str] = Field(default_factory=list)  # these causes' probabilities are above their base rates


class Query(_M):
    name: str
    tenant: str = "main"
    request: dict[str, Any]
    eventually: bool = False
    feedback: list[FeedbackStep] = Field(default_factory=list)
    expect: Expect = Field(default_factory=Expect)


class Scenario(_M):
    name: str
    about: str = ""
    project: str = "default"
    incidents: list[ScenarioIncident] = Field(default_factory=list)
    after: list[AfterStep] = Field(default_factory=list)
    queries: list[Query] = Field(default_factory=list)
    source: str = ""

    def tenants(self) -> list[str]:
        names = [i.tenant for i in self.incidents] + [q.tenant for q in self.queries] + [a.tenant for a in self.after]
        return list(dict.fromkeys(names or ["main"]))


def event_id(scenario: str, incident: str, position: int) -> uuid.UUID:
    return uuid.uuid5(EVENT_NAMESPACE, f"{scenario}/{incident}/{position}")


def ledger_events(scenario: Scenario, incident: ScenarioIncident) -> list[dict[str, Any]]:
    """Envelopes for the gateway: deterministic ids, local refs resolved to event ids. Built field by field,
    not through `schemas.ledger.envelope`: a scenario may carry an invalid type or trust on purpose (the
    gateway must reject it), and the builder would refuse it first."""
    refs = {e.ref: str(event_id(scenario.name, incident.id, i)) for i, e in enumerate(incident.events) if e.ref}
    out = []
    for i, e in enumerate(incident.events):
        payload = dict(e.payload)
        if "evidence_refs" in payload:
            payload["evidence_refs"] = [refs.get(str(r), str(r)) for r in payload["evidence_refs"]]
        out.append({
            "event_id": str(event_id(scenario.name, incident.id, i)), "type": e.type,
            "incident_id": incident.id, "occurred_at": e.at, "writer": e.writer, "trust": e.trust,
            "payload": payload,
        })
    return out


def load_scenarios(path: Path) -> list[Scenario]:
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    out = []
    for f in files:
        data = yaml.safe_load(f.read_text(encoding="utf-8"))
        if (isinstance(data, dict) and "incidents" in data) or (isinstance(data, dict) and "queries" in data):
            out.append(Scenario.model_validate({**data, "source": str(f)}))
    return out
