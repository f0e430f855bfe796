"""Property-based test of the governed store (hypothesis state machine over the real database).

Random sequences of approve / supersede / correct / retract / expire / rollback, checking after every
step: exactly one current version per family and only it can be active; versions never change;
every transition has exactly one audit row; rollback restores content byte for byte; retracted,
superseded and expired versions never reach a briefing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from schemas.api import BriefingRequest
from schemas.views import VersionView
from services.common.errors import Conflict, InvalidInput
from services.memory import records
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration
CATEGORIES = ["db_connection_pool", "certificate_expiry", "dns"]
SERVICES = ["checkout-api", "payments-api"]


class FamilyMachine(RuleBasedStateMachine):
    svc: GovernedServices

    def __init__(self) -> None:
        super().__init__()
        self.tenant = f"prop-{uuid.uuid4().hex[:10]}"
        self.who = reviewer(self.tenant)
        self.hashes: dict[tuple[str, int], str] = {}  # (family, version) -> content hash when written
        self.transitions: dict[str, int] = {}
        self.state: dict[str, str] = {}

    # ------------------------------------------------------------------ helpers
    def _versions(self, family: str) -> list[VersionView]:
        with self.svc.db.tenant_transaction(self.tenant) as cur:
            return records.list_versions(cur, uuid.UUID(family))

    def _remember(self, family: str) -> None:
        for v in self._versions(family):
            self.hashes.setdefault((family, v.version), v.content_hash)
        self.transitions[family] = self.transitions.get(family, 0) + 1

    def _family(self, data: st.DataObject) -> str:
        order = list(self.state)  # insertion order: the same for every replay of the same steps
        return order[data.draw(st.integers(0, len(order) - 1))]

    # ------------------------------------------------------------------ rules
    @rule(category=st.sampled_from(CATEGORIES), service=st.sampled_from(SERVICES), signal=st.sampled_from(["a", "b"]))
    def approve(self, category: str, service: str, signal: str) -> None:
        cid = seed_candidate(self.svc.db, self.tenant, draft(category, service, signal=signal))
        out = self.svc.review.approve(self.who, cid, note="prop", edits=None)
        family = str(out.family_id)
        self.state[family] = "active"
        self._remember(family)

    @precondition(lambda self: bool(self.state))
    @rule(data=st.data(), text=st.text(min_size=1, max_size=30), action=st.sampled_from(["supersede", "correct"]))
    def supersede(self, data: st.DataObject, text: str, action: str) -> None:
        family = self._family(data)
        try:
            self.svc.memory.supersede(self.who, uuid.UUID(family), {"summary": text}, "prop", action=action)
        except InvalidInput:
            assert "\x00" in text  # the only text the store refuses
            return
        except Conflict:
            assert self.state[family] != "active"
            return
        assert self.state[family] == "active"
        self._remember(family)

    @precondition(lambda self: bool(self.state))
    @rule(data=st.data(), terminal=st.sampled_from(["retract", "expire"]))
    def end(self, data: st.DataObject, terminal: str) -> None:
        family = self._family(data)
        op = self.svc.memory.retract if terminal == "retract" else self.svc.memory.expire
        try:
            op(self.who, uuid.UUID(family), "prop")
        except Conflict:
            assert self.state[family] != "active"
            return
        self.state[family] = "retracted" if terminal == "retract" else "expired"
        self._remember(family)

    @precondition(lambda self: bool(self.state))
    @rule(data=st.data())
    def rollback(self, data: st.DataObject) -> None:
        family = self._family(data)
        versions = self._versions(family)
        target = data.draw(st.sampled_from([v.version for v in versions]))
        try:
            out = self.svc.memory.rollback(self.who, uuid.UUID(family), target, "prop")
        except Conflict:
            current = max(v.version for v in versions)
            assert target == current and self.state[family] == "active"
            return
        self.state[family] = "active"
        self._remember(family)
        new = {v.version: v for v in self._versions(family)}
        assert new[out.version].content_hash == new[target].content_hash
        assert records.content_of(new[out.version]) == records.content_of(new[target])

    # ------------------------------------------------------------------ invariants
    @invariant()
    def one_current_version_and_immutable_history(self) -> None:
        for family, expected_state in self.state.items():
            record = self.svc.memory.get_record(self.who, uuid.UUID(family)).model_dump()
            versions = record["versions"]
            current = record["current_version"]
            assert record["state"] == expected_state
            assert [v["version"] for v in versions] == list(range(1, len(versions) + 1))
            active = [v["version"] for v in versions if v["state"] == "active"]
            assert active == ([current] if expected_state == "active" else [])
            for stored in self._versions(family):  # recompute each hash from the stored content
                assert self.hashes[(family, stored.version)] == stored.content_hash
                assert records.content_hash(records.content_of(stored)) == stored.content_hash
            assert len(record["audit"]) == self.transitions[family]

    @invariant()
    def briefings_only_cite_current_active_versions(self) -> None:
        if not self.state:
            return
        answer = self.svc.briefing.brief(self.who, BriefingRequest(
            alert={"name": "Alert"}, services=SERVICES, signals=["a", "b"], limit=10))
        for hint in answer.hints:
            assert self.state[str(hint.family_id)] == "active"
            record = self.svc.memory.get_record(self.who, hint.family_id).model_dump()
            assert hint.version == record["current_version"]


def test_random_lifecycles_keep_the_invariants(fresh_database: Callable[[], str]) -> None:
    svc = GovernedServices(fresh_database())
    FamilyMachine.svc = svc
    try:
        run_state_machine_as_test(FamilyMachine, settings=settings(
            max_examples=25, stateful_step_count=20, deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    finally:
        svc.close()
