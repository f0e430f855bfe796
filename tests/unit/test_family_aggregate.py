"""The family aggregate (`services.memory.family`) alone: every move from every family state, legal or not, and
what each legal move changes (state, pointer, version states, the version to write, the one audit entry)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from schemas.memory import FamilyState, VersionContent, VersionState
from services.common.errors import Conflict
from services.memory import family
from services.memory.family import FamilyHead, IllegalTransition, Move, Transition

FAMILY = uuid.UUID("00000000-0000-0000-0000-000000000001")
CANDIDATE = uuid.UUID("00000000-0000-0000-0000-0000000000c1")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
CONTENT = VersionContent.model_validate({
    "memory_type": "semantic", "level": "long", "authority": "clue", "summary": "pool exhausted",
    "canonical_content": "db pool exhausted after deploy", "root_cause": "pool too small",
    "root_cause_category": "db_connection_pool", "services": ["checkout-api"], "signals": ["db_pool_saturation"],
    "confidence": 0.8, "valid_from": NOW})
HASH = family.content_hash(CONTENT)
CURRENT, NEXT = 3, 5  # the family points at version 3; its highest version is 4 (an older rollback), so 5 is next


def head(state: FamilyState) -> FamilyHead:
    return FamilyHead(family_id=FAMILY, project="default", memory_type="semantic", state=state,
                      current_version=CURRENT, created_at=NOW)


MOVES: dict[str, Callable[[FamilyHead], Transition]] = {
    "approve_version": lambda h: family.append(h, Move.APPROVE_VERSION, CONTENT, next_version=NEXT,
                                               candidate_id=CANDIDATE),
    "supersede": lambda h: family.append(h, Move.SUPERSEDE, CONTENT, next_version=NEXT),
    "correct": lambda h: family.append(h, Move.CORRECT, CONTENT, next_version=NEXT, expected_version=CURRENT),
    "consolidate": lambda h: family.append(h, Move.CONSOLIDATE, CONTENT, next_version=NEXT),
    "rollback": lambda h: family.rollback(h, 1, CONTENT, next_version=NEXT),
    "rollback_to_current": lambda h: family.rollback(h, CURRENT, CONTENT, next_version=NEXT),
    "retract": lambda h: family.end(h, Move.RETRACT),
    "expire": lambda h: family.end(h, Move.EXPIRE),
    "governance_retracted": lambda h: family.end(h, Move.GOVERNANCE_RETRACT),
    "governance_expired": lambda h: family.end(h, Move.GOVERNANCE_EXPIRE),
    "consolidated": lambda h: family.consolidated(h, f"{uuid.UUID(int=9)}:2"),
    "reactivate": lambda h: family.reactivate(h),
    "reverify_requested": lambda h: family.reverify(h),
}

A, R, E, C = FamilyState.ACTIVE, FamilyState.RETRACTED, FamilyState.EXPIRED, FamilyState.CONSOLIDATED
# the legal table: move -> {from state: state after}; every other (move, state) pair is an IllegalTransition
LEGAL: dict[str, dict[FamilyState, FamilyState]] = {
    "approve_version": {A: A}, "supersede": {A: A}, "correct": {A: A}, "consolidate": {A: A},
    "rollback": {A: A, R: A, E: A, C: A},
    "rollback_to_current": {R: A, E: A, C: A},  # reviving a family at its own current content is a rollback too
    "retract": {A: R, C: R}, "expire": {A: E, C: E},
    "governance_retracted": {A: R}, "governance_expired": {A: E},
    "consolidated": {A: C},
    "reactivate": {R: A, E: A, C: A},
    "reverify_requested": {A: A},
}
APPENDING = {"approve_version", "supersede", "correct", "consolidate", "rollback", "rollback_to_current"}
CASES = [(m, s) for m in MOVES for s in FamilyState]


def test_the_table_covers_every_move_of_the_aggregate() -> None:
    covered = {m.removesuffix("_to_current") for m in MOVES} | {"approve"}
    assert covered == {m.value for m in Move}


@pytest.mark.parametrize(("move", "state"), CASES, ids=[f"{m}-from-{s}" for m, s in CASES])
def test_every_move_from_every_state(move: str, state: FamilyState) -> None:
    if state not in LEGAL[move]:
        with pytest.raises(IllegalTransition) as refused:
            MOVES[move](head(state))
        assert isinstance(refused.value, Conflict)  # a 409, as before the aggregate
        return
    change = MOVES[move](head(state))
    assert change.family_id == FAMILY and change.project == "default"
    assert change.state == LEGAL[move][state]
    assert change.creates is None
    audit = change.audit
    assert audit.action.value == move.removesuffix("_to_current")
    if move in APPENDING:
        assert change.pointer == (CURRENT, NEXT)
        assert change.version_states == ((CURRENT, VersionState.SUPERSEDED),)
        assert change.new_version is not None
        assert (change.new_version.version, change.new_version.supersedes) == (NEXT, CURRENT)
        assert change.new_version.content == CONTENT
        assert change.new_version.candidate_id == (CANDIDATE if move == "approve_version" else None)
        assert audit.version == NEXT
        assert audit.before == {"version": CURRENT, "state": state.value}
        expected_after: dict[str, Any] = {"version": NEXT, "state": "active", "content_hash": HASH}
        if move.startswith("rollback"):
            expected_after["rolled_back_to"] = 1 if move == "rollback" else CURRENT
        assert audit.after == expected_after
        assert not change.family_state_changes
        return
    assert change.new_version is None and change.pointer is None
    assert audit.version == CURRENT
    if move == "reverify_requested":
        assert change.version_states == () and not change.family_state_changes
        assert audit.before is None and audit.after is None
        return
    assert change.family_state_changes
    version_state = VersionState.SUPERSEDED if move == "consolidated" else VersionState(change.state.value)
    assert change.version_states == ((CURRENT, version_state),)
    assert audit.before == {"state": state.value, "version": CURRENT}
    if move == "consolidated":
        assert audit.after == {"state": "consolidated", "into": f"{uuid.UUID(int=9)}:2"}
    else:
        assert audit.after == {"state": change.state.value, "version": CURRENT}


def test_approve_creates_the_family_with_its_first_version() -> None:
    change = family.approve(FAMILY, "default", CONTENT, CANDIDATE)
    assert (change.creates, change.state, change.pointer, change.version_states) == ("semantic", A, None, ())
    assert change.new_version == family.NewVersion(1, CONTENT, None, CANDIDATE)
    assert change.audit == family.Audit(Move.APPROVE, 1, None, {"version": 1, "state": "active",
                                                                "content_hash": HASH})


def test_a_version_drafted_against_an_older_one_is_refused() -> None:
    with pytest.raises(IllegalTransition, match="drafted against version 2, but the current version is 3"):
        family.append(head(A), Move.SUPERSEDE, CONTENT, next_version=NEXT, expected_version=2)


@pytest.mark.parametrize("state", [R, E])
def test_the_refusals_say_what_they_said_before(state: FamilyState) -> None:
    with pytest.raises(IllegalTransition, match=f"family is already {state}"):
        family.end(head(state), Move.RETRACT)
    with pytest.raises(IllegalTransition, match=f"family is {state}; roll back to a version to revive it"):
        family.append(head(state), Move.SUPERSEDE, CONTENT, next_version=NEXT)
    with pytest.raises(IllegalTransition, match=f"version {CURRENT} is already current"):
        family.rollback(head(A), CURRENT, CONTENT, next_version=NEXT)


def test_a_move_of_the_wrong_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        family.append(head(A), Move.RETRACT, CONTENT, next_version=NEXT)
    with pytest.raises(ValueError):
        family.end(head(A), Move.SUPERSEDE)
