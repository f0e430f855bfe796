"""Governance end to end through the HTTP API of the running stack (CONTRACT "Governance")."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.cli.client import ApiError, OpsloreClient
from services.common.db import Database
from services.common.settings import Settings
from services.governance.worker import GovernanceWorker
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
QUESTION = {"alert": {"name": "HighErrorRate"}, "services": ["checkout-api"], "signals": ["db_pool_saturation"]}


def approve(client: OpsloreClient, incident: str, service: str = "checkout-api", **body: Any) -> str:
    client.append(resolved_incident(incident, service=service))
    cand = eventually(lambda: client.candidates(incident_id=incident, state="pending"))[0]
    return str(client.approve(str(cand["candidate_id"]), **body)["family_id"])


def preview(client: OpsloreClient, *jobs: str) -> list[dict[str, Any]]:
    return list(client.request("POST", "/v1/governance/preview", json={"jobs": list(jobs)})["proposals"])


def test_an_expired_record_stops_being_cited(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    client.append(resolved_incident("INC-EXP"))
    cand = eventually(lambda: client.candidates(incident_id="INC-EXP", state="pending"))[0]
    until = datetime.now(UTC) + timedelta(seconds=3)
    family = str(client.approve(str(cand["candidate_id"]), edits={"valid_until": until.isoformat()})["family_id"])
    assert client.briefing(QUESTION)["hints"][0]["family_id"] == family
    time.sleep(max(0.0, (until - datetime.now(UTC)).total_seconds()) + 0.5)
    proposal = next(p for p in preview(client, "expire") if family in p["family_ids"])
    assert proposal["kind"] == "expire" and proposal["based_on"] == [{"family_id": family, "version": 1}]
    assert client.record(family)["state"] == "active"  # the preview changed nothing
    done = client.request("POST", f"/v1/governance/proposals/{proposal['proposal_id']}/execute")
    assert done["wrote"] == [{"family_id": family, "version": 1, "state": "expired"}]
    assert client.record(family)["state"] == "expired" and client.briefing(QUESTION)["hints"] == []
    listed = client.request("GET", "/v1/governance/proposals", params={"state": "executed", "kind": "expire"})
    assert [p["proposal_id"] for p in listed["proposals"]] == [proposal["proposal_id"]]


def test_two_duplicates_become_one_hint_citing_both_incidents(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    first = approve(client, "INC-D1", service="checkout-api")
    second = approve(client, "INC-D2", service="payments", resolution="new_family")
    proposal = preview(client, "duplicate")[0]
    assert set(proposal["family_ids"]) == {first, second} and proposal["change"]["action"] == "consolidate"
    client.request("POST", f"/v1/governance/proposals/{proposal['proposal_id']}/execute")
    hints = client.briefing({**QUESTION, "services": ["checkout-api", "payments"]})["hints"]
    assert len(hints) == 1 and set(hints[0]["source_incidents"]) == {"INC-D1", "INC-D2"}
    again = client.request("POST", f"/v1/governance/proposals/{proposal['proposal_id']}/execute")
    assert again["already_executed"] is True


def test_a_thrice_refuted_record_is_proposed_low_confidence(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    family = approve(client, "INC-R0")
    for i in range(3):
        briefing = client.briefing(QUESTION)
        client.feedback(briefing["briefing_id"], family, "refuted", incident_id=f"INC-R{i + 1}")
    eventually(lambda: client.record(family)["usage"]["refuted"] == 3)
    proposal = next(p for p in preview(client, "low_confidence") if family in p["family_ids"])
    assert proposal["change"] == {"action": "retract"} and "refuted 3 times" in proposal["reason"]


def test_a_moved_family_is_409_and_agents_cannot_govern(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    first = approve(client, "INC-M1", service="checkout-api")
    approve(client, "INC-M2", service="payments", resolution="new_family")
    proposal = preview(client, "duplicate")[0]
    client.record_op(first, "supersede", {"summary": "pool exhausted by the nightly report query",
                                          "root_cause": "connection pool exhausted by slow queries",
                                          "reason": "clearer"})
    with pytest.raises(ApiError) as moved:
        client.request("POST", f"/v1/governance/proposals/{proposal['proposal_id']}/execute")
    assert moved.value.status == 409 and "moved since the preview" in str(moved.value)
    agent = tenant_client(role="agent", tenant=getattr(client, "tenant"))  # noqa: B009
    with pytest.raises(ApiError) as refused:
        agent.request("POST", "/v1/governance/preview", json={})
    assert refused.value.status == 403
    with pytest.raises(ApiError) as bad:
        client.request("POST", "/v1/governance/preview", json={"jobs": ["delete_everything"]})
    assert bad.value.status == 422 and bad.value.field is not None and bad.value.field.startswith("jobs")


def test_the_worker_expires_by_policy_and_only_proposes_the_rest(tenant_client: TenantFactory,
                                                                 settings: Settings) -> None:
    client = tenant_client(role="reviewer")
    client.append(resolved_incident("INC-W1", service="search"))
    cand = eventually(lambda: client.candidates(incident_id="INC-W1", state="pending"))[0]
    until = datetime.now(UTC) + timedelta(seconds=1)
    expiring = str(client.approve(str(cand["candidate_id"]), edits={"valid_until": until.isoformat()})["family_id"])
    approve(client, "INC-W2", service="checkout-api")
    approve(client, "INC-W3", service="payments", resolution="new_family")
    time.sleep(max(0.0, (until - datetime.now(UTC)).total_seconds()) + 0.5)
    db = Database(settings.database_url, max_size=2)
    db.open()
    try:
        counts = GovernanceWorker(db, settings).tick([getattr(client, "tenant")])  # noqa: B009
    finally:
        db.close()
    # expire (1) + stale (3: the factory's evidence is from March) + duplicate (1); only expire executes
    assert counts == {"tenants": 1, "proposals": 5, "executed": 1, "conflicts": 0}
    assert client.record(expiring)["state"] == "expired"
    open_ = client.request("GET", "/v1/governance/proposals", params={"state": "proposed"})["proposals"]
    assert sorted(p["kind"] for p in open_) == ["duplicate", "stale", "stale", "stale"]  # reviewers decide these
