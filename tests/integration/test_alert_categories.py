"""The alternative_root_causes warning's read (`retrieval.WarningReads`), against the real PostgreSQL.

For every alert name of a briefing's hints: each name's categories among active records of the caller's
tenant, with up to three example incidents; retracted records and other tenants count for nothing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from schemas.api import BriefingRequest
from services.briefing import retrieval
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration


def approve(svc: GovernedServices, tenant: str, category: str, service: str = "ledger-db",
            signal: str = "disk_usage_high") -> tuple[uuid.UUID, str]:
    d = draft(category, service, signal=signal, summary=f"ledger volume: {category}")
    family = svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d), note=None, edits=None).family_id
    return family, d.source_incidents[0]


def categories(svc: GovernedServices, tenant: str, names: list[str]) -> dict[str, dict[str, set[str]]]:
    with svc.db.tenant_transaction(tenant) as cur:
        return retrieval.WarningReads(cur, None, datetime.now(UTC)).categories(names)


def test_every_alert_name_is_answered_only_from_active_records_of_the_tenant(
        svc: GovernedServices) -> None:
    tenant, other = f"ac-{uuid.uuid4().hex[:8]}", f"ac-o-{uuid.uuid4().hex[:8]}"
    _, disk_a = approve(svc, tenant, "disk_full")
    _, disk_b = approve(svc, tenant, "disk_full", "archive-db")  # another service: another family
    _, wal = approve(svc, tenant, "wal_retention")
    ghost, _ = approve(svc, tenant, "ghost_category")
    svc.memory.retract(reviewer(tenant), ghost, "wrong")
    approve(svc, other, "foreign_category")
    assert categories(svc, tenant, ["Alert", "NoSuchAlert", "Alert"]) == {
        "Alert": {"disk_full": {disk_a, disk_b}, "wal_retention": {wal}}, "NoSuchAlert": {}}
    assert categories(svc, tenant, []) == {}


def dominant_disk_history(svc: GovernedServices, tenant: str) -> str:
    """Disk-full five times (a family each), WAL retention once, all under one alert, beside six certificate
    expiries of other services: v1.3 sends a hint where the evidence makes its cause near-certain, but not for the
    tenant's most frequent cause, which the base rates check first anyway (`causes.choose_evidence`), and a tenant
    of two incidents would get none."""
    for service in ("edge-a", "edge-b", "edge-c", "edge-d", "edge-e", "edge-f"):
        approve(svc, tenant, "certificate_expired", service, signal="tls_handshake_failures")
    for service in ("ledger-db", "archive-db", "orders-db", "billing-db", "audit-db"):
        approve(svc, tenant, "disk_full", service)
    return approve(svc, tenant, "wal_retention", signal="wal_segments_retained")[1]


def test_a_hint_names_the_alerts_other_root_causes(svc: GovernedServices) -> None:
    tenant = f"ac-{uuid.uuid4().hex[:8]}"
    wal = dominant_disk_history(svc, tenant)
    answer = svc.briefing.brief(reviewer(tenant, "agent"), BriefingRequest(
        text="ledger volume disk_full", alert={"name": "Alert"}, services=["ledger-db"], signals=["disk_usage_high"]))
    top = answer.hints[0]
    assert top.root_cause_category == "disk_full"
    [warning] = [w for w in top.warnings if w.code == "alternative_root_causes"]
    assert f"wal_retention ({wal})" in warning.message


def test_hints_under_an_alert_the_question_did_not_name_still_get_its_other_root_causes(
        svc: GovernedServices) -> None:
    """The question's alert is read ahead with the first round trip; a hint's other alert name is read after."""
    tenant = f"ac-{uuid.uuid4().hex[:8]}"
    wal = dominant_disk_history(svc, tenant)
    answer = svc.briefing.brief(reviewer(tenant, "agent"), BriefingRequest(
        text="ledger volume disk_full", alert={"name": "SomeOtherAlert"}, services=["ledger-db"],
        signals=["disk_usage_high"]))
    top = answer.hints[0]
    assert top.root_cause_category == "disk_full"
    [warning] = [w for w in top.warnings if w.code == "alternative_root_causes"]
    assert f"wal_retention ({wal})" in warning.message


def test_reads_asked_ahead_are_answered_with_the_next_round_trip_and_kept(svc: GovernedServices) -> None:
    tenant = f"ac-{uuid.uuid4().hex[:8]}"
    _, disk = approve(svc, tenant, "disk_full")
    with svc.db.tenant_transaction(tenant, pipeline=True) as cur:
        reads = retrieval.WarningReads(cur, None, datetime.now(UTC))
        reads.ask(["Alert"], ["disk_usage_high"])
        cur.execute("SELECT 1 AS one")
        assert cur.fetchall() == [{"one": 1}]  # the round trip that brings the reads' results too
        assert reads.categories(["Alert", "NoSuchAlert"]) == {"Alert": {"disk_full": {disk}}, "NoSuchAlert": {}}
        assert reads.categories(["Alert"]) == {"Alert": {"disk_full": {disk}}}  # kept, not read twice
        assert reads.misleading() == {} and reads.misleading() == {}


def test_one_ask_answers_both_the_categories_and_the_tenants_misleading_signals(svc: GovernedServices) -> None:
    """The signal half of the single statement: this tenant's rows per signal asked for, no other tenant's."""
    tenant, other = f"ac-{uuid.uuid4().hex[:8]}", f"ac-{uuid.uuid4().hex[:8]}"
    _, disk = approve(svc, tenant, "disk_full")
    for who, incident in ((tenant, "INC-M1"), (tenant, "INC-M2"), (other, "INC-X")):
        with svc.db.tenant_transaction(who) as cur:
            cur.execute("INSERT INTO misleading_signals (tenant, event_id, project, incident_id, signal, reason)"
                        " VALUES (%s, %s, 'default', %s, 'node_cpu_high', 'a batch job, not the node')",
                        (who, uuid.uuid4(), incident))
    with svc.db.tenant_transaction(tenant, pipeline=True) as cur:
        reads = retrieval.WarningReads(cur, None, datetime.now(UTC))
        reads.ask(["Alert"], ["node_cpu_high", "disk_usage_high"])
        assert sorted(reads.misleading()["node_cpu_high"]) == ["INC-M1", "INC-M2"]
        assert set(reads.misleading()) == {"node_cpu_high"}
        assert reads.categories(["Alert"]) == {"Alert": {"disk_full": {disk}}}
