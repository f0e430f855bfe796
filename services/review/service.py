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

from schemas.memory import ApprovalEdits, CandidateDraft, CandidateState, FamilyState, VersionContent, VersionState
from services.common.auth import Principal
from services.common.db import Cursor, Database, Row
from services.common.errors import Conflict, Forbidden, InvalidInput, NotFound
from services.common.paging import PageRequest, page
from services.memory import records as R
from services.memory.content import from_draft, merge_into
from services.memory.service import MemoryService

FAMILY_NAMESPACE = UUID("0c7f1f0e-96a8-4b8e-8d7c-5d2b8f1a2e33")
Resolution = Literal["auto", "new_family", "new_version"]


def candidate_view(row: Row, proposal: dict[str, Any] | None = None) -> dict[str, Any]:
    state = CandidateState(row.get("decision") or CandidateState.PENDING)
    return {
        "candidate_id": row["candidate_id"], "incident_id": row["incident_id"], "project": row["project"],
        "memory_type": row["memory_type"], "summary": row["summary"], "state": state,
        "created_at": row["created_at"], "content": row["content"],
        "untrusted_text_quoted": bool((row["content"] or {}).get("untrusted_text_quoted")),
        "review": {"reviewer": row.get("reviewer"), "note": row.get("note"), "decided_at": row.get("decided_at"),
                   "family_id": row.get("family_id"), "version": row.get("version")} if row.get("decision") else None,
        **({"proposal": proposal} if proposal is not None else {}),
    }


def find_match(cur: Cursor, project: str, draft: CandidateDraft) -> Row | None:
    if not draft.root_cause_category:
        return None
    cur.execute(
        """SELECT f.family_id, f.current_version, f.state, f.project, v.summary, v.signals, v.misleading_signals
           FROM memory_families f JOIN memory_versions v
             ON v.family_id = f.family_id AND v.version = f.current_version
           WHERE f.state = %s AND f.project = %s AND v.root_cause_category = %s AND v.services && %s
           ORDER BY f.created_at, f.family_id LIMIT 1""",
        (FamilyState.ACTIVE, project, draft.root_cause_category, draft.services),
    )
    return cur.fetchone()


def proposal_for(match: Row | None, draft: CandidateDraft) -> dict[str, Any]:
    if match is None:
        return {"kind": "new_family"}
    contradicts = (set(draft.misleading_signals) & set(match["signals"])) or (
        set(match["misleading_signals"]) & set(draft.signals))
    return {"kind": "conflict" if contradicts else "new_version", "family_id": match["family_id"],
            "current_version": match["current_version"], "current_summary": match["summary"],
            "contradicting_signals": sorted(contradicts)}


