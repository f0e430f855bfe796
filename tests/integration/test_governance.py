"""Governance over a real PostgreSQL (fresh database per test): preview writes proposals only; execute
re-checks its basis under leases; a consolidation keeps every source incident and reverts byte for byte."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.common.auth import Principal
from services.common.errors import Conflict
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration


def learn(svc: GovernedServices, who: Principal, service: str, category: str = "db_connection_pool") -> uuid.UUID:
    cid = seed_candidate(svc.db, who.scoped_tenant, draft(category, service, signal="db_pool_saturation"))
    return uuid.UUID(str(svc.review.approve(who, cid, note=None, edits=None, resolution="new_family").family_id))


def snapshot(svc: GovernedServices, tenant: str) -> dict[str, Any]:
    with svc.db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT family_id, current_version, state FROM memory_families ORDER BY family_id")
        families = [tuple(r.values()) for r in cur.fetchall()]
        cur.execute("SELECT family_id, version, state, content_hash FROM memory_versions ORDER BY 1, 2")
        versions = [tuple(r.values()) for r in cur.fetchall()]
        cur.execute("SELECT count(*) AS n FROM memory_audit")
        audit = cur.fetchone()
        cur.execute("SELECT count(*) AS n FROM lineage_edges")
        edges = cur.fetchone()
    assert audit is not None and edges is not None
    return {"families": families, "versions": versions, "audit": audit["n"], "edges": edges["n"]}


def incidents_of_active(svc: GovernedServices, tenant: str) -> set[str]:
    with svc.db.tenant_transaction(tenant) as cur:
        cur.execute("""SELECT v.source_incidents FROM memory_families f JOIN memory_versions v
                       ON v.family_id = f.family_id AND v.version = f.current_version WHERE f.state = 'active'""")
        return {i for r in cur.fetchall() for i in r["source_incidents"]}


def test_preview_moves_nothing_and_keeps_one_open_proposal_per_finding(svc: GovernedServices) -> None:
    who = reviewer(f"g-{uuid.uuid4().hex[:8]}")
    a, b = learn(svc, who, "checkout-api"), learn(svc, who, "payments")
    before = snapshot(svc, who.scoped_tenant)
    first = svc.governance.preview(who, ["duplicate"])
    assert [p.kind for p in first.proposals] == ["duplicate"] and set(first.proposals[0].family_ids) == {a, b}
    second = svc.governance.preview(who, ["duplicate"])
    assert second.run_id != first.run_id and second.proposals[0].proposal_id == first.proposals[0].proposal_id
    assert snapshot(svc, who.scoped_tenant) == before


def test_consolidation_executes_once_keeps_sources_and_reverts_byte_for_byte(svc: GovernedServices) -> None:
    who = reviewer(f"g-{uuid.uuid4().hex[:8]}")
    learn(svc, who, "checkout-api")
    learn(svc, who, "payments")
    incidents = incidents_of_active(svc, who.scoped_tenant)
    before = snapshot(svc, who.scoped_tenant)
    proposal = svc.governance.preview(who, ["duplicate"]).proposals[0]
    done = svc.governance.execute(who, proposal.proposal_id)
    keeper, merged = done.wrote[0], done.wrote[1]
    assert keeper.version == 2 and keeper.state == "active" and merged.state == "consolidated"
    assert incidents_of_active(svc, who.scoped_tenant) == incidents  # every source incident stays reachable
    lineage = svc.memory.lineage(who, keeper.family_id).model_dump()["edges"]
    assert {"relation": "consolidates", "dst_id": f"{merged.family_id}:{merged.version}"} in [
        {"relation": e["relation"], "dst_id": e["dst_id"]} for e in lineage]
    after = snapshot(svc, who.scoped_tenant)
    again = svc.governance.execute(who, proposal.proposal_id)
    assert again.already_executed and again.wrote == done.wrote and snapshot(svc, who.scoped_tenant) == after

    svc.governance.revert(who, proposal.proposal_id, "merged too eagerly")
    restored = snapshot(svc, who.scoped_tenant)
    original = {(f, v): h for f, v, _, h in before["versions"]}
    current = {f: (v, s) for f, v, s in restored["families"]}
    for family_id, (version, state) in current.items():
        assert state == "active"
        first_hash = original[(family_id, 1)]
        now_hash = next(h for f, v, _, h in restored["versions"] if f == family_id and v == version)
        assert now_hash == first_hash  # the content as it was before the consolidation, byte for byte


def test_a_moved_basis_is_409_and_writes_nothing(svc: GovernedServices) -> None:
    who = reviewer(f"g-{uuid.uuid4().hex[:8]}")
    a = learn(svc, who, "checkout-api")
    learn(svc, who, "payments")
    proposal = svc.governance.preview(who, ["duplicate"]).proposals[0]
    svc.memory.supersede(who, a, {"summary": "pool exhausted by a slow report query; add a statement timeout",
                                  "root_cause": "db_connection_pool root cause"}, "clearer")
    before = snapshot(svc, who.scoped_tenant)
    with pytest.raises(Conflict, match="moved since the preview"):
        svc.governance.execute(who, proposal.proposal_id)
    assert snapshot(svc, who.scoped_tenant) == before
    again = svc.governance.preview(who, ["duplicate"])
    assert svc.governance.get(who, proposal.proposal_id).state == "stale"
    assert again.proposals and again.proposals[0].proposal_id != proposal.proposal_id


def test_dismissed_proposals_are_not_executed(svc: GovernedServices) -> None:
    who = reviewer(f"g-{uuid.uuid4().hex[:8]}")
    learn(svc, who, "checkout-api")
    learn(svc, who, "payments")
    proposal = svc.governance.preview(who, ["duplicate"]).proposals[0]
    assert svc.governance.dismiss(who, proposal.proposal_id, "different teams own these").state == "dismissed"
    with pytest.raises(Conflict, match="dismissed"):
        svc.governance.execute(who, proposal.proposal_id)
    agent = Principal(key_id=uuid.uuid4(), tenant=who.tenant, project=None, role="agent")
    with pytest.raises(Exception, match="reviewer"):
        svc.governance.preview(agent)


def test_promote_turns_a_recurring_pattern_into_one_long_term_record(svc: GovernedServices) -> None:
    who = reviewer(f"g-{uuid.uuid4().hex[:8]}")
    first = seed_candidate(svc.db, who.scoped_tenant, draft("dns_resolution", "edge", signal="nxdomain"))
    second = seed_candidate(svc.db, who.scoped_tenant, draft("dns_resolution", "api", signal="nxdomain"))
    proposal = svc.governance.preview(who, ["promote"]).proposals[0]
    assert proposal.kind == "promote" and set(proposal.change["candidates"]) == {str(first), str(second)}
    family = svc.governance.execute(who, proposal.proposal_id).wrote[0]
    record = svc.memory.get_record(who, family.family_id).model_dump()["current"]
    assert len(record["source_incidents"]) == 2 and record["confidence"] == pytest.approx(0.75)
    assert record["level"] == "long"
    states = {c.candidate_id: c.state for c in svc.review.list_candidates(who, None, None).candidates}
    assert states == {first: "approved", second: "approved"}


OPS = st.lists(st.sampled_from(["learn", "learn", "supersede", "preview", "preview", "execute", "execute", "revert"]),
               min_size=6, max_size=16)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, data=st.data())
def test_random_histories_keep_the_invariants(svc: GovernedServices, ops: list[str], data: st.DataObject) -> None:
    who = reviewer(f"h-{uuid.uuid4().hex[:8]}")
    families = [learn(svc, who, "s0")]
    learned = incidents_of_active(svc, who.scoped_tenant)
    for op in ops:
        before = snapshot(svc, who.scoped_tenant)
        if op == "learn":
            families.append(learn(svc, who, f"s{len(families)}"))
            learned = learned | incidents_of_active(svc, who.scoped_tenant)
        elif op == "supersede":
            target = data.draw(st.sampled_from(families))
            try:
                svc.memory.supersede(who, target, {"summary": f"restated {uuid.uuid4().hex[:4]}",
                                                   "root_cause": "db_connection_pool root cause"}, "restate")
            except Conflict:
                assert snapshot(svc, who.scoped_tenant) == before
        elif op == "preview":
            svc.governance.preview(who)
            after = snapshot(svc, who.scoped_tenant)
            assert after["families"] == before["families"] and after["versions"] == before["versions"]
        else:
            state = "proposed" if op == "execute" else "executed"
            open_ = svc.governance.proposals(who, state, None)
            if not open_:
                continue
            chosen = data.draw(st.sampled_from(open_)).proposal_id
            try:
                if op == "execute":
                    svc.governance.execute(who, chosen)
                else:
                    svc.governance.revert(who, chosen, "property test")
            except Conflict:
                assert snapshot(svc, who.scoped_tenant) == before  # a refused write writes nothing
        assert learned <= incidents_of_active(svc, who.scoped_tenant) | expired_incidents(svc, who.scoped_tenant)


def expired_incidents(svc: GovernedServices, tenant: str) -> set[str]:
    """Incidents of families retired by a governance job other than consolidation (none in these histories
    except never_hit/stale/expire, which do not fire on fresh records)."""
    with svc.db.tenant_transaction(tenant) as cur:
        cur.execute("""SELECT v.source_incidents FROM memory_families f JOIN memory_versions v
                       ON v.family_id = f.family_id AND v.version = f.current_version
                       WHERE f.state IN ('expired', 'retracted')""")
        return {i for r in cur.fetchall() for i in r["source_incidents"]}
