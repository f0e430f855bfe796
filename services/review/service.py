"""ReviewService: the review queue and the approve/reject decisions. Each decision is one transaction.

A pending candidate is matched against the tenant's active families: same project, same root-cause
category and overlapping services means it is proposed as the next version of that family; a match
whose current version marks one of the candidate's signals as misleading (or vice versa) is a conflict
that the reviewer must resolve explicitly. Approval checks the expected current version (409 when the
family moved since the reviewer looked), writes the version, the pointer, the review row, the audit row
and the lineage edges together.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID, uuid5

from schemas.memory import ApprovalEdits, CandidateDraft, CandidateState, VersionContent
from schemas.views import Approved, CandidatePage, CandidateView, Proposal, Rejected
from services.common.auth import Principal
from services.common.db import Cursor, Database
from services.common.errors import Conflict, Forbidden, InvalidInput, NotFound
from services.common.paging import PageRequest
from services.memory import family, records
from services.memory.content import from_draft, merge_into, revise
from services.memory.family import Move
from services.memory.records import FamilyMatch
from services.memory.service import MemoryService
from services.projector import store as projection_store
from services.review import repository as Repo
from services.review.repository import CandidateRow

FAMILY_NAMESPACE = UUID("0c7f1f0e-96a8-4b8e-8d7c-5d2b8f1a2e33")
Resolution = Literal["auto", "new_family", "new_version"]


def candidate_view(row: CandidateRow, proposal: Proposal | None = None,
                   episode: dict[str, Any] | None = None) -> CandidateView:
    return CandidateView(candidate_id=row.candidate_id, incident_id=row.incident_id, project=row.project,
                         memory_type=row.memory_type, summary=row.summary, state=row.state,
                         created_at=row.created_at, content=row.content,
                         untrusted_text_quoted=bool((row.content or {}).get("untrusted_text_quoted")),
                         imported=bool((row.content or {}).get("imported")),
                         review=row.review, proposal=proposal, episode=episode)


def pick_match(matches: list[FamilyMatch], draft: CandidateDraft) -> FamilyMatch | None:
    """The oldest active family with the draft's root-cause category and a service in common."""
    if not draft.root_cause_category:
        return None
    services = set(draft.services)
    return next((m for m in matches if m.category == draft.root_cause_category and m.services & services), None)


def proposal_for(match: FamilyMatch | None, draft: CandidateDraft) -> Proposal:
    if match is None:
        return Proposal(kind="new_family")
    contradicts = (set(draft.misleading_signals) & set(match.signals)) or (
        set(match.misleading_signals) & set(draft.signals))
    return Proposal(kind="conflict" if contradicts else "new_version", family_id=match.family_id,
                    current_version=match.current_version, current_summary=match.summary,
                    contradicting_signals=sorted(contradicts))


def find_match(cur: Cursor, project: str, draft: CandidateDraft) -> FamilyMatch | None:
    """The family `draft` (its category in the tenant's spelling: `content.revise`) would join."""
    categories = [draft.root_cause_category] if draft.root_cause_category else []
    return pick_match(records.active_matches(cur, project, categories), draft)


