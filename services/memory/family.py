"""The governed family as an aggregate: its states, the legal moves between them, and what each move changes.

Pure: a move takes the family as it is now (`FamilyHead`, read and locked by the caller's transaction) and
returns the `Transition` to persist — the family's new state and pointer, the version states that change, the
version to write, the one audit entry — or raises `IllegalTransition` (a 409). `memory.records.apply` is the only
writer of families, versions and audit rows, and persists a transition as one unit; the memory, review and
governance services call a move here and `records.apply`, never a write of their own.

| move                 | legal from (family state)         | to           | writes                                  |
|----------------------|-----------------------------------|--------------|-----------------------------------------|
| approve              | no family yet                     | active       | the family, version 1                   |
| approve_version      | active                            | active       | version n+1, pointer n -> n+1,          |
| supersede, correct   | active                            | active       |   version n superseded                  |
| consolidate (keeper) | active                            | active       |   (each of these four)                  |
| rollback             | any, unless its target is current | active       | the same, with the target's content     |
| retract, expire      | active, consolidated              | retracted/.. | the current version's state             |
| governance_retracted | active                            | retracted    | the current version's state             |
| governance_expired   | active                            | expired      | the current version's state             |
| consolidated         | active                            | consolidated | the current version superseded          |
| reactivate           | retracted, expired, consolidated  | active       | the current version active (a revert)   |
| reverify_requested   | active                            | active       | the audit entry only                    |
Every move writes exactly one audit entry.

A move that appends a version checks `expected_version` (the version a writer drafted against) against the
current one; the pointer itself moves by compare-and-set when persisted, so a concurrent writer still gets a 409.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from schemas.ledger import canonical_json
from schemas.memory import TERMINAL_FAMILY_STATES, FamilyState, VersionContent, VersionState
from services.common.errors import Conflict


class IllegalTransition(Conflict):
    """The move is not legal from the family's current state (409, like any other conflict)."""


class Move(StrEnum):
    """The moves of a family; each value is the action its audit entry names."""

    APPROVE = "approve"
    APPROVE_VERSION = "approve_version"
    SUPERSEDE = "supersede"
    CORRECT = "correct"
    CONSOLIDATE = "consolidate"
    ROLLBACK = "rollback"
    RETRACT = "retract"
    EXPIRE = "expire"
    GOVERNANCE_RETRACT = "governance_retracted"
    GOVERNANCE_EXPIRE = "governance_expired"
    CONSOLIDATED = "consolidated"
    REACTIVATE = "reactivate"
    REVERIFY = "reverify_requested"


APPENDS = frozenset({Move.APPROVE_VERSION, Move.SUPERSEDE, Move.CORRECT, Move.CONSOLIDATE})
_TERMINAL = {Move.RETRACT: FamilyState.RETRACTED, Move.EXPIRE: FamilyState.EXPIRED,
             Move.GOVERNANCE_RETRACT: FamilyState.RETRACTED, Move.GOVERNANCE_EXPIRE: FamilyState.EXPIRED}


@dataclass(frozen=True)
class FamilyHead:
    """A family's row: its lifecycle state and the pointer to its current version."""

    family_id: UUID
    project: str
    memory_type: str
    state: FamilyState
    current_version: int
    created_at: datetime


@dataclass(frozen=True)
class NewVersion:
    """The version a move writes (immutable once written)."""

    version: int
    content: VersionContent
    supersedes: int | None
    candidate_id: UUID | None = None


@dataclass(frozen=True)
class Audit:
    """The one audit entry of a move (the writer adds tenant, actor and reason)."""

    action: Move
    version: int
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(frozen=True)
class Transition:
    """What one move changes, for `records.apply` to persist in the caller's transaction."""

    family_id: UUID
    project: str
    state: FamilyState  # the family's state after the move
    audit: Audit
    creates: str | None = None  # a new family of this memory type
    new_version: NewVersion | None = None
    pointer: tuple[int, int] | None = None  # (expected, new): the current pointer's compare-and-set
    version_states: tuple[tuple[int, VersionState], ...] = ()
    family_state_changes: bool = False  # the state changes without a pointer move


def content_hash(content: VersionContent) -> str:
    """SHA-256 of the content's canonical JSON; `imported` counts only when set, so the hashes of versions
    written before the field existed are still their content's."""
    return hashlib.sha256(canonical_json(content.model_dump(mode="json", exclude=None if content.imported
                                                            else {"imported"}))).hexdigest()


def approve(family_id: UUID, project: str, content: VersionContent, candidate_id: UUID | None) -> Transition:
    """A reviewed candidate becomes a new family with its first version."""
    return Transition(
        family_id=family_id, project=project, state=FamilyState.ACTIVE, creates=content.memory_type,
        new_version=NewVersion(1, content, None, candidate_id),
        audit=Audit(Move.APPROVE, 1, None, {"version": 1, "state": VersionState.ACTIVE.value,
                                            "content_hash": content_hash(content)}))


