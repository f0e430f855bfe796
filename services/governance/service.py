"""GovernanceService: preview, execute, dismiss and revert of governance proposals.

Transactions (each public method owns them; none is hidden in a helper):
- preview: ONE transaction — read the facts, run the pure jobs, mark open proposals whose basis moved as
  `stale`, write the run and its proposals. It changes no family, version or pointer.
- execute: (1) read the proposal; (2) take a lease on every family of it in its own committed transaction
  (another worker's overlapping execute is a 409 until the lease is released or expires); (3) ONE
  transaction that locks the proposal and the families, re-checks `based_on` against the current
  pointers (409 when anything moved), writes versions/states, audit and lineage, and marks the proposal
  executed with what it wrote; (4) release the leases. A second execute returns the stored result and
  writes nothing.
- dismiss / revert: one transaction each.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from schemas.api import ExecuteResponse, PreviewResponse, ProposalView, Wrote
from schemas.memory import CandidateState, FamilyState, ProposalState
from services.common.auth import Principal
from services.common.db import Cursor, Database
from services.common.errors import Conflict, NotFound
from services.common.settings import Settings
from services.governance import store
from services.governance.jobs import JOBS, Candidate, Family, Policy, propose
from services.governance.store import StoredProposal
from services.memory import family, records
from services.memory.content import consolidate, from_draft
from services.memory.family import FamilyHead, Move
from services.memory.service import MemoryService
from services.review.service import ReviewService

LEASE_TTL = timedelta(seconds=60)
TERMINAL = {"expire": Move.GOVERNANCE_EXPIRE, "retract": Move.GOVERNANCE_RETRACT}


def view(row: StoredProposal) -> ProposalView:
    return row.view()


class GovernanceService:
    def __init__(self, db: Database, settings: Settings, memory: MemoryService, review: ReviewService) -> None:
        self.db = db
        self.settings = settings
        self.memory = memory
        self.review = review

    def policy(self, now: datetime) -> Policy:
        s = self.settings
        return Policy(now=now, stale_after_days=s.stale_after_days, never_hit_days=s.governance_never_hit_days,
                        min_refutations=s.governance_min_refutations,
                        duplicate_similarity=s.governance_duplicate_similarity)

    # ------------------------------------------------------------------ preview
    def preview(self, principal: Principal, jobs: list[str] | None = None,
                now: datetime | None = None) -> PreviewResponse:
        principal.require("reviewer")
        kinds = list(dict.fromkeys(jobs or JOBS))
        now = now or datetime.now(UTC)
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            families = store.families(cur, principal.project)
            candidates = store.pending_candidates(cur, principal.project)
            self._mark_stale(cur, principal, kinds, families, candidates)
            run_id = store.insert_run(cur, principal.scoped_tenant, principal.project, kinds, principal.actor)
            found = propose(kinds, families, candidates, self.policy(now))
            rows = [store.insert_proposal(cur, principal.scoped_tenant, run_id, p) for p in found]
        return PreviewResponse(run_id=run_id, proposals=[view(r) for r in rows])

    @staticmethod
    def _mark_stale(cur: Cursor, principal: Principal, kinds: list[str], families: list[Family],
                    candidates: list[Candidate]) -> None:
        current = {(f.family_id, f.version) for f in families}
        pending = {c.candidate_id for c in candidates}
        for row in store.open_proposals(cur, kinds, principal.project):
            wanted = {UUID(c) for c in row.change.get("candidates", [])}
            if not set(row.based_on) <= current or not wanted <= pending:
                store.mark_stale(cur, row.proposal_id, principal.actor, "its basis moved since the preview")

    # ------------------------------------------------------------------ reads
    def proposals(self, principal: Principal, state: str | None, kind: str | None,
                  limit: int = 200) -> list[ProposalView]:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            return [view(r) for r in store.list_proposals(cur, state, kind, principal.project, limit)]

    def get(self, principal: Principal, proposal_id: UUID) -> ProposalView:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            return view(self._proposal(cur, principal, proposal_id, lock=False))

    def detail(self, principal: Principal, proposal_id: UUID) -> dict[str, Any]:
        """A proposal with the current versions it names and, for a consolidation, the version it would write
        (computed, not stored): what a reviewer reads before executing."""
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self._proposal(cur, principal, proposal_id, lock=False)
            versions = [records.get_version(cur, f, v) for f, v in row.based_on]
        merged = None
        if row.change["action"] == "consolidate" and all(versions):
            contents = [records.content_of(v) for v in versions if v is not None]
            merged = consolidate(contents[0], contents[1:], datetime.now(UTC)).model_dump(mode="json")
        return {"proposal": view(row), "versions": versions, "consolidated": merged}

    # ------------------------------------------------------------------ execute
    def execute(self, principal: Principal, proposal_id: UUID, now: datetime | None = None) -> ExecuteResponse:
        principal.require("reviewer")
        now = now or datetime.now(UTC)
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self._proposal(cur, principal, proposal_id, lock=False)
        if row.state == ProposalState.EXECUTED:
            return self._done(row, already=True)
        if row.state != ProposalState.PROPOSED:
            raise Conflict(f"this proposal is {row.state}; run a new preview")
        with self._leases(principal, row, now), self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self._proposal(cur, principal, proposal_id, lock=True)
            if row.state == ProposalState.EXECUTED:
                return self._done(row, already=True)
            if row.state != ProposalState.PROPOSED:
                raise Conflict(f"this proposal is {row.state}; run a new preview")
            self._check_basis(cur, row)
            wrote = self._apply(cur, principal, row, now)
            result = {"wrote": [w.model_dump(mode="json") for w in wrote]}
            store.decide(cur, proposal_id, ProposalState.EXECUTED, principal.actor, None, result)
        return ExecuteResponse(proposal_id=proposal_id, kind=row.kind, state=ProposalState.EXECUTED, wrote=wrote)

    @contextmanager
    def _leases(self, principal: Principal, row: StoredProposal, now: datetime) -> Iterator[None]:
        families: list[UUID] = list(row.family_ids)
        holder = f"{principal.actor}/{uuid4()}"
        if families:
            with self.db.tenant_transaction(principal.scoped_tenant) as cur:
                held = store.acquire_leases(cur, principal.scoped_tenant, families, holder, row.proposal_id, now,
                                            LEASE_TTL)
                if held is not None:
                    raise Conflict(f"another worker ({held.holder}) holds the lease on family {held.family_id} "
                                   f"until {held.expires_at:%H:%M:%S}; retry later")
        try:
            yield
        finally:
            if families:
                with self.db.tenant_transaction(principal.scoped_tenant) as cur:
                    store.release_leases(cur, families, holder, datetime.now(UTC))

    @staticmethod
    def _check_basis(cur: Cursor, row: StoredProposal) -> None:
        basis = dict(row.based_on)
        current = store.current_versions(cur, list(basis))
        for family_id, version in basis.items():
            now_version, state = current.get(family_id, (0, "missing"))
            if now_version != version or state != "active":
                raise Conflict(f"family {family_id} moved since the preview: it was version {version} (active), "
                               f"it is version {now_version} ({state}); run a new preview")

    def _apply(self, cur: Cursor, principal: Principal, row: StoredProposal, now: datetime) -> list[Wrote]:
        action = row.change["action"]
        reason = f"governance {row.kind}: {row.reason} (proposal {row.proposal_id})"
        if action in TERMINAL:
            return [self._terminal(cur, principal, f, v, TERMINAL[action], reason) for f, v in row.based_on]
        if action == "reverify":
            family_id, version = row.based_on[0]
            self.memory.apply(cur, principal, family.reverify(self._head(cur, family_id)), reason)
            return [Wrote(family_id=family_id, version=version, state=FamilyState.ACTIVE)]
        if action == "consolidate":
            return self._consolidate(cur, principal, row, reason, now)
        if action == "promote":
            return self._promote(cur, principal, row, reason, now)
        raise Conflict(f"unknown governance action {action!r}")

    def _terminal(self, cur: Cursor, principal: Principal, family_id: UUID, version: int, move: Move,
                  reason: str) -> Wrote:
        change = family.end(self._head(cur, family_id), move)
        self.memory.apply(cur, principal, change, reason)
        return Wrote(family_id=family_id, version=version, state=change.state)

    def _consolidate(self, cur: Cursor, principal: Principal, row: StoredProposal, reason: str,
                     now: datetime) -> list[Wrote]:
        basis = list(row.based_on)
        (keeper, keeper_version), others = basis[0], basis[1:]
        contents = [records.content_of(records.require_version(cur, f, v)) for f, v in basis]
        merged = consolidate(contents[0], contents[1:], now)
        new = self.memory.append_version(cur, principal, self._head(cur, keeper), merged, keeper_version,
                                         move=Move.CONSOLIDATE, reason=reason)
        wrote = [Wrote(family_id=keeper, version=new, state=FamilyState.ACTIVE)]
        for family_id, version in others:
            self.memory.apply(cur, principal, family.consolidated(self._head(cur, family_id), f"{keeper}:{new}"),
                              reason)
            records.add_edge(cur, principal.scoped_tenant, ("version", f"{keeper}:{new}"), "consolidates",
                       ("version", f"{family_id}:{version}"))
            wrote.append(Wrote(family_id=family_id, version=version, state=FamilyState.CONSOLIDATED))
        return wrote

    def _promote(self, cur: Cursor, principal: Principal, row: StoredProposal, reason: str,
                 now: datetime) -> list[Wrote]:
        rows = [self.review.candidate(cur, principal, UUID(c), lock=True) for c in row.change["candidates"]]
        known = records.category_spellings(cur)
        contents = [from_draft(r.draft, None, now, known) for r in rows]
        merged = consolidate(contents[0], contents[1:], now, confidence=float(row.change["confidence"]))
        if merged.owner is None:
            merged = merged.model_copy(update={"owner": f"project:{rows[0].project}"})
        family_id, version = self.review.new_family(cur, principal, rows[0], merged, reason)
        for r in rows:
            self.review.record_review(cur, principal, r, CandidateState.APPROVED, reason, family_id, version)
        return [Wrote(family_id=family_id, version=version, state=FamilyState.ACTIVE)]

    # ------------------------------------------------------------------ dismiss, revert
    def dismiss(self, principal: Principal, proposal_id: UUID, reason: str) -> ProposalView:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self._proposal(cur, principal, proposal_id, lock=True)
            if row.state != ProposalState.PROPOSED:
                raise Conflict(f"this proposal is already {row.state}")
            store.decide(cur, proposal_id, ProposalState.DISMISSED, principal.actor, reason, None)
            return view(self._proposal(cur, principal, proposal_id, lock=False))

    def revert(self, principal: Principal, proposal_id: UUID, reason: str) -> ExecuteResponse:
        """Undo an executed proposal: a consolidation's keeper rolls back to its previous content (byte for
        byte) and the merged families become active again; an expiry or retraction is reactivated; a
        promotion's record is retracted. 409 when a family moved since the execution."""
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self._proposal(cur, principal, proposal_id, lock=True)
            if row.state != ProposalState.EXECUTED:
                raise Conflict(f"only an executed proposal can be reverted; this one is {row.state}")
            wrote = [Wrote.model_validate(w) for w in (row.result or {})["wrote"]]
            note = f"revert of governance proposal {proposal_id}: {reason}"
            restored = self._revert(cur, principal, row, wrote, note)
            store.decide(cur, proposal_id, ProposalState.REVERTED, principal.actor, reason, None)
        return ExecuteResponse(proposal_id=proposal_id, kind=row.kind, state=ProposalState.REVERTED, wrote=restored)

    def _revert(self, cur: Cursor, principal: Principal, row: StoredProposal, wrote: list[Wrote],
                note: str) -> list[Wrote]:
        current = store.current_versions(cur, [w.family_id for w in wrote])
        for w in wrote:
            if current.get(w.family_id, (0, ""))[0] != w.version or current[w.family_id][1] != w.state:
                raise Conflict(f"family {w.family_id} changed after the execution; revert it by hand")
        action = row.change["action"]
        if action == "promote":
            return [self._terminal(cur, principal, w.family_id, w.version, Move.GOVERNANCE_RETRACT, note)
                    for w in wrote]
        out = []
        for family_id, version in row.based_on:
            done = next(w for w in wrote if w.family_id == family_id)
            if done.version != version:  # the keeper got a new version: append the old content again
                fam = self._head(cur, family_id)
                target = records.content_of(records.require_version(cur, family_id, version))
                new = self.memory.roll_back(cur, principal, fam, version, target, note)
                out.append(Wrote(family_id=family_id, version=new, state=FamilyState.ACTIVE))
            elif done.state != FamilyState.ACTIVE:
                self.memory.apply(cur, principal, family.reactivate(self._head(cur, family_id)), note)
                out.append(Wrote(family_id=family_id, version=version, state=FamilyState.ACTIVE))
        return out

    @staticmethod
    def _head(cur: Cursor, family_id: UUID) -> FamilyHead:
        """The family, locked (execute and revert locked every family of the proposal in id order already)."""
        fam = records.lock_family(cur, family_id)
        if fam is None:
            raise NotFound(f"no such record family {family_id}")
        return fam

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _done(row: StoredProposal, *, already: bool) -> ExecuteResponse:
        wrote = [Wrote.model_validate(w) for w in (row.result or {}).get("wrote", [])]
        return ExecuteResponse(proposal_id=row.proposal_id, kind=row.kind, state=ProposalState.EXECUTED,
                               wrote=wrote, already_executed=already)

    @staticmethod
    def _proposal(cur: Cursor, principal: Principal, proposal_id: UUID, *, lock: bool) -> StoredProposal:
        row = store.get_proposal(cur, proposal_id, lock=lock)
        if row is None or (principal.project and row.project != principal.project):
            raise NotFound("no such governance proposal", field="proposal_id")
        return row
