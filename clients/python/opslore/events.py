"""Ledger envelopes as an agent submits them (CONTRACT section 2), before the API binds tenant and project.

The same envelope as the server's one builder (`schemas.ledger.envelope`; a test compares the two), without
its dependencies: the client needs only the standard library here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID, uuid4

EventType = Literal["incident.opened", "observation.recorded", "hypothesis.proposed", "hypothesis.verified",
                    "hypothesis.refuted", "signal.misleading", "action.taken", "incident.resolved",
                    "briefing.feedback"]
Trust = Literal["trusted_tool", "user_stated", "model_inferred", "untrusted_text"]
EVENT_TYPES: frozenset[str] = frozenset(EventType.__args__)  # type: ignore[attr-defined]
TRUST: frozenset[str] = frozenset(Trust.__args__)  # type: ignore[attr-defined]


def envelope(event_type: EventType | str, incident_id: str, payload: dict[str, Any], *, writer_kind: str,
             writer_id: str, trust: Trust | str, at: datetime | None = None,
             event_id: UUID | None = None) -> dict[str, Any]:
    """A submitted envelope as JSON; an unknown event type or trust is a ValueError before anything is sent."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    if trust not in TRUST:
        raise ValueError(f"unknown trust {trust!r}")
    return {"event_id": str(event_id or uuid4()), "type": str(event_type), "incident_id": incident_id,
            "occurred_at": (at or datetime.now(UTC)).isoformat(), "writer": {"kind": writer_kind, "id": writer_id},
            "trust": str(trust), "payload": payload}
