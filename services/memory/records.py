"""The governed store's repository: every SQL statement of families, versions, audit and lineage.

Cursor in, no commits: `service.MemoryService`, `review.service.ReviewService` and the governance service
own the transactions that call these. Family heads, matches and page rows come back as typed values.
Versions are inserted once and never updated except for their lifecycle `state` (a trigger enforces it);
nothing here deletes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from schemas.memory import FamilyState, VersionContent, VersionState
from schemas.views import AuditEntry, Edge, Usage, VersionView
from services.common.db import Cursor, Row
from services.common.errors import Conflict, NotFound
from services.common.paging import PageRequest, keyset_query, page
from services.memory.family import FamilyHead, Transition, content_hash

__all__ = ["FamilyHead", "FamilyMatch", "apply", "content_hash"]  # the aggregate's values, re-exported

JSON_COLUMNS = {"evidence", "verify_with", "trust_mix"}
CURRENT_VERSIONS = """SELECT v.*, f.state AS family_state, f.created_at AS family_created_at
  FROM memory_families f JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version"""


def family_head(row: Row) -> FamilyHead:
    return FamilyHead(family_id=row["family_id"], project=row["project"], memory_type=row["memory_type"],
                      state=FamilyState(row["state"]), current_version=int(row["current_version"]),
                      created_at=row["created_at"])


@dataclass(frozen=True)
class FamilyMatch:
    """An active family's current version, as the review queue compares a candidate against it."""

    family_id: UUID
    current_version: int
    category: str
    services: frozenset[str]
    summary: str
    signals: tuple[str, ...]
    misleading_signals: tuple[str, ...]


def insert_version(
    cur: Cursor, *, tenant: str, project: str, family_id: UUID, version: int, content: VersionContent,
    created_by: str, candidate_id: UUID | None, supersedes: int | None,
) -> None:
    data: dict[str, Any] = content.model_dump(mode="python")
    for col in JSON_COLUMNS:
        data[col] = Jsonb(content.model_dump(mode="json")[col])
    data.update(
        tenant=tenant, project=project, family_id=family_id, version=version, state=VersionState.ACTIVE,
        content_hash=content_hash(content), created_by=created_by, candidate_id=candidate_id,
        supersedes=supersedes,
    )
    cur.execute(sql.SQL("INSERT INTO memory_versions ({}) VALUES ({})").format(
        sql.SQL(", ").join(map(sql.Identifier, data)), sql.SQL(", ").join(map(sql.Placeholder, data))), data)


def create_family(cur: Cursor, *, tenant: str, project: str, family_id: UUID, memory_type: str) -> None:
    cur.execute(
        """INSERT INTO memory_families (tenant, family_id, project, memory_type, state, current_version)
           VALUES (%s, %s, %s, %s, %s, 1)""",
        (tenant, family_id, project, memory_type, FamilyState.ACTIVE),
    )


def lock_family(cur: Cursor, family_id: UUID) -> FamilyHead | None:
    cur.execute("SELECT * FROM memory_families WHERE family_id = %s FOR UPDATE", (family_id,))
    row = cur.fetchone()
    return family_head(row) if row else None


def get_family(cur: Cursor, family_id: UUID) -> FamilyHead | None:
    cur.execute("SELECT * FROM memory_families WHERE family_id = %s", (family_id,))
    row = cur.fetchone()
    return family_head(row) if row else None


def current_versions_page(cur: Cursor, *, project: str | None, incident_id: str | None, state: str | None,
                          paging: PageRequest) -> tuple[list[VersionView], str | None]:
    """One page of families' current versions (oldest family first) and the cursor of the next page."""
    query, params = keyset_query(CURRENT_VERSIONS, [("f.project = %s", project),
                                                    ("%s = ANY(v.source_incidents)", incident_id),
                                                    ("v.state = %s", state)], paging, "f.created_at", "f.family_id")
    cur.execute(query, params)
    rows, cursor = page(cur.fetchall(), paging, "family_created_at", "family_id")
    return [VersionView.model_validate(r) for r in rows], cursor


def current_versions(cur: Cursor) -> list[Row]:
    """Every family's current version in the transaction's tenant (for rebuilding derived indexes), as rows with
    `family_state`. The one read here that still returns rows: the briefing's semantic reindex and calibrator
    read them by column."""
    cur.execute(CURRENT_VERSIONS + " ORDER BY f.family_id")
    return cur.fetchall()


def category_spellings(cur: Cursor) -> dict[str, int]:
    """The tenant's root-cause categories, every project's, with their active incidents (`cause_tallies`, a few
    rows per tenant): what a new record's category is spelled against (`categories.spelled`)."""
    cur.execute("SELECT category, sum(incidents) AS n FROM cause_tallies GROUP BY category")
    return {r["category"]: int(r["n"]) for r in cur.fetchall()}


