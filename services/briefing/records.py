"""The briefing aggregate's repository: every SQL statement of the `briefings` table and the lineage edges
a briefing writes. Cursor in, no commits: `BriefingService` owns the transaction (the briefing row is written
in the same transaction as the read that produced it); verification reads what a briefing cited."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from services.common.db import Cursor


@dataclass(frozen=True)
class Cited:
    family_id: str
    version: int


@dataclass(frozen=True)
class StoredBriefing:
    project: str | None
    request: dict[str, Any]
    cited: tuple[Cited, ...]
    response: dict[str, Any] | None
    created_at: datetime


_INSERT = """
WITH briefing AS (
  INSERT INTO briefings (tenant, briefing_id, project, requested_by, request, cited, response)
  VALUES (%(tenant)s, %(id)s, %(project)s, %(by)s, %(request)s, %(cited)s, %(response)s)
  RETURNING briefing_id::text AS src_id)
INSERT INTO lineage_edges (tenant, src_kind, src_id, relation, dst_kind, dst_id)
SELECT %(tenant)s, 'briefing', b.src_id, 'cited', 'version', v FROM briefing b, unnest(%(versions)s::text[]) v
ON CONFLICT DO NOTHING
"""


def insert(cur: Cursor, *, tenant: str, briefing_id: UUID, project: str | None, requested_by: UUID | None,
           request: dict[str, Any], cited: list[Cited], response: dict[str, Any]) -> None:
    """The briefing row and a `cited` lineage edge per hint (`version` nodes, as `memory.records` writes
    them), in one statement."""
    cur.execute(_INSERT, {
        "tenant": tenant, "id": briefing_id, "project": project, "by": requested_by, "request": Jsonb(request),
        "cited": Jsonb([{"family_id": c.family_id, "version": c.version} for c in cited]),
        "response": Jsonb(response), "versions": [f"{c.family_id}:{c.version}" for c in cited],
    })


def get(cur: Cursor, briefing_id: UUID) -> StoredBriefing | None:
    cur.execute("SELECT project, request, cited, response, created_at FROM briefings WHERE briefing_id = %s",
                (briefing_id,))
    row = cur.fetchone()
    if row is None:
        return None
    return StoredBriefing(project=row["project"], request=row["request"], response=row["response"],
                          cited=tuple(Cited(str(c["family_id"]), int(c["version"])) for c in row["cited"]),
                          created_at=row["created_at"])
