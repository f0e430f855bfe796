"""The governance repository: every SQL statement of runs, proposals, leases and the facts jobs read.

Functions take a cursor of a transaction their caller owns (`GovernanceService`) and return typed values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from psycopg.types.json import Jsonb

from schemas.api import BasedOn, ProposalView
from schemas.memory import ProposalState
from services.common.db import Cursor, Row
from services.common.errors import Conflict
from services.governance.jobs import Candidate, Family, Proposal


@dataclass(frozen=True)
class StoredProposal:
    """A governance proposal as stored: what a preview found, the versions it was based on, and its decision."""

    proposal_id: UUID
    run_id: UUID
    project: str
    kind: str
    fingerprint: str
    family_ids: tuple[UUID, ...]
    reason: str
    change: Mapping[str, Any]
    based_on: tuple[tuple[UUID, int], ...]  # (family, version) as the preview read them
    state: ProposalState
    created_at: datetime
    decided_at: datetime | None
    decided_by: str | None
    decision_note: str | None
    result: Mapping[str, Any] | None  # what execute wrote, kept for a second execute

    @classmethod
    def of(cls, row: Row) -> StoredProposal:
        return cls(proposal_id=row["proposal_id"], run_id=row["run_id"], project=row["project"], kind=row["kind"],
                   fingerprint=row["fingerprint"], family_ids=tuple(row["family_ids"]), reason=row["reason"],
                   change=row["change"],
                   based_on=tuple((UUID(b["family_id"]), int(b["version"])) for b in row["based_on"]),
                   state=ProposalState(row["state"]), created_at=row["created_at"], decided_at=row["decided_at"],
                   decided_by=row["decided_by"], decision_note=row["decision_note"], result=row["result"])

    def view(self) -> ProposalView:
        return ProposalView.model_validate({
            "proposal_id": self.proposal_id, "run_id": self.run_id, "kind": self.kind, "project": self.project,
            "family_ids": list(self.family_ids), "reason": self.reason, "change": dict(self.change),
            "based_on": [BasedOn(family_id=f, version=v) for f, v in self.based_on], "state": self.state,
            "created_at": self.created_at, "decided_at": self.decided_at, "decided_by": self.decided_by,
            "decision_note": self.decision_note, "result": dict(self.result) if self.result is not None else None})


@dataclass(frozen=True)
class Lease:
    """Who holds a family for the execution of a proposal, and until when."""

    family_id: UUID
    holder: str
    proposal_id: UUID
    expires_at: datetime

FACTS_SQL = """
SELECT f.family_id, f.current_version AS version, f.project, f.created_at, v.summary, v.root_cause,
       v.root_cause_category AS category, v.signals, v.source_incidents, v.valid_until, v.last_verified_at,
       v.valid_from, v.level, coalesce(fb.adopted, 0) AS adopted, coalesce(fb.refuted, 0) AS refuted,
       (SELECT max(e.created_at) FROM lineage_edges e
         WHERE e.relation = 'cited' AND e.dst_kind = 'version'
           AND e.dst_id LIKE f.family_id::text || ':%%') AS last_cited_at
  FROM memory_families f
  JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
  LEFT JOIN family_feedback fb ON fb.family_id = f.family_id
 WHERE f.state = 'active' AND (%(project)s::text IS NULL OR f.project = %(project)s::text)
 ORDER BY f.created_at, f.family_id"""

PENDING_SQL = """
SELECT c.candidate_id, c.project, c.incident_id, c.content->>'root_cause_category' AS category,
       ARRAY(SELECT jsonb_array_elements_text(coalesce(c.content->'signals', '[]'))) AS signals,
       coalesce((c.content->>'confidence')::float, 0.5) AS confidence
  FROM candidates c LEFT JOIN candidate_reviews r ON r.candidate_id = c.candidate_id
 WHERE r.candidate_id IS NULL AND (%(project)s::text IS NULL OR c.project = %(project)s::text)
   AND coalesce((c.content->>'untrusted_text_quoted')::boolean, false) = false
 ORDER BY c.created_at, c.candidate_id"""


INSERT_ROUNDS = 5
INSERT_PROPOSAL_SQL = """
INSERT INTO governance_proposals (tenant, proposal_id, run_id, project, kind, fingerprint, family_ids, reason,
                                  change, based_on, state)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'proposed')