def active_matches(cur: Cursor, project: str, categories: Sequence[str]) -> list[FamilyMatch]:
    """Active families of `project` whose current root-cause category is one of `categories`, oldest first:
    what pending candidates are matched against (one query for a whole page of candidates)."""
    if not categories:
        return []
    cur.execute(CURRENT_VERSIONS + """ WHERE f.state = %s AND f.project = %s AND v.root_cause_category = ANY(%s)
                 ORDER BY f.created_at, f.family_id""", (FamilyState.ACTIVE, project, list(categories)))
    return [FamilyMatch(family_id=r["family_id"], current_version=int(r["version"]),
                        category=r["root_cause_category"], services=frozenset(r["services"]), summary=r["summary"],
                        signals=tuple(r["signals"]), misleading_signals=tuple(r["misleading_signals"]))
            for r in cur.fetchall()]


def checks_of(cur: Cursor, versions: Sequence[tuple[UUID | str, int]]) -> dict[tuple[str, int], list[Any]]:
    """The live checks (`verify_with`) of many versions, in one query, keyed by (family id, version)."""
    if not versions:
        return {}
    cur.execute("""SELECT family_id, version, verify_with FROM memory_versions
                   WHERE (family_id, version) IN (SELECT * FROM unnest(%s::uuid[], %s::int[]))""",
                ([str(f) for f, _ in versions], [int(v) for _, v in versions]))
    return {(str(r["family_id"]), int(r["version"])): list(r["verify_with"] or []) for r in cur.fetchall()}


def move_pointer(cur: Cursor, family_id: UUID, *, expected: int, new: int,
                 state: FamilyState = FamilyState.ACTIVE) -> bool:
    """Compare-and-set of the current pointer; False when another writer moved it first."""
    cur.execute(
        """UPDATE memory_families SET current_version = %s, state = %s, updated_at = now()
           WHERE family_id = %s AND current_version = %s""",
        (new, state, family_id, expected),
    )
    return cur.rowcount == 1


def set_family_state(cur: Cursor, family_id: UUID, state: FamilyState) -> None:
    cur.execute("UPDATE memory_families SET state = %s, updated_at = now() WHERE family_id = %s", (state, family_id))


def set_version_state(cur: Cursor, family_id: UUID, version: int, state: VersionState) -> None:
    cur.execute(
        "UPDATE memory_versions SET state = %s, state_changed_at = now() WHERE family_id = %s AND version = %s",
        (state, family_id, version),
    )


def get_version(cur: Cursor, family_id: UUID, version: int) -> VersionView | None:
    cur.execute("SELECT * FROM memory_versions WHERE family_id = %s AND version = %s", (family_id, version))
    row = cur.fetchone()
    return VersionView.model_validate(row) if row else None


def require_version(cur: Cursor, family_id: UUID, version: int) -> VersionView:
    """The version, which the caller knows exists (it read its family's pointer or a proposal's basis)."""
    found = get_version(cur, family_id, version)
    if found is None:
        raise NotFound(f"version {version} of family {family_id} does not exist", field="version")
    return found


def list_versions(cur: Cursor, family_id: UUID) -> list[VersionView]:
    cur.execute("SELECT * FROM memory_versions WHERE family_id = %s ORDER BY version", (family_id,))
    return [VersionView.model_validate(r) for r in cur.fetchall()]


def all_versions(cur: Cursor) -> list[VersionView]:
    """Every version of the transaction's tenant (for rebuilding derived indexes)."""
    cur.execute("SELECT * FROM memory_versions ORDER BY family_id, version")
    return [VersionView.model_validate(r) for r in cur.fetchall()]


def max_version(cur: Cursor, family_id: UUID) -> int:
    cur.execute("SELECT coalesce(max(version), 0) AS v FROM memory_versions WHERE family_id = %s", (family_id,))
    row = cur.fetchone()
    return int(row["v"]) if row else 0


def content_of(version: VersionView | Row) -> VersionContent:
    """A stored version's content alone (what its hash covers and what a new version copies)."""
    fields = VersionContent.model_fields
    if isinstance(version, VersionView):
        return VersionContent.model_validate({k: getattr(version, k) for k in fields})
    return VersionContent.model_validate({k: version[k] for k in fields})


