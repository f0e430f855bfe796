"""The review aggregate's repository: every SQL statement of candidates and their reviews.

Cursor in, no commits: `ReviewService` and the governance service own the transactions. Rows come back
as frozen `CandidateRow`s; a candidate is pending until its `candidate_reviews` row exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from schemas.memory import CandidateDraft, CandidateState
from schemas.views import ReviewDecision
from services.common.db import Cursor, Row
from services.common.paging import PageRequest, keyset_query, page

CANDIDATES = """SELECT c.*, r.decision, r.reviewer, r.note, r.decided_at, r.family_id, r.version
  FROM candidates c LEFT JOIN candidate_reviews r ON r.candidate_id = c.candidate_id"""


@dataclass(frozen=True)
class CandidateRow:
    candidate_id: UUID
    incident_id: str
    project: str
    memory_type: str
    summary: str
    created_at: datetime
    content: dict[str, Any]
    state: CandidateState
    review: ReviewDecision | None

    @classmethod
    def of(cls, row: Row) -> CandidateRow:
        decided = row.get("decision")
        review = ReviewDecision(reviewer=row["reviewer"], note=row["note"], decided_at=row["decided_at"],
                                family_id=row["family_id"], version=row["version"]) if decided else None
        return cls(candidate_id=row["candidate_id"], incident_id=row["incident_id"], project=row["project"],
                   memory_type=row["memory_type"], summary=row["summary"], created_at=row["created_at"],
                   content=row["content"], state=CandidateState(decided or CandidateState.PENDING), review=review)

    @property
    def draft(self) -> CandidateDraft:
        return CandidateDraft.model_validate(self.content)


def candidates_page(cur: Cursor, *, project: str | None, incident_id: str | None, state: str | None,
                    paging: PageRequest, imported: bool | None = None) -> tuple[list[CandidateRow], str | None]:
    """One page of candidates (oldest first) and the cursor of the next page; `imported` keeps only the
    candidates of imported postmortems (True) or only the others (False)."""
    query, params = keyset_query(CANDIDATES, [("c.project = %s", project), ("c.incident_id = %s", incident_id),
                                              ("coalesce(r.decision, 'pending') = %s", state),
                                              ("c.imported = %s", imported)],
                                 paging, "c.created_at", "c.candidate_id")
    cur.execute(query, params)
    rows, cursor = page(cur.fetchall(), paging, "created_at", "candidate_id")
    return [CandidateRow.of(r) for r in rows], cursor


def get_candidate(cur: Cursor, candidate_id: UUID, *, lock: bool) -> CandidateRow | None:
    """One candidate with its review; `lock` takes the candidate row FOR UPDATE (one decision at a time)."""
    cur.execute(CANDIDATES + " WHERE c.candidate_id = %s" + (" FOR UPDATE OF c" if lock else ""), (candidate_id,))
    row = cur.fetchone()
    return CandidateRow.of(row) if row else None


def insert_review(cur: Cursor, tenant: str, candidate_id: UUID, decision: CandidateState, reviewer: str,
                  note: str | None, family_id: UUID | None, version: int | None) -> bool:
    """The decision row; False when the candidate already had one (the loser of a race)."""
    cur.execute(
        """INSERT INTO candidate_reviews (tenant, candidate_id, decision, reviewer, note, family_id, version)
           VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1 AS inserted""",
        (tenant, candidate_id, decision, reviewer, note, family_id, version),
    )
    return cur.fetchone() is not None
