"""Row access for the governed store (families, versions, audit, lineage). Cursor in, no commits.

`service.MemoryService` and `review.service.ReviewService` own the transactions that call these.
Versions are inserted once and never updated except for their lifecycle `state` (a trigger enforces it);
nothing here deletes.
"""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from schemas.ledger import canonical_json
from schemas.memory import FamilyState, VersionContent, VersionState
from services.common.db import Cursor, Row

JSON_COLUMNS = {"evidence", "verify_with", "trust_mix"}


def content_hash(content: VersionContent) -> str:
    return hashlib.sha256(canonical_json(content.model_dump(mode="json"))).hexdigest()


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
    cols = ", ".join(data)
    params = ", ".join(f"%({c})s" for c in data)
    cur.execute(
        f"INSERT INTO memory_versions ({cols}) VALUES ({params})",
        data,
    )


def create_family(cur: Cursor, *, tenant: str, project: str, family_id: UUID, memory_type: str) -> None:
    cur.execute(
        """INSERT INTO memory_families (tenant, family_id, project, memory_type, state, current_version)
           VALUES (%s, %s, %s, %s, %s, 1)""",
        (tenant, family_id, project, memory_type, FamilyState.ACTIVE),
    )


def lock_family(cur: Cursor, family_id: UUID) -> Row | None:
    cur.execute("SELECT * FROM memory_families WHERE family_id = %s FOR UPDATE", (family_id,))
    return cur.fetchone()


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


def get_version(cur: Cursor, family_id: UUID, version: int) -> Row | None:
    cur.execute("SELECT * FROM memory_versions WHERE family_id = %s AND version = %s", (family_id, version))
    return cur.fetchone()


def list_versions(cur: Cursor, family_id: UUID) -> list[Row]:
    cur.execute("SELECT * FROM memory_versions WHERE family_id = %s ORDER BY version", (family_id,))
    return cur.fetchall()


def all_versions(cur: Cursor) -> list[Row]:
    """Every version of the transaction's tenant (for rebuilding derived indexes)."""
    cur.execute("SELECT * FROM memory_versions ORDER BY family_id, version")
    return cur.fetchall()


def max_version(cur: Cursor, family_id: UUID) -> int:
    cur.execute("SELECT coalesce(max(version), 0) AS v FROM memory_versions WHERE family_id = %s", (family_id,))
    row = cur.fetchone()
    return int(row["v"]) if row else 0


def content_of(row: Row) -> VersionContent:
    fields = VersionContent.model_fields
    return VersionContent.model_validate({k: row[k] for k in fields})


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


def list_audit(cur: Cursor, family_id: UUID) -> list[Row]:
    cur.execute("SELECT * FROM memory_audit WHERE family_id = %s ORDER BY audit_id", (family_id,))
    return cur.fetchall()


def add_edge(cur: Cursor, tenant: str, src: tuple[str, str], relation: str, dst: tuple[str, str]) -> None:
    cur.execute(
        """INSERT INTO lineage_edges (tenant, src_kind, src_id, relation, dst_kind, dst_id)
           VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (tenant, src[0], src[1], relation, dst[0], dst[1]),
    )


def edges_from(cur: Cursor, kinds_ids: list[tuple[str, str]]) -> list[Row]:
    if not kinds_ids:
        return []
    cur.execute(
        """SELECT src_kind, src_id, relation, dst_kind, dst_id FROM lineage_edges
           WHERE (src_kind, src_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
           ORDER BY src_kind, src_id, relation, dst_kind, dst_id""",
        ([k for k, _ in kinds_ids], [i for _, i in kinds_ids]),
    )
    return cur.fetchall()


def usage(cur: Cursor, family_id: UUID) -> dict[str, Any]:
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
    return {"briefings": int(cited.get("cited") or 0), "adopted": fb["adopted"], "refuted": fb["refuted"],
            "ignored": fb["ignored"], "last_used_at": max(last) if last else None}
