"""The projection's repository: reads episode state and writes the policy's changes through a given cursor.

Two ports for the runner: `ProjectionStorage` opens transactions (`PostgresProjectionStorage`; in memory,
`memory.InMemoryProjectionStorage`), and `ProjectionTransaction` is what is read and written inside one of them
(`PostgresProjectionTransaction`, `memory.InMemoryProjectionTransaction`). `insert_events` writes the rows of
`ledger_events` (the events as projected, one row each); `read_episode` returns a `StoredEpisode`, an episode's
project and JSON body as stored, for the read side.

It never opens or commits a transaction: `runner.ProjectorRunner` does. Every write is idempotent
on its natural key, and the event row `(tenant, event_id)` is the dedupe guard: a repeated event id
is skipped before the policy runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from psycopg import sql
from psycopg.types.json import Jsonb

from schemas.ledger import LedgerRecord
from schemas.memory import Episode
from services.common.db import Cursor, Database, set_tenant
from services.projector.policy import Changes, FeedbackDelta, MisleadingSignal, NewCandidate

PROJECTION_TABLES = ("ledger_events", "episodes", "candidates", "misleading_signals", "family_feedback")


# The batch statements take ONE JSON document (serialized by pydantic-core and orjson in C) instead of a
# parameter per value: per-value adaptation in the driver cost more than PostgreSQL's insert itself.
# `record` is the envelope (the hashed part); `recorded_at` and `content_hash` travel beside it.
_EVENTS_INSERT = """INSERT INTO ledger_events (tenant, event_id, project, incident_id, type, trust, writer,
       occurred_at, recorded_at, content_hash, payload, source_partition, source_offset)
   SELECT r.tenant, r.event_id, r.project, r.incident_id, r.type, r.trust, r.writer, r.occurred_at,
          x.recorded_at, x.content_hash, r.payload, x.source_partition, x.source_offset
     FROM jsonb_to_recordset(%s::jsonb) AS x(source_partition int, source_offset bigint, recorded_at timestamptz,
                                             content_hash text, record jsonb),
          jsonb_to_record(x.record) AS r(event_id uuid, type text, tenant text, project text, incident_id text,
                                         occurred_at timestamptz, writer jsonb, trust text, payload jsonb)
   ON CONFLICT (tenant, event_id) DO NOTHING RETURNING event_id"""

_EPISODES_UPSERT = """INSERT INTO episodes
     (tenant, incident_id, project, status, event_count, opened_at, resolved_at, body)
   SELECT tenant, incident_id, project, status, event_count, opened_at, resolved_at, body
     FROM jsonb_to_recordset(%s::jsonb) AS x(tenant text, incident_id text, project text, status text,
                                             event_count int, opened_at timestamptz, resolved_at timestamptz,
                                             body jsonb)
   ON CONFLICT (tenant, incident_id) DO UPDATE SET project = EXCLUDED.project,
     status = EXCLUDED.status, event_count = EXCLUDED.event_count, opened_at = EXCLUDED.opened_at,
     resolved_at = EXCLUDED.resolved_at, body = EXCLUDED.body"""


def insert_event(cur: Cursor, rec: LedgerRecord, partition: int, offset: int) -> bool:
    """Insert the event row; False when this tenant has already seen the event id."""
    return bool(insert_events(cur, [(rec, partition, offset)]))


@dataclass(frozen=True)
class StoredEpisode:
    """An episode as stored: its project and the JSON body (not validated: the read side shows it)."""

    project: str
    body: dict[str, Any]


def read_episode(cur: Cursor, incident_id: str) -> StoredEpisode | None:
    """An episode as stored (the read side: the API, the review queue), in the transaction's tenant."""
    cur.execute("SELECT project, body FROM episodes WHERE incident_id = %s", (incident_id,))
    row = cur.fetchone()
    return StoredEpisode(project=row["project"], body=row["body"]) if row else None


