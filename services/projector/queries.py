"""EpisodeQueries: read access to the episode projection for the API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from psycopg import sql

from schemas.ledger import LedgerRecord, Trust
from schemas.memory import Episode
from schemas.views import EpisodeView, Resume, TrustedEvidence
from services.common.auth import Principal
from services.common.db import Database
from services.common.errors import NotFound
from services.common.paging import where
from services.projector import store


def resume_view(episode: Episode) -> Resume:
    """Session memory for an agent that resumes the investigation (another replica, after a crash): the
    hypotheses still open, those judged, the trusted evidence so far and what is still missing. Derived
    when read, so the projection itself stays exactly what the ledger produces."""
    hypotheses = list(episode.hypotheses.values())
    open_ = [h for h in hypotheses if h.status == "proposed"]
    trusted = [o for o in episode.observations if o.trust == Trust.TRUSTED_TOOL]
    questions = [f"verify or refute: {h.statement}" for h in open_]
    if not trusted:
        questions.append("no trusted tool evidence yet: query the live systems")
    if episode.status == "open" and not episode.root_cause:
        questions.append("root cause not established")
    return Resume(open_hypotheses=open_, judged_hypotheses=[h for h in hypotheses if h.status != "proposed"],
                  trusted_evidence=[TrustedEvidence(event_id=o.event_id, summary=o.summary, query=o.query)
                                    for o in trusted],
                  misleading_signals=episode.misleading_signals, open_questions=questions)


class EpisodeQueries:
    def __init__(self, db: Database) -> None:
        self.db = db

    def episode(self, principal: Principal, incident_id: str) -> EpisodeView:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            row = store.read_episode(cur, incident_id)
        if row is None or (principal.project and row.project != principal.project):
            raise NotFound(f"no episode for incident {incident_id}")
        episode = Episode.model_validate(row.body)
        return EpisodeView(**episode.model_dump(), resume=resume_view(episode))

    def export(self, principal: Principal, since: datetime | None, incident_id: str | None) -> Iterator[bytes]:
        """The tenant's ledger records as stored on the topic (NDJSON lines), in ledger order.

        Read from the projection's event table, which holds every applied event exactly as recorded
        (envelope, recorded_at, content_hash); streamed with a server-side cursor.
        """
        principal.require("admin")
        cond, params = where([("project = %s", principal.project), ("occurred_at >= %s", since),
                              ("incident_id = %s", incident_id)])
        query = sql.SQL("SELECT * FROM ledger_events") + cond + sql.SQL(" ORDER BY source_partition, source_offset")
        with self.db.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('opslore.tenant', %s, true)", (principal.scoped_tenant,))
            with conn.cursor(name="ledger_export") as cur:
                cur.execute(query, params)
                for row in cur:
                    yield record_of(row).to_json() + b"\n"


def record_of(row: dict[str, Any]) -> LedgerRecord:
    return LedgerRecord(
        event_id=row["event_id"], type=row["type"], tenant=row["tenant"], project=row["project"],
        incident_id=row["incident_id"], occurred_at=row["occurred_at"], writer=row["writer"], trust=row["trust"],
        payload=row["payload"], recorded_at=row["recorded_at"], content_hash=row["content_hash"],
    )
