"""Events already on the ledger name the deployed software's version `version` (contract v1.2); since the rename
the gateway writes `service_version`. A projector reading the old shape from Kafka builds the same episodes and
candidates, row for row, as one reading the new shape (real Kafka + PostgreSQL, the projector as it runs)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from schemas.ledger import LedgerEvent, LedgerRecord
from services.common.settings import Settings
from services.projector.store import PROJECTION_TABLES
from tests.factories import T0, record, resolved_incident
from tests.integration.test_projector_recovery import ORDER, produce, projector, wait_until_applied

pytestmark = pytest.mark.integration
TENANT = "acme"  # one of test_projector_recovery's tenants: its wait_until_applied counts them


def _incidents() -> list[dict[str, Any]]:
    """Three incidents whose opening names the version deployed."""
    raws: list[dict[str, Any]] = []
    for i in range(3):
        events = resolved_incident(f"INC-V{i}")
        events[0]["payload"]["service_version"] = f"2.4.{i}"
        raws.extend(events)
    return raws


def _ledger(raws: list[dict[str, Any]], shape: str) -> list[LedgerRecord]:
    """The records as the gateway writes them now, or (`old`) as it wrote them before the rename."""
    out: list[LedgerRecord] = []
    for rec in (record(raw, tenant=TENANT) for raw in raws):
        if shape == "old" and "service_version" in rec.payload:
            payload = {("version" if k == "service_version" else k): v for k, v in rec.payload.items()}
            rec = LedgerEvent(**{**rec.model_dump(exclude={"recorded_at", "content_hash"}),
                                 "payload": payload}).to_record(T0)
        out.append(rec)
    return out


def _rows(db_url: str) -> dict[str, list[dict[str, Any]]]:
    """Every projection table of the tenant; the stored events with the version under either name."""
    out: dict[str, list[dict[str, Any]]] = {}
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (TENANT,))
        for table in PROJECTION_TABLES:
            columns = "*" if table != "ledger_events" else (
                "event_id, type, incident_id, occurred_at, source_partition, source_offset,"
                " payload - 'version' - 'service_version' AS rest,"
                " coalesce(payload->>'service_version', payload->>'version') AS service_version")
            out[table] = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {ORDER[table]}").fetchall()
    return out


def test_an_old_shaped_ledger_projects_to_the_same_rows_as_a_new_one(
        settings: Settings, fresh_database: Callable[[], str], fresh_topic: Callable[..., str]) -> None:
    rows = {}
    raws = _incidents()
    for shape in ("old", "new"):
        ledger = _ledger(raws, shape)
        opened = ledger[0].payload
        assert ("version" in opened) == (shape == "old") and ("service_version" in opened) == (shape == "new")
        topic, dlq, db = fresh_topic(1), fresh_topic(1), fresh_database()
        produce(settings, topic, ledger)
        with projector(settings, db, topic, dlq, f"sv-{uuid.uuid4().hex[:6]}") as proc:
            wait_until_applied(db, len(ledger), proc)
        rows[shape] = _rows(db)
    assert rows["old"] == rows["new"]
    assert len(rows["new"]["episodes"]) == 3 and len(rows["new"]["candidates"]) == 3
    assert sorted(e["body"]["service_version"] for e in rows["new"]["episodes"]) == ["2.4.0", "2.4.1", "2.4.2"]
    assert sorted(c["content"]["service_version"] for c in rows["new"]["candidates"]) == ["2.4.0", "2.4.1", "2.4.2"]