def _insert_candidate(cur: Cursor, tenant: str, c: NewCandidate) -> None:
    cur.execute(
        """INSERT INTO candidates
             (tenant, candidate_id, project, incident_id, memory_type, summary, content, created_at, imported)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (tenant, c.candidate_id, c.project, c.incident_id, c.draft.memory_type, c.draft.summary,
         Jsonb(c.draft.model_dump(mode="json")), c.created_at, c.draft.imported),
    )


def _insert_misleading(cur: Cursor, tenant: str, m: MisleadingSignal) -> None:
    cur.execute(
        """INSERT INTO misleading_signals (tenant, event_id, project, incident_id, signal, reason)
           VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (tenant, m.event_id, m.project, m.incident_id, m.signal, m.reason),
    )


def _apply_feedback(cur: Cursor, tenant: str, f: FeedbackDelta) -> None:
    column = sql.Identifier({"adopted": "adopted", "refuted": "refuted", "ignored": "ignored"}[f.verdict])
    cur.execute(
        sql.SQL("""INSERT INTO family_feedback (tenant, family_id, {col}, last_feedback_at) VALUES (%s, %s, 1, %s)
            ON CONFLICT (tenant, family_id) DO UPDATE SET {col} = family_feedback.{col} + 1,
              last_feedback_at = GREATEST(family_feedback.last_feedback_at, EXCLUDED.last_feedback_at)""").format(
            col=column),
        (tenant, f.family_id, f.occurred_at),
    )


def load_offsets(cur: Cursor, consumer: str, topic: str) -> dict[int, int]:
    cur.execute(
        "SELECT partition, next_offset FROM projector_offsets WHERE consumer = %s AND topic = %s",
        (consumer, topic),
    )
    return {int(r["partition"]): int(r["next_offset"]) for r in cur.fetchall()}


def save_offsets(cur: Cursor, consumer: str, topic: str, offsets: dict[int, int]) -> None:
    rows: list[Any] = [(consumer, topic, p, o) for p, o in sorted(offsets.items())]
    cur.executemany(
        """INSERT INTO projector_offsets (consumer, topic, partition, next_offset) VALUES (%s, %s, %s, %s)
           ON CONFLICT (consumer, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset""",
        rows,
    )


def truncate_projection(cur: Cursor, consumer: str) -> None:
    """Empty every projection table and forget the consumer's offsets (owner role; see rebuild)."""
    cur.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(map(sql.Identifier, PROJECTION_TABLES))))
    cur.execute("DELETE FROM projector_offsets WHERE consumer = %s", (consumer,))


# ---------------------------------------------------------------- batch forms (the runner's fast path)
def insert_events(cur: Cursor, items: list[tuple[LedgerRecord, int, int]],
                  envelopes: Sequence[bytes] | None = None) -> set[Any]:
    """Insert event rows; return the event ids that were new for this tenant. One statement over arrays
    (a repeat inside the batch conflicts with its first copy and is skipped like any other repeat).
    `envelopes`: each record's canonical envelope JSON exactly as its content_hash was verified over (the
    runner has it from `verify_hash`), stored instead of serializing the model again (13 us per event)."""
    if not items:
        return set()
    if envelopes is None:
        envelopes = [r.model_dump_json(exclude={"recorded_at", "content_hash"}).encode() for r, _, _ in items]
    doc = [{"source_partition": p, "source_offset": o, "recorded_at": r.recorded_at, "content_hash": r.content_hash,
            "record": orjson.Fragment(e)} for (r, p, o), e in zip(items, envelopes, strict=True)]
    cur.execute(_EVENTS_INSERT, (orjson.dumps(doc).decode(),))
    return {row["event_id"] for row in cur.fetchall()}


def load_episodes(cur: Cursor, incidents: list[str]) -> dict[str, Episode]:
    if not incidents:
        return {}
    cur.execute("SELECT incident_id, body FROM episodes WHERE incident_id = ANY(%s)", (incidents,))
    return {r["incident_id"]: Episode.model_validate(r["body"]) for r in cur.fetchall()}