def append(head: FamilyHead, move: Move, content: VersionContent, *, next_version: int,
           expected_version: int | None = None, candidate_id: UUID | None = None) -> Transition:
    """A new current version of an active family (supersede, correct, a candidate approved into it, the keeper of
    a consolidation); `next_version` is one past the family's highest version."""
    if move not in APPENDS:
        raise ValueError(f"{move} does not append a version")
    if head.state != FamilyState.ACTIVE:
        raise IllegalTransition(f"family is {head.state}; roll back to a version to revive it")
    return _appended(head, move, content, next_version, expected_version, candidate_id, None)


def rollback(head: FamilyHead, to_version: int, content: VersionContent, *, next_version: int) -> Transition:
    """A new current version whose content is `to_version`'s byte for byte; revives a family in any state."""
    if to_version == head.current_version and head.state == FamilyState.ACTIVE:
        raise IllegalTransition(f"version {to_version} is already current")
    return _appended(head, Move.ROLLBACK, content, next_version, None, None, to_version)


def _appended(head: FamilyHead, move: Move, content: VersionContent, new: int, expected_version: int | None,
              candidate_id: UUID | None, rolled_back_to: int | None) -> Transition:
    current = head.current_version
    if expected_version is not None and expected_version != current:
        raise IllegalTransition(f"drafted against version {expected_version}, but the current version is {current}")
    after: dict[str, Any] = {"version": new, "state": VersionState.ACTIVE.value, "content_hash": content_hash(content)}
    if rolled_back_to:
        after["rolled_back_to"] = rolled_back_to
    return Transition(
        family_id=head.family_id, project=head.project, state=FamilyState.ACTIVE,
        new_version=NewVersion(new, content, current, candidate_id), pointer=(current, new),
        version_states=((current, VersionState.SUPERSEDED),),
        audit=Audit(move, new, {"version": current, "state": head.state.value}, after))


def end(head: FamilyHead, move: Move) -> Transition:
    """Retract or expire: a reviewer's (`retract`, `expire`: any family not already retracted or expired) or
    governance's (`governance_retracted`, `governance_expired`: an active family)."""
    state = _TERMINAL.get(move)
    if state is None:
        raise ValueError(f"{move} does not end a family")
    if head.state in TERMINAL_FAMILY_STATES:
        raise IllegalTransition(f"family is already {head.state}")
    if move in (Move.GOVERNANCE_RETRACT, Move.GOVERNANCE_EXPIRE) and head.state != FamilyState.ACTIVE:
        raise IllegalTransition(f"family is {head.state}; governance ends active families only")
    version = head.current_version
    return _state_change(head, state, VersionState(state.value),
                         Audit(move, version, {"state": head.state.value, "version": version},
                               {"state": state.value, "version": version}))


def consolidated(head: FamilyHead, into: str) -> Transition:
    """An active family merged into a consolidation's keeper (`into`: the keeper's new version, family:version)."""
    if head.state != FamilyState.ACTIVE:
        raise IllegalTransition(f"family is {head.state}; only an active family is consolidated")
    version = head.current_version
    return _state_change(head, FamilyState.CONSOLIDATED, VersionState.SUPERSEDED,
                         Audit(Move.CONSOLIDATED, version, {"state": FamilyState.ACTIVE.value, "version": version},
                               {"state": FamilyState.CONSOLIDATED.value, "into": into}))


def reactivate(head: FamilyHead) -> Transition:
    """A family that governance retracted, expired or consolidated becomes active again (a revert)."""
    if head.state == FamilyState.ACTIVE:
        raise IllegalTransition("family is already active")
    version = head.current_version
    return _state_change(head, FamilyState.ACTIVE, VersionState.ACTIVE,
                         Audit(Move.REACTIVATE, version, {"state": head.state.value, "version": version},
                               {"state": FamilyState.ACTIVE.value, "version": version}))


def reverify(head: FamilyHead) -> Transition:
    """A request to verify an active family again: an audit entry, no change of state."""
    if head.state != FamilyState.ACTIVE:
        raise IllegalTransition(f"family is {head.state}; only an active family is re-verified")
    return Transition(family_id=head.family_id, project=head.project, state=head.state,
                      audit=Audit(Move.REVERIFY, head.current_version, None, None))


def _state_change(head: FamilyHead, state: FamilyState, version_state: VersionState, audit: Audit) -> Transition:
    return Transition(family_id=head.family_id, project=head.project, state=state,
                      version_states=((head.current_version, version_state),), family_state_changes=True,
                      audit=audit)
