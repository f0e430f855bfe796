from __future__ import annotations

import uuid

import pytest

from schemas.ledger import LedgerRecord, LedgerValidationError, parse_submitted_event
from tests.factories import raw_event, record


def _field_of(raw: dict[str, object]) -> str:
    with pytest.raises(LedgerValidationError) as err:
        parse_submitted_event(raw)
    return err.value.field


def test_valid_event_parses_and_binds_scope() -> None:
    rec = record(raw_event("observation.recorded", "INC-1", {"source": "logs", "summary": "boom"}))
    assert rec.tenant == "acme" and rec.project == "default"
    assert rec.kafka_key == b"acme/INC-1"


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda e: e.update(type="incident.exploded"), "type"),
    (lambda e: e.update(occurred_at="2026-03-02T10:00:00"), "occurred_at"),
    (lambda e: e.update(occurred_at="yesterday"), "occurred_at"),
    (lambda e: e.update(trust="very_trusted"), "trust"),
    (lambda e: e.update(incident_id="INC 1/x"), "incident_id"),
    (lambda e: e.update(incident_id="x" * 129), "incident_id"),
    (lambda e: e.update(event_id="not-a-uuid"), "event_id"),
    (lambda e: e.update(writer={"kind": "robot", "id": "x"}), "writer.kind"),
    (lambda e: e["payload"].update(source="telepathy"), "payload.source"),
    (lambda e: e["payload"].pop("summary"), "payload.summary"),
    (lambda e: e.update(surprise=1), "surprise"),
    (lambda e: e["payload"].update(summary="a\x00b"), "payload.summary"),
    (lambda e: e["payload"].update(extra_field=["ok", "\x00"]), "payload.extra_field[1]"),
])
def test_invalid_event_names_the_field(mutate, field) -> None:
    raw = raw_event("observation.recorded", "INC-1", {"source": "logs", "summary": "boom"})
    mutate(raw)
    assert _field_of(raw) == field


def test_payload_fields_are_checked_per_type() -> None:
    raw = raw_event("hypothesis.verified", "INC-1", {"hypothesis_id": "h1", "evidence_refs": ["nope"]})
    assert _field_of(raw) == "payload.evidence_refs.0"


def test_content_hash_is_canonical_and_excludes_system_fields() -> None:
    raw = raw_event("observation.recorded", "INC-1", {"summary": "连接池耗尽", "source": "logs"},
                    event_id=uuid.UUID(int=7))
    a, b = record(raw), record(dict(reversed(list(raw.items()))))
    assert a.content_hash == b.content_hash
    shifted = raw | {"occurred_at": "2026-03-02T18:00:00+08:00"}  # same instant, other offset
    assert record(shifted).content_hash == a.content_hash
    assert record(raw, tenant="other").content_hash != a.content_hash
    decoded = LedgerRecord.model_validate_json(a.to_json())
    assert decoded == a and decoded.envelope().compute_hash() == a.content_hash
    assert decoded.compute_hash() == a.content_hash  # a stored record verifies against its own hash