class ReviewService:
    def __init__(self, db: Database, memory: MemoryService) -> None:
        self.db = db
        self.memory = memory

    def list_candidates(self, principal: Principal, state: str | None, incident_id: str | None,
                        paging: PageRequest | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of candidates (oldest first) and the cursor of the next page."""
        principal.require("agent")
        paging = paging or PageRequest()
        sql = ["""SELECT c.*, r.decision, r.reviewer, r.note, r.decided_at, r.family_id, r.version
                  FROM candidates c LEFT JOIN candidate_reviews r ON r.candidate_id = c.candidate_id WHERE true"""]
        params: list[Any] = []
        if principal.project:
            sql.append("AND c.project = %s")
            params.append(principal.project)
        if incident_id:
            sql.append("AND c.incident_id = %s")
            params.append(incident_id)
        if state:
            sql.append("AND coalesce(r.decision, 'pending') = %s")
            params.append(state)
        after, after_params = paging.sql("c.created_at", "c.candidate_id")
        sql.append(f"{after} ORDER BY c.created_at, c.candidate_id LIMIT %s")
        params += [*after_params, paging.limit + 1]
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            cur.execute(" ".join(sql), params)
            rows, cursor = page(cur.fetchall(), paging, "created_at", "candidate_id")
            return [self._with_proposal(cur, r) for r in rows], cursor

    def get_candidate(self, principal: Principal, candidate_id: UUID) -> dict[str, Any]:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self.candidate(cur, principal, candidate_id, lock=False)
            view = self._with_proposal(cur, row)
            cur.execute("SELECT body FROM episodes WHERE incident_id = %s", (row["incident_id"],))
            ep = cur.fetchone()
        view["episode"] = ep["body"] if ep else None
        return view

    def _with_proposal(self, cur: Cursor, row: Row) -> dict[str, Any]:
        if row.get("decision"):
            return candidate_view(row)
        draft = CandidateDraft.model_validate(row["content"])
        return candidate_view(row, proposal_for(find_match(cur, row["project"], draft), draft))

    def approve(self, principal: Principal, candidate_id: UUID, *, note: str | None, edits: ApprovalEdits | None,
                expected_version: int | None = None, resolution: Resolution = "auto") -> dict[str, Any]:
        principal.require("reviewer")
        tenant = principal.scoped_tenant
        with self.db.tenant_transaction(tenant) as cur:
            row = self.candidate(cur, principal, candidate_id, lock=True)
            draft = CandidateDraft.model_validate(row["content"])
            if draft.untrusted_text_quoted and (edits is None or edits.summary is None):
                raise InvalidInput("this candidate's text came from untrusted_text and is only quoted: write the "
                                   "summary yourself (edits.summary) to approve it", field="edits.summary")
            content = from_draft(draft, edits, valid_from=datetime.now(UTC))
            if content.owner is None:
                content = content.model_copy(update={"owner": f"project:{row['project']}"})
            if content.level == "permanent" and principal.role != "admin":
                raise Forbidden("only an admin may make memory permanent", field="edits.level")
            match = find_match(cur, row["project"], draft) if resolution != "new_family" else None
            proposal = proposal_for(match, draft)
            if proposal["kind"] == "conflict" and resolution == "auto":
                raise Conflict("this candidate contradicts an active record; approve with resolution "
                               "new_version or new_family after reading both sides")
            if match is not None:
                fam = R.lock_family(cur, match["family_id"])
                assert fam is not None
                current = R.content_of(R.get_version(cur, fam["family_id"], fam["current_version"]) or {})
                family_id, version = fam["family_id"], self.memory.append_version(
                    cur, principal, fam, merge_into(current, content), expected_version,
                    action="approve_version", reason=note, candidate_id=candidate_id)
            else:
                if expected_version not in (None, 0):
                    raise Conflict("the candidate was drafted against a family that no longer matches")
                family_id, version = self.new_family(cur, principal, row, content, note)
            self.record_review(cur, principal, row, CandidateState.APPROVED, note, family_id, version)
        return {"family_id": family_id, "version": version}

    def new_family(self, cur: Cursor, principal: Principal, row: Row, content: VersionContent,
                    note: str | None) -> tuple[UUID, int]:
        family_id = uuid5(FAMILY_NAMESPACE, f"{principal.scoped_tenant}/{row['candidate_id']}")
        R.create_family(cur, tenant=principal.scoped_tenant, project=row["project"], family_id=family_id,
                        memory_type=content.memory_type)
        R.insert_version(cur, tenant=principal.scoped_tenant, project=row["project"], family_id=family_id,
                         version=1, content=content, created_by=principal.actor,
                         candidate_id=row["candidate_id"], supersedes=None)
        self.memory.index(cur, principal.scoped_tenant, family_id, 1, content)
        R.audit(cur, tenant=principal.scoped_tenant, family_id=family_id, version=1, action="approve",
                actor=principal.actor, reason=note, before=None,
                after={"version": 1, "state": VersionState.ACTIVE.value, "content_hash": R.content_hash(content)})
        return family_id, 1

    def reject(self, principal: Principal, candidate_id: UUID, reason: str) -> dict[str, Any]:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = self.candidate(cur, principal, candidate_id, lock=True)
            self.record_review(cur, principal, row, CandidateState.REJECTED, reason, None, None)
        return {"candidate_id": candidate_id, "state": CandidateState.REJECTED}

    def record_review(self, cur: Cursor, principal: Principal, row: Row, decision: CandidateState, note: str | None,
                       family_id: UUID | None, version: int | None) -> None:
        cur.execute(
            """INSERT INTO candidate_reviews (tenant, candidate_id, decision, reviewer, note, family_id, version)
               VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1 AS inserted""",
            (principal.scoped_tenant, row["candidate_id"], decision, principal.actor, note, family_id, version),
        )
        if cur.fetchone() is None:
            raise Conflict("this candidate has already been reviewed")
        if family_id is not None:
            node = ("version", f"{family_id}:{version}")
            t = principal.scoped_tenant
            R.add_edge(cur, t, node, "learned_from", ("episode", row["incident_id"]))
            R.add_edge(cur, t, node, "reviewed_in", ("review", str(row["candidate_id"])))
            for ev in row["content"].get("evidence", []):
                R.add_edge(cur, t, ("episode", row["incident_id"]), "cites", ("event", str(ev["event_id"])))

    @staticmethod
    def candidate(cur: Cursor, principal: Principal, candidate_id: UUID, *, lock: bool) -> Row:
        cur.execute(
            f"""SELECT c.*, r.decision, r.reviewer, r.note, r.decided_at, r.family_id, r.version
                FROM candidates c LEFT JOIN candidate_reviews r ON r.candidate_id = c.candidate_id
                WHERE c.candidate_id = %s {"FOR UPDATE OF c" if lock else ""}""",
            (candidate_id,),
        )
        row = cur.fetchone()
        if row is None or (principal.project and row["project"] != principal.project):
            raise NotFound("no such candidate")
        if lock and row["decision"]:
            raise Conflict(f"this candidate was already {row['decision']}")
        return row