ON CONFLICT (tenant, fingerprint) WHERE state = 'proposed' DO NOTHING RETURNING *"""


def families(cur: Cursor, project: str | None) -> list[Family]:
    cur.execute(FACTS_SQL, {"project": project})
    return [Family(**{**r, "signals": frozenset(r["signals"]), "source_incidents": tuple(r["source_incidents"])})
            for r in cur.fetchall()]


def pending_candidates(cur: Cursor, project: str | None) -> list[Candidate]:
    cur.execute(PENDING_SQL, {"project": project})
    return [Candidate(**{**r, "signals": frozenset(r["signals"])}) for r in cur.fetchall()]


def insert_run(cur: Cursor, tenant: str, project: str | None, jobs: list[str], actor: str) -> UUID:
    run_id = uuid4()
    cur.execute("""INSERT INTO governance_runs (tenant, run_id, project, jobs, requested_by)
                   VALUES (%s, %s, %s, %s, %s)""", (tenant, run_id, project, jobs, actor))
    return run_id


def insert_proposal(cur: Cursor, tenant: str, run_id: UUID, p: Proposal) -> StoredProposal:
    """The open proposal for this finding: the new row, or the one an earlier preview already wrote.

    Under READ COMMITTED the open row that made the INSERT do nothing can leave `proposed` (another
    worker executes it or marks it stale and commits) before the SELECT that reads it: the finding then
    has no open proposal any more, so the INSERT is tried again and this time writes one. Each round
    needs a concurrent commit to fail, so a few rounds always end."""
    based_on = [{"family_id": str(f), "version": v} for f, v in p.based_on]
    params = (tenant, uuid4(), run_id, p.project, p.kind, p.fingerprint, list(p.family_ids), p.reason,
              Jsonb(p.change), Jsonb(based_on))
    for _ in range(INSERT_ROUNDS):
        cur.execute(INSERT_PROPOSAL_SQL, params)
        row = cur.fetchone()
        if row is None:
            cur.execute("SELECT * FROM governance_proposals WHERE fingerprint = %s AND state = 'proposed'",
                        (p.fingerprint,))
            row = cur.fetchone()
        if row is not None:
            return StoredProposal.of(row)
    raise Conflict("the open proposals for this finding kept changing under the preview; run it again")


def open_proposals(cur: Cursor, kinds: list[str], project: str | None) -> list[StoredProposal]:
    cur.execute("""SELECT * FROM governance_proposals WHERE state = 'proposed' AND kind = ANY(%s)
                     AND (%s::text IS NULL OR project = %s::text) ORDER BY created_at""",
                (kinds, project, project))
    return [StoredProposal.of(r) for r in cur.fetchall()]


def list_proposals(cur: Cursor, state: str | None, kind: str | None, project: str | None,
                   limit: int) -> list[StoredProposal]:
    cur.execute("""SELECT * FROM governance_proposals
                    WHERE (%(s)s::text IS NULL OR state = %(s)s::text) AND (%(k)s::text IS NULL OR kind = %(k)s::text)
                      AND (%(p)s::text IS NULL OR project = %(p)s::text)
                    ORDER BY created_at DESC, proposal_id LIMIT %(n)s""",
                {"s": state, "k": kind, "p": project, "n": limit})
    return [StoredProposal.of(r) for r in cur.fetchall()]


def get_proposal(cur: Cursor, proposal_id: UUID, *, lock: bool) -> StoredProposal | None:
    cur.execute("SELECT * FROM governance_proposals WHERE proposal_id = %s" + (" FOR UPDATE" if lock else ""),
                (proposal_id,))
    row = cur.fetchone()
    return StoredProposal.of(row) if row else None


def decide(cur: Cursor, proposal_id: UUID, state: ProposalState, actor: str, note: str | None,
           result: dict[str, Any] | None) -> None:
    cur.execute("""UPDATE governance_proposals SET state = %s, decided_at = now(), decided_by = %s,
                          decision_note = %s, result = coalesce(%s, result) WHERE proposal_id = %s""",
                (state, actor, note, Jsonb(result) if result is not None else None, proposal_id))


def mark_stale(cur: Cursor, proposal_id: UUID, actor: str, note: str) -> None:
    """An open proposal whose basis moved becomes stale; one that another worker executed (or dismissed) since
    this preview read it as open keeps its decision (READ COMMITTED: the row is rechecked when updated)."""
    cur.execute("""UPDATE governance_proposals SET state = %s, decided_at = now(), decided_by = %s, decision_note = %s
                   WHERE proposal_id = %s AND state = %s""",
                (ProposalState.STALE, actor, note, proposal_id, ProposalState.PROPOSED))


def current_versions(cur: Cursor, family_ids: list[UUID]) -> dict[UUID, tuple[int, str]]:
    """Current version and state of each family, locked (FOR UPDATE, in id order: no deadlocks)."""
    cur.execute("""SELECT family_id, current_version, state FROM memory_families WHERE family_id = ANY(%s)
                   ORDER BY family_id FOR UPDATE""", (family_ids,))
    return {r["family_id"]: (int(r["current_version"]), r["state"]) for r in cur.fetchall()}


def acquire_leases(cur: Cursor, tenant: str, family_ids: list[UUID], holder: str, proposal_id: UUID,
                   now: datetime, ttl: timedelta) -> Lease | None:
    """Take every lease or none: returns the conflicting lease (its holder and expiry) when another holder
    has one of the families; the caller rolls the transaction back then."""
    for family_id in sorted(family_ids):
        cur.execute(
            """INSERT INTO governance_leases (tenant, family_id, holder, proposal_id, expires_at)
               VALUES (%(t)s, %(f)s, %(h)s, %(p)s, %(e)s)
               ON CONFLICT (tenant, family_id) DO UPDATE
                 SET holder = EXCLUDED.holder, proposal_id = EXCLUDED.proposal_id, expires_at = EXCLUDED.expires_at
                 WHERE governance_leases.expires_at <= %(now)s OR governance_leases.holder = EXCLUDED.holder
               RETURNING family_id""",
            {"t": tenant, "f": family_id, "h": holder, "p": proposal_id, "e": now + ttl, "now": now})
        if cur.fetchone() is None:
            cur.execute("SELECT family_id, holder, proposal_id, expires_at FROM governance_leases"
                        " WHERE family_id = %s", (family_id,))
            held = cur.fetchone()
            return Lease(**held) if held else None
    return None


def release_leases(cur: Cursor, family_ids: list[UUID], holder: str, now: datetime) -> None:
    cur.execute("""UPDATE governance_leases SET expires_at = %s
                   WHERE family_id = ANY(%s) AND holder = %s AND expires_at > %s""",
                (now, family_ids, holder, now))
