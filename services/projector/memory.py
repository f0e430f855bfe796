"""InMemoryProjectionStorage: the projection's storage as Python dictionaries (the reference implementation).

Same contract as PostgreSQL (`store.ProjectionTransaction`, checked by one shared test suite): events dedupe on
`(tenant, event_id)`, reads see only the tenant set for the transaction (what row-level security does
there), a transaction commits only when its block exits normally, and a savepoint rolls back only its
own block. Used by fast tests of the runner's commit order and by anyone embedding the projector without
a database; nothing in production uses it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from schemas.ledger import LedgerRecord
from schemas.memory import Episode
from services.projector.policy import Changes
from services.projector.store import ProjectionTransaction


@dataclass
class Tables:
    events: dict[tuple[str, UUID], tuple[LedgerRecord, int, int]] = field(default_factory=dict)
    episodes: dict[tuple[str, str], Episode] = field(default_factory=dict)
    candidates: dict[tuple[str, UUID], Any] = field(default_factory=dict)
    misleading: dict[tuple[str, UUID], Any] = field(default_factory=dict)
    feedback: dict[tuple[str, UUID], dict[str, Any]] = field(default_factory=dict)
    offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)


class InMemoryProjectionTransaction:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.tenant: str | None = None

    def set_tenant(self, tenant: str) -> None:
        self.tenant = tenant

    def _scope(self, writing: str | None = None) -> str:
        """The transaction's tenant; writing another tenant's row is refused (RLS's WITH CHECK)."""
        if self.tenant is None:
            raise PermissionError("no tenant set for this transaction")  # PostgreSQL's RLS shows nothing
        if writing is not None and writing != self.tenant:
            raise PermissionError("a row of another tenant")
        return self.tenant

    def insert_events(self, items: list[tuple[LedgerRecord, int, int]],
                      envelopes: Sequence[bytes] | None = None) -> set[Any]:
        return {rec.event_id for rec, p, o in items if self.insert_event(rec, p, o)}

    def insert_event(self, rec: LedgerRecord, partition: int, offset: int) -> bool:
        key = (self._scope(rec.tenant), rec.event_id)
        if key in self.tables.events:
            return False
        self.tables.events[key] = (rec, partition, offset)
        return True

    def load_episodes(self, incidents: list[str]) -> dict[str, Episode]:
        tenant = self._scope()
        return {i: self.tables.episodes[(tenant, i)].model_copy(deep=True) for i in incidents
                if (tenant, i) in self.tables.episodes}

    def save_episodes(self, episodes: list[Episode]) -> None:
        for e in episodes:
            self._scope(e.tenant)
            self.tables.episodes[(e.tenant, e.incident_id)] = e.model_copy(deep=True)

    def apply_side_effects(self, tenant: str, changes: list[Changes]) -> None:
        self._scope(tenant)
        for change in changes:
            if change.candidate is not None:
                self.tables.candidates.setdefault((tenant, change.candidate.candidate_id), change.candidate)
            for m in change.misleading:
                self.tables.misleading.setdefault((tenant, m.event_id), m)
            if change.feedback is not None:
                f = change.feedback
                row = self.tables.feedback.setdefault((tenant, f.family_id), {
                    "adopted": 0, "refuted": 0, "ignored": 0, "last_feedback_at": f.occurred_at})
                row[f.verdict] += 1
                row["last_feedback_at"] = max(row["last_feedback_at"], f.occurred_at)

    def save_offsets(self, consumer: str, topic: str, offsets: dict[int, int]) -> None:
        for partition, offset in offsets.items():
            self.tables.offsets[(consumer, topic, partition)] = offset

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        saved = copy.deepcopy(self.tables)
        try:
            yield
        except BaseException:
            self.tables.__dict__.update(saved.__dict__)
            raise


class InMemoryProjectionStorage:
    def __init__(self) -> None:
        self.tables = Tables()
        self.commits = 0

    @contextmanager
    def transaction(self) -> Iterator[ProjectionTransaction]:
        """Work on a copy; it replaces the committed tables only when the block exits normally."""
        tx = InMemoryProjectionTransaction(copy.deepcopy(self.tables))
        yield tx
        self.tables = tx.tables
        self.commits += 1

    def load_offsets(self, consumer: str, topic: str) -> dict[int, int]:
        return {p: o for (c, t, p), o in self.tables.offsets.items() if c == consumer and t == topic}
