"""Builders of ledger events for tests (pure; no I/O)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.ledger import LedgerRecord, SubmittedEvent, bind_event, envelope

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def raw_event(kind: str, incident: str, payload: dict[str, Any], *, trust: str = "trusted_tool",
              minute: int = 0, event_id: uuid.UUID | None = None) -> dict[str, Any]:
    return envelope(kind, incident, payload, writer_kind="tool", writer_id="test", trust=trust,
                    at=T0 + timedelta(minutes=minute), event_id=event_id)


def record(raw: dict[str, Any], tenant: str = "acme", project: str = "default") -> LedgerRecord:
    return bind_event(SubmittedEvent.model_validate(raw), tenant, project).to_record(T0)


def resolved_incident(incident: str, *, evidence_trust: str = "trusted_tool", category: str = "db_connection_pool",
                      service: str = "checkout-api", signal: str = "db_pool_saturation",
                      verify: bool = True) -> list[dict[str, Any]]:
    """A complete incident: opened, one observation, a hypothesis (verified or not), resolved."""
    obs = uuid.uuid4()
    events = [
        raw_event("incident.opened", incident, {"alert": {"name": "HighErrorRate"}, "services": [service],
                                                "environment": "prod"}, minute=0),
        raw_event("observation.recorded", incident, {"source": "prometheus", "summary": f"{signal} observed",
                                                     "query": f'pool{{service="{service}"}}', "signals": [signal],
                                                     "entities": [service]},
                  trust=evidence_trust, minute=1, event_id=obs),
        raw_event("hypothesis.proposed", incident, {"hypothesis_id": "h1", "statement": "pool exhausted",
                                                    "root_cause_category": category}, trust="model_inferred",
                  minute=2),
    ]
    if verify:
        events.append(raw_event("hypothesis.verified", incident, {"hypothesis_id": "h1",
                                                                  "evidence_refs": [str(obs)]}, minute=3))
    events.append(raw_event("incident.resolved", incident, {
        "root_cause": "connection pool exhausted by slow queries", "root_cause_category": category,
        "summary": f"{service} errors from pool exhaustion", "evidence_refs": [str(obs)]},
        trust="user_stated", minute=4))
    return events