class ReviewService:
    def __init__(self, db: Database, memory: MemoryService) -> None:
        self.db = db
        self.memory = memory

    def list_candidates(self, principal: Principal, state: str | None, incident_id: str | None,
                        paging: PageRequest | None = None, imported: bool | None = None) -> CandidatePage:
        """One page of candidates (oldest first), pending ones with their proposal, and the next cursor."""
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            rows, cursor = Repo.candidates_page(cur, project=principal.project, incident_id=incident_id,
                                                state=state, paging=paging or PageRequest(), imported=imported)
            views = self._with_proposals(cur, rows)
        return CandidatePage(candidates=views, next_cursor=cursor)

    def get_candidate(self, principal: Principal, candidate_id: UUID) -> CandidateView:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self.candidate(cur, principal, candidate_id, lock=False)
            episode = projection_store.read_episode(cur, row.incident_id)
            view = self._with_proposals(cur, [row])[0]
        return view.model_copy(update={"episode": episode.body if episode else None})

    @staticmethod
    def _with_proposals(cur: Cursor, rows: list[CandidateRow]) -> list[CandidateView]:
        """Views of a page of candidates; the pending ones are matched against one query's families per
        project (not one query per candidate)."""
        known = records.category_spellings(cur) if any(r.state == CandidateState.PENDING for r in rows) else {}
        pending = [(r, revise(r.draft, None, known)) for r in rows if r.state == CandidateState.PENDING]
        matches: dict[str, list[FamilyMatch]] = {}
        for project in {r.project for r, _ in pending}:
            categories = sorted({d.root_cause_category for r, d in pending if r.project == project
                                 and d.root_cause_category})
            matches[project] = records.active_matches(cur, project, categories)
        proposals = {r.candidate_id: proposal_for(pick_match(matches[r.project], d), d) for r, d in pending}
        return [candidate_view(r, proposals.get(r.candidate_id)) for r in rows]

    def approve(self, principal: Principal, candidate_id: UUID, *, note: str | None, edits: ApprovalEdits | None,
                expected_version: int | None = None, resolution: Resolution = "auto") -> Approved:
        principal.require("reviewer")
        tenant = principal.scoped_tenant
        with self.db.tenant_transaction(tenant) as cur:
            row = self.candidate(cur, principal, candidate_id, lock=True)
            known = records.category_spellings(cur)
            draft = revise(row.draft, edits, known)
            if draft.untrusted_text_quoted and (edits is None or edits.summary is None):
                raise InvalidInput("this candidate's text came from untrusted_text and is only quoted: write the "
                                   "summary yourself (edits.summary) to approve it", field="edits.summary")
            content = from_draft(row.draft, edits, datetime.now(UTC), known)
            if content.owner is None:
                content = content.model_copy(update={"owner": f"project:{row.project}"})
            if content.level == "permanent" and principal.role != "admin":
                raise Forbidden("only an admin may make memory permanent", field="edits.level")
            match = find_match(cur, row.project, draft) if resolution != "new_family" else None
            if proposal_for(match, draft).kind == "conflict" and resolution == "auto":
                raise Conflict("this candidate contradicts an active record; approve with resolution "
                               "new_version or new_family after reading both sides")
            if match is not None:
                fam = records.lock_family(cur, match.family_id)
                assert fam is not None
                current = records.content_of(records.require_version(cur, fam.family_id, fam.current_version))
                family_id, version = fam.family_id, self.memory.append_version(
                    cur, principal, fam, merge_into(current, content), expected_version,
                    move=Move.APPROVE_VERSION, reason=note, candidate_id=candidate_id)
            else:
                if expected_version not in (None, 0):
                    raise Conflict("the candidate was drafted against a family that no longer matches")
                family_id, version = self.new_family(cur, principal, row, content, note)
            self.record_review(cur, principal, row, CandidateState.APPROVED, note, family_id, version)
        return Approved(family_id=family_id, version=version)

    def new_family(self, cur: Cursor, principal: Principal, row: CandidateRow, content: VersionContent,
                    note: str | None) -> tuple[UUID, int]:
        family_id = uuid5(FAMILY_NAMESPACE, f"{principal.scoped_tenant}/{row.candidate_id}")
        self.memory.apply(cur, principal, family.approve(family_id, row.project, content, row.candidate_id), note)
        return family_id, 1

    def reject(self, principal: Principal, candidate_id: UUID, reason: str) -> Rejected:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self.candidate(cur, principal, candidate_id, lock=True)
            self.record_review(cur, principal, row, CandidateState.REJECTED, reason, None, None)
        return Rejected(candidate_id=candidate_id, state=CandidateState.REJECTED)

    def record_review(self, cur: Cursor, principal: Principal, row: CandidateRow, decision: CandidateState,
                      note: str | None, family_id: UUID | None, version: int | None) -> None:
        if not Repo.insert_review(cur, principal.scoped_tenant, row.candidate_id, decision, principal.actor, note,
                                  family_id, version):
            raise Conflict("this candidate has already been reviewed")
        if family_id is not None:
            node = ("version", f"{family_id}:{version}")
            t = principal.scoped_tenant
            records.add_edge(cur, t, node, "learned_from", ("episode", row.incident_id))
            records.add_edge(cur, t, node, "reviewed_in", ("review", str(row.candidate_id)))
            for ev in row.content.get("evidence", []):
                records.add_edge(cur, t, ("episode", row.incident_id), "cites", ("event", str(ev["event_id"])))

    @staticmethod
    def candidate(cur: Cursor, principal: Principal, candidate_id: UUID, *, lock: bool) -> CandidateRow:
        row = Repo.get_candidate(cur, candidate_id, lock=lock)
        if row is None or (principal.project and row.project != principal.project):
            raise NotFound("no such candidate")
        if lock and row.state != CandidateState.PENDING:
            raise Conflict(f"this candidate was already {row.state}")
        return row
