"""The postmortem imports' bookkeeping (`postmortem_imports`): every SQL statement of it. Cursor in, no commits."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from services.common.db import Cursor


@dataclass(frozen=True)
class ImportRow:
    incident_id: str
    event_ids: tuple[UUID, ...]
    candidate: bool
    unparsed: tuple[str, ...]


def find(cur: Cursor, project: str, incident_id: str, content_sha256: str) -> ImportRow | None:
    cur.execute("""SELECT incident_id, event_ids, candidate, unparsed FROM postmortem_imports
                   WHERE project = %s AND incident_id = %s AND content_sha256 = %s""",
                (project, incident_id, content_sha256))
    row = cur.fetchone()
    if row is None:
        return None
    return ImportRow(row["incident_id"], tuple(row["event_ids"]), bool(row["candidate"]), tuple(row["unparsed"]))


def record(cur: Cursor, *, tenant: str, project: str, incident_id: str, content_sha256: str, source_ref: str | None,
           event_ids: list[UUID], candidate: bool, unparsed: list[str], imported_by: str) -> None:
    cur.execute("""INSERT INTO postmortem_imports (tenant, project, incident_id, content_sha256, source_ref, event_ids,
                                                   candidate, unparsed, imported_by)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
                (tenant, project, incident_id, content_sha256, source_ref, event_ids, candidate, unparsed, imported_by))