def save_episodes(cur: Cursor, episodes: list[Episode]) -> None:
    """Upsert episodes (each incident at most once per call) in one statement over arrays."""
    if episodes:
        doc = [{"tenant": e.tenant, "incident_id": e.incident_id, "project": e.project, "status": e.status,
                "event_count": e.event_count, "opened_at": e.opened_at, "resolved_at": e.resolved_at,
                "body": orjson.Fragment(e.model_dump_json())} for e in episodes]
        cur.execute(_EPISODES_UPSERT, (orjson.dumps(doc).decode(),))


def apply_side_effects(cur: Cursor, tenant: str, changes: list[Changes]) -> None:
    """Candidates, misleading signals and feedback of many changes (episodes are saved separately)."""
    for change in changes:
        if change.candidate is not None:
            _insert_candidate(cur, tenant, change.candidate)
        for item in change.misleading:
            _insert_misleading(cur, tenant, item)
        if change.feedback is not None:
            _apply_feedback(cur, tenant, change.feedback)


# ---------------------------------------------------------------- the runner's port
class ProjectionTransaction(Protocol):
    """What is read and written inside ONE transaction of the projection (what the runner writes through).
    Implementations: `PostgresProjectionTransaction` (production) and `memory.InMemoryProjectionTransaction`
    (reference and tests); `tests/integration/test_projection_store_contract.py` runs the same contract against
    both."""

    def set_tenant(self, tenant: str) -> None: ...
    def insert_events(self, items: list[tuple[LedgerRecord, int, int]],
                      envelopes: Sequence[bytes] | None = None) -> set[Any]: ...
    def insert_event(self, rec: LedgerRecord, partition: int, offset: int) -> bool: ...
    def load_episodes(self, incidents: list[str]) -> dict[str, Episode]: ...
    def save_episodes(self, episodes: list[Episode]) -> None: ...
    def apply_side_effects(self, tenant: str, changes: list[Changes]) -> None: ...
    def save_offsets(self, consumer: str, topic: str, offsets: dict[int, int]) -> None: ...
    def savepoint(self) -> AbstractContextManager[Any]: ...


class ProjectionStorage(Protocol):
    """The projection's storage, which opens its transactions: `transaction()` commits when its block exits
    normally, else rolls back."""

    def transaction(self) -> AbstractContextManager[ProjectionTransaction]: ...
    def load_offsets(self, consumer: str, topic: str) -> dict[int, int]: ...


class PostgresProjectionTransaction:
    def __init__(self, cur: Cursor) -> None:
        self.cur = cur

    def set_tenant(self, tenant: str) -> None:
        set_tenant(self.cur, tenant)

    def insert_events(self, items: list[tuple[LedgerRecord, int, int]],
                      envelopes: Sequence[bytes] | None = None) -> set[Any]:
        return insert_events(self.cur, items, envelopes)

    def insert_event(self, rec: LedgerRecord, partition: int, offset: int) -> bool:
        return insert_event(self.cur, rec, partition, offset)

    def load_episodes(self, incidents: list[str]) -> dict[str, Episode]:
        return load_episodes(self.cur, incidents)

    def save_episodes(self, episodes: list[Episode]) -> None:
        save_episodes(self.cur, episodes)

    def apply_side_effects(self, tenant: str, changes: list[Changes]) -> None:
        apply_side_effects(self.cur, tenant, changes)

    def save_offsets(self, consumer: str, topic: str, offsets: dict[int, int]) -> None:
        save_offsets(self.cur, consumer, topic, offsets)

    def savepoint(self) -> AbstractContextManager[Any]:
        return self.cur.connection.transaction()


class PostgresProjectionStorage:
    def __init__(self, db: Database) -> None:
        self.db = db

    @contextmanager
    def transaction(self) -> Iterator[ProjectionTransaction]:
        with self.db.transaction() as cur:
            yield PostgresProjectionTransaction(cur)

    def load_offsets(self, consumer: str, topic: str) -> dict[int, int]:
        with self.db.transaction() as cur:
            return load_offsets(cur, consumer, topic)