def audit(
    cur: Cursor, *, tenant: str, family_id: UUID, version: int | None, action: str, actor: str,
    reason: str | None, before: dict[str, Any] | None, after: dict[str, Any] | None,
) -> None:
    cur.execute(
        """INSERT INTO memory_audit (tenant, family_id, version, action, actor, reason, before, after)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
        (tenant, family_id, version, action, actor, reason,
         Jsonb(before) if before is not None else None, Jsonb(after) if after is not None else None),
    )


def apply(cur: Cursor, *, tenant: str, actor: str, reason: str | None, change: Transition) -> None:
    """Persist one move of the family aggregate (`memory.family`): the new family and version, the version states,
    the pointer's compare-and-set (409 when another writer moved it first) or the family's state, its one audit
    row and, for a version that supersedes another, the lineage edge between them. The only writer of families,
    versions and audit rows."""
    family_id, new = change.family_id, change.new_version
    if change.creates is not None:
        create_family(cur, tenant=tenant, project=change.project, family_id=family_id, memory_type=change.creates)
    if new is not None:
        insert_version(cur, tenant=tenant, project=change.project, family_id=family_id, version=new.version,
                       content=new.content, created_by=actor, candidate_id=new.candidate_id,
                       supersedes=new.supersedes)
    for version, state in change.version_states:
        set_version_state(cur, family_id, version, state)
    if change.pointer is not None:
        expected, moved_to = change.pointer
        if not move_pointer(cur, family_id, expected=expected, new=moved_to, state=change.state):
            raise Conflict("the family's current version moved; re-read and retry")
    elif change.family_state_changes:
        set_family_state(cur, family_id, change.state)
    a = change.audit
    audit(cur, tenant=tenant, family_id=family_id, version=a.version, action=a.action.value, actor=actor,
          reason=reason, before=a.before, after=a.after)
    if new is not None and new.supersedes is not None:
        add_edge(cur, tenant, ("version", f"{family_id}:{new.version}"), "supersedes",
                 ("version", f"{family_id}:{new.supersedes}"))


def list_audit(cur: Cursor, family_id: UUID) -> list[AuditEntry]:
    cur.execute("SELECT * FROM memory_audit WHERE family_id = %s ORDER BY audit_id", (family_id,))
    return [AuditEntry.model_validate(r) for r in cur.fetchall()]


def add_edge(cur: Cursor, tenant: str, src: tuple[str, str], relation: str, dst: tuple[str, str]) -> None:
    cur.execute(
        """INSERT INTO lineage_edges (tenant, src_kind, src_id, relation, dst_kind, dst_id)
           VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (tenant, src[0], src[1], relation, dst[0], dst[1]),
    )


def add_edges(cur: Cursor, tenant: str, edges: Sequence[tuple[tuple[str, str], str, tuple[str, str]]]) -> None:
    """Many lineage edges in one statement (idempotent like `add_edge`)."""
    if not edges:
        return
    cur.execute(
        """INSERT INTO lineage_edges (tenant, src_kind, src_id, relation, dst_kind, dst_id)
           SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[])
           ON CONFLICT DO NOTHING""",
        (tenant, [e[0][0] for e in edges], [e[0][1] for e in edges], [e[1] for e in edges],
         [e[2][0] for e in edges], [e[2][1] for e in edges]),
    )


def edges_from(cur: Cursor, kinds_ids: list[tuple[str, str]]) -> list[Edge]:
    if not kinds_ids:
        return []
    cur.execute(
        """SELECT src_kind, src_id, relation, dst_kind, dst_id FROM lineage_edges
           WHERE (src_kind, src_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
           ORDER BY src_kind, src_id, relation, dst_kind, dst_id""",
        ([k for k, _ in kinds_ids], [i for _, i in kinds_ids]),
    )
    return [Edge.model_validate(r) for r in cur.fetchall()]


def edges_into_family(cur: Cursor, family_id: UUID) -> list[Edge]:
    """Edges that point at any version of the family (briefings that cited it, versions that supersede it)."""
    cur.execute("""SELECT src_kind, src_id, relation, dst_kind, dst_id FROM lineage_edges
                   WHERE dst_kind = 'version' AND dst_id LIKE %s ORDER BY src_id""", (f"{family_id}:%",))
    return [Edge.model_validate(r) for r in cur.fetchall()]


def usage(cur: Cursor, family_id: UUID) -> Usage:
    """How the family has been used: briefings that cited it (lineage) and the feedback agents gave
    (projected from `briefing.feedback` ledger events): hits, verdict counts, last use."""
    cur.execute(
        """SELECT count(*) AS cited, max(created_at) AS last_cited FROM lineage_edges
           WHERE relation = 'cited' AND dst_kind = 'version' AND dst_id LIKE %s""",
        (f"{family_id}:%",),
    )
    cited = cur.fetchone() or {}
    cur.execute("SELECT adopted, refuted, ignored, last_feedback_at FROM family_feedback WHERE family_id = %s",
                (family_id,))
    fb = cur.fetchone() or {"adopted": 0, "refuted": 0, "ignored": 0, "last_feedback_at": None}
    last = [t for t in (cited.get("last_cited"), fb["last_feedback_at"]) if t is not None]
    return Usage(briefings=int(cited.get("cited") or 0), adopted=fb["adopted"], refuted=fb["refuted"],
                 ignored=fb["ignored"], last_used_at=max(last) if last else None)
