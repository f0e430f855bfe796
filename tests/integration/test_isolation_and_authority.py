"""Another tenant's rows are invisible to every endpoint; authority rules hold at approval."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from schemas.memory import ApprovalEdits
from services.cli.client import ApiError
from services.common.errors import Forbidden
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def test_every_endpoint_hides_other_tenants(tenant_client: TenantFactory) -> None:
    alice, mallory = tenant_client(), tenant_client(role="admin")
    alice.append(resolved_incident("INC-1"))
    cand = eventually(lambda: alice.candidates(incident_id="INC-1"))[0]
    cid = str(cand["candidate_id"])
    family = str(alice.approve(cid)["family_id"])
    briefing = alice.briefing({"signals": ["db_pool_saturation"], "services": ["checkout-api"]})
    assert briefing["hints"]

    probes = [
        ("GET", "/v1/incidents/INC-1/episode", None),
        ("GET", f"/v1/candidates/{cid}", None),
        ("POST", f"/v1/candidates/{cid}/approve", {}),
        ("POST", f"/v1/candidates/{cid}/reject", {"reason": "x"}),
        ("GET", f"/v1/records/{family}", None),
        ("GET", f"/v1/records/{family}/lineage", None),
        ("POST", f"/v1/records/{family}/retract", {"reason": "x"}),
        ("POST", f"/v1/records/{family}/expire", {"reason": "x"}),
        ("POST", f"/v1/records/{family}/supersede", {"summary": "x", "reason": "x"}),
        ("POST", f"/v1/records/{family}/rollback", {"to_version": 1, "reason": "x"}),
        ("POST", f"/v1/briefings/{briefing['briefing_id']}/feedback", {"family_id": family, "verdict": "refuted"}),
    ]
    for method, path, body in probes:
        with pytest.raises(ApiError) as err:
            mallory.request(method, path, json=body)
        assert err.value.status == 404, (method, path, err.value)
    assert mallory.candidates() == [] and mallory.records() == []
    assert mallory.records(incident_id="INC-1") == []
    assert mallory.briefing({"signals": ["db_pool_saturation"], "services": ["checkout-api"]})["hints"] == []
    assert alice.record(family)["state"] == "active"  # nothing the probes did reached alice's data


def test_project_bound_keys_see_only_their_project(tenant_client: TenantFactory, api) -> None:
    checkout = tenant_client(project="checkout")
    billing_key = api.create_key(checkout.tenant, "reviewer", "billing")  # type: ignore[attr-defined]
    checkout.append(resolved_incident("INC-2"))
    eventually(lambda: checkout.candidates(incident_id="INC-2"))
    billing = type(checkout)(checkout.http.base_url.__str__(), billing_key)
    assert billing.candidates() == [] and billing.episode("INC-2") is None


def test_untrusted_evidence_caps_authority_and_permanent_is_admin_only(fresh_database: Callable[[], str]) -> None:
    svc = GovernedServices(fresh_database())
    tenant = f"auth-{uuid.uuid4().hex[:8]}"
    try:
        cid = seed_candidate(svc.db, tenant, draft("dns", "edge", trust="untrusted_text"))
        out = svc.review.approve(reviewer(tenant), cid, note=None, edits=ApprovalEdits(authority="rule"))
        current = svc.memory.get_record(reviewer(tenant), out.family_id).model_dump()["current"]
        assert current["authority"] == "clue"

        cid2 = seed_candidate(svc.db, tenant, draft("tls", "edge"))
        with pytest.raises(Forbidden):
            svc.review.approve(reviewer(tenant), cid2, note=None, edits=ApprovalEdits(level="permanent"))
        out2 = svc.review.approve(reviewer(tenant, role="admin"), cid2, note=None,
                                  edits=ApprovalEdits(level="permanent", authority="suggestion"))
        current2 = svc.memory.get_record(reviewer(tenant), out2.family_id).model_dump()["current"]
        assert (current2["level"], current2["authority"]) == ("permanent", "suggestion")
    finally:
        svc.close()


def test_conflicting_candidate_waits_for_an_explicit_decision(fresh_database: Callable[[], str]) -> None:
    svc = GovernedServices(fresh_database())
    tenant = f"conf-{uuid.uuid4().hex[:8]}"
    who = reviewer(tenant)
    try:
        first = seed_candidate(svc.db, tenant, draft("db_connection_pool", "checkout-api", signal="cpu_high"))
        family = svc.review.approve(who, first, note=None, edits=None).family_id
        contra = draft("db_connection_pool", "checkout-api", signal="db_pool_saturation")
        contra.misleading_signals.append("cpu_high")  # the new incident says the family's signal misleads
        cid = seed_candidate(svc.db, tenant, contra)
        listed = svc.review.get_candidate(who, cid).model_dump()
        assert listed["proposal"]["kind"] == "conflict" and listed["proposal"]["family_id"] == family
        with pytest.raises(Exception) as err:
            svc.review.approve(who, cid, note=None, edits=None)
        assert "contradicts" in str(err.value)
        out = svc.review.approve(who, cid, note="read both", edits=None, resolution="new_version")
        assert out.model_dump() == {"family_id": family, "version": 2}
    finally:
        svc.close()
