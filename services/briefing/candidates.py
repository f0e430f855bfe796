"""Candidate generation for briefings: hard filters, then exact and full-text matches, in SQL.

Hard filters (never relaxed): the caller's tenant (RLS) and project, family and version both active,
inside the validity window. Applicability filtering and scoring happen in Python (`rank`).
"""

from __future__ import annotations

from datetime import datetime

from schemas.api import BriefingRequest
from services.briefing.text import tsquery_any
from services.common.db import Cursor, Row

MAX_CANDIDATES = 200

_SQL = """
SELECT v.family_id, v.version, v.project, v.memory_type, v.summary, v.root_cause, v.root_cause_category,
       v.alert_name, v.services, v.signals, v.entities, v.misleading_signals, v.source_incidents,
       v.evidence, v.verify_with, v.trust_mix, v.confidence, v.environment, v.cluster, v.version_range,
       v.topology_fingerprint, v.applicability_restricted, v.owner, v.valid_until, v.last_verified_at,
       v.observed_at, v.search_tokens,
       coalesce(fb.adopted, 0) AS adopted, coalesce(fb.refuted, 0) AS refuted,
       ts_rank(v.search_tsv, q.query) AS text_rank
FROM memory_families f
JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
LEFT JOIN family_feedback fb ON fb.family_id = f.family_id
CROSS JOIN (SELECT CASE WHEN %(tsq)s = '' THEN NULL ELSE %(tsq)s::tsquery END AS query) q
WHERE f.state = 'active' AND v.state = 'active'
  AND v.valid_from <= %(now)s AND (v.valid_until IS NULL OR v.valid_until > %(now)s)
  AND (%(project)s::text IS NULL OR f.project = %(project)s)
  AND ( v.alert_name = %(alert)s
     OR v.services && %(services)s OR v.signals && %(signals)s OR v.entities && %(entities)s
     OR (q.query IS NOT NULL AND v.search_tsv @@ q.query) )
ORDER BY text_rank DESC, v.family_id
LIMIT %(limit)s
"""


def fetch_candidates(cur: Cursor, req: BriefingRequest, tokens: list[str], project: str | None,
                     now: datetime) -> list[Row]:
    cur.execute(_SQL, {
        "tsq": tsquery_any(tokens), "now": now, "project": project,
        "alert": req.alert.name if req.alert else None, "services": req.services,
        "signals": req.signals, "entities": req.entities, "limit": MAX_CANDIDATES,
    })
    return cur.fetchall()


def alert_categories(cur: Cursor, alert_name: str, project: str | None, now: datetime) -> dict[str, set[str]]:
    """Root-cause categories each active family under this alert name has (for alternative causes)."""
    cur.execute(
        """SELECT v.root_cause_category AS category, array_agg(DISTINCT i) AS incidents
           FROM memory_families f JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
           CROSS JOIN LATERAL unnest(v.source_incidents) AS i
           WHERE f.state = 'active' AND v.alert_name = %s AND v.root_cause_category IS NOT NULL
             AND (%s::text IS NULL OR f.project = %s) AND (v.valid_until IS NULL OR v.valid_until > %s)
           GROUP BY v.root_cause_category""",
        (alert_name, project, project, now),
    )
    return {r["category"]: set(r["incidents"]) for r in cur.fetchall()}


def misleading_in_tenant(cur: Cursor, signals: list[str]) -> dict[str, list[str]]:
    if not signals:
        return {}
    cur.execute(
        "SELECT signal, array_agg(DISTINCT incident_id) AS incidents FROM misleading_signals"
        " WHERE signal = ANY(%s) GROUP BY signal",
        (signals,),
    )
    return {r["signal"]: list(r["incidents"]) for r in cur.fetchall()}
