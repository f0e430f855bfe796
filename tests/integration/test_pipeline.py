"""End to end: gateway -> Kafka -> projector -> PostgreSQL -> review -> records -> briefing."""

from __future__ import annotations

import psycopg
import pytest

from services.cli.client import ApiError
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def _candidate(client, incident: str):
    return eventually(lambda: client.candidates(incident_id=incident))[0]


def test_learn_review_brief_retract(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    client.append(resolved_incident("INC-1"))
    cand = _candidate(client, "INC-1")
    assert cand["state"] == "pending" and cand["proposal"]["kind"] == "new_family"
    approved = client.approve(str(cand["candidate_id"]), note="looks right",
                              edits={"summary": "Pool exhaustion from slow queries"})
    assert approved["version"] == 1
    with pytest.raises(ApiError) as err:
        client.approve(str(cand["candidate_id"]))
    assert err.value.status == 409

    answer = client.briefing({"alert": {"name": "HighErrorRate"}, "services": ["checkout-api"],
                              "signals": ["db_pool_saturation"], "text": "connection pool exhausted"})
    hint = answer["hints"][0]
    assert hint["source_incidents"] == ["INC-1"] and hint["authority"] == "clue"
    assert hint["summary"] == "Pool exhaustion from slow queries"
    assert "history_is_hypothesis" in {w["code"] for w in hint["warnings"]}
    assert hint["verify_with"] and hint["evidence"][0]["incident_id"] == "INC-1"
    assert answer["token_estimate"] > 0

    family = str(approved["family_id"])
    client.record_op(family, "retract", {"reason": "wrong lesson"})
    again = client.briefing({"signals": ["db_pool_saturation"], "text": "connection pool exhausted"})
    assert again["hints"] == []
    history = client.record(family)
    assert [a["action"] for a in history["audit"]] == ["approve", "retract"]


def test_untrusted_evidence_never_becomes_a_candidate(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    client.append(resolved_incident("INC-2", evidence_trust="untrusted_text"))
    episode = eventually(lambda: (e := client.episode("INC-2")) and e["status"] == "resolved" and e)
    assert "no verified hypothesis" in episode["gate_verdict"]
    assert client.candidates(incident_id="INC-2") == []


def test_tenants_are_isolated_by_the_database(tenant_client: TenantFactory, settings: Settings) -> None:
    alice, bob = tenant_client(), tenant_client()
    alice.append(resolved_incident("INC-3"))
    cand = _candidate(alice, "INC-3")
    family = str(alice.approve(str(cand["candidate_id"]))["family_id"])
    assert bob.episode("INC-3") is None
    assert bob.candidates() == [] and bob.records() == []
    with pytest.raises(ApiError) as err:
        bob.record(family)
    assert err.value.status == 404
    assert bob.briefing({"signals": ["db_pool_saturation"], "services": ["checkout-api"]})["hints"] == []
    with psycopg.connect(settings.database_url) as conn:  # raw SQL as the application role
        role = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
        assert role == (False, False)
        for table in ("episodes", "candidates", "memory_versions", "memory_families", "ledger_events"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (bob.tenant,))  # type: ignore[attr-defined]
        assert conn.execute("SELECT count(*) FROM memory_versions").fetchone() == (0,)
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (alice.tenant,))  # type: ignore[attr-defined]
        assert conn.execute("SELECT count(*) FROM memory_versions").fetchone() == (1,)


def test_versions_are_immutable_and_history_is_kept(tenant_client: TenantFactory, settings: Settings) -> None:
    client = tenant_client()
    client.append(resolved_incident("INC-4"))
    family = str(client.approve(str(_candidate(client, "INC-4")["candidate_id"]))["family_id"])
    v1 = client.record(family)["current"]
    assert client.record_op(family, "supersede", {"summary": "better wording", "reason": "clarity"})["version"] == 2
    with pytest.raises(ApiError) as err:
        client.record_op(family, "supersede", {"summary": "stale", "reason": "x", "expected_version": 1})
    assert err.value.status == 409
    assert client.record_op(family, "rollback", {"to_version": 1, "reason": "undo"})["version"] == 3
    rec = client.record(family)
    assert [v["state"] for v in rec["versions"]] == ["superseded", "superseded", "active"]
    assert rec["current"]["content_hash"] == v1["content_hash"] and rec["current"]["summary"] == v1["summary"]
    assert [a["action"] for a in rec["audit"]] == ["approve", "supersede", "rollback"]
    with psycopg.connect(settings.database_url) as conn:
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (client.tenant,))  # type: ignore[attr-defined]
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
            conn.execute("UPDATE memory_versions SET summary = 'tampered' WHERE family_id = %s", (family,))
        conn.rollback()
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (client.tenant,))  # type: ignore[attr-defined]
        with pytest.raises(psycopg.Error):
            conn.execute("DELETE FROM memory_audit WHERE family_id = %s", (family,))


def test_lineage_links_version_episode_events_and_briefings(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    events = resolved_incident("INC-5")
    client.append(events)
    family = str(client.approve(str(_candidate(client, "INC-5")["candidate_id"]))["family_id"])
    briefing = client.briefing({"signals": ["db_pool_saturation"], "services": ["checkout-api"]})
    edges = {(e["src_kind"], e["relation"], e["dst_kind"], e["dst_id"])
             for e in client.request("GET", f"/v1/records/{family}/lineage")["edges"]}
    evidence_id = events[1]["event_id"]
    assert ("version", "learned_from", "episode", "INC-5") in edges
    assert ("episode", "cites", "event", evidence_id) in edges
    assert ("briefing", "cited", "version", f"{family}:1") in edges
    assert briefing["hints"][0]["family_id"] == family
