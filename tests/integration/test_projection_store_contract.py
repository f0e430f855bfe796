"""One contract for the projection's storage, run against PostgreSQL (the application role, under
row-level security) and against the in-memory reference implementation (eventsourcing's recorder-test
pattern): whatever passes here may sit under `ProjectorRunner`."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from schemas.ledger import LedgerRecord
from services.common.db import Database
from services.common.settings import Settings
from services.projector import policy
from services.projector.memory import InMemoryProjectionStorage
from services.projector.runner import verify_hash
from services.projector.store import PostgresProjectionStorage, ProjectionStorage
from tests.factories import raw_event, record, resolved_incident


def events(tenant: str, incident: str = "INC-C") -> list[LedgerRecord]:
    return [record(raw, tenant=tenant) for raw in resolved_incident(incident)]


def project_all(storage: ProjectionStorage, tenant: str, evs: list[LedgerRecord]) -> None:
    with storage.transaction() as tx:
        tx.set_tenant(tenant)
        new = tx.insert_events([(e, 0, i) for i, e in enumerate(evs)])
        episodes = tx.load_episodes(sorted({e.incident_id for e in evs}))
        changes = []
        for e in (e for e in evs if e.event_id in new):
            change = policy.project(episodes.get(e.incident_id), e)
            if change.episode is not None:
                episodes[e.incident_id] = change.episode
            changes.append(change)
        tx.save_episodes(list(episodes.values()))
        tx.apply_side_effects(tenant, changes)


class ProjectionStoreContract:
    """Subclasses provide `storage` and `side_effects` (candidates, misleading, feedback of a tenant)."""

    @pytest.fixture
    def storage(self) -> Any:
        raise NotImplementedError

    def side_effects(self, storage: Any, tenant: str) -> dict[str, Any]:
        raise NotImplementedError

    def test_event_ids_dedupe_per_tenant(self, storage: ProjectionStorage) -> None:
        tenant, other = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
        ev = events(tenant)[0]
        with storage.transaction() as tx:
            tx.set_tenant(tenant)
            assert tx.insert_events([(ev, 0, 0), (ev, 0, 1)]) == {ev.event_id}
        with storage.transaction() as tx:
            tx.set_tenant(tenant)
            assert tx.insert_event(ev, 0, 2) is False
            tx.set_tenant(other)
            assert tx.insert_event(ev.model_copy(update={"tenant": other}), 0, 3) is True

    def test_episodes_round_trip_and_reads_see_only_the_transaction_tenant(self, storage: ProjectionStorage) -> None:
        tenant, other = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
        project_all(storage, tenant, events(tenant))
        with storage.transaction() as tx:
            tx.set_tenant(tenant)
            episode = tx.load_episodes(["INC-C", "INC-NONE"])
            tx.set_tenant(other)
            assert tx.load_episodes(["INC-C"]) == {}
        assert list(episode) == ["INC-C"] and episode["INC-C"].status == "resolved"
        assert episode["INC-C"].event_count == 5 and len(episode["INC-C"].candidate_ids) == 1

    def test_side_effects_are_idempotent_and_feedback_accumulates(self, storage: ProjectionStorage) -> None:
        tenant = f"t-{uuid.uuid4().hex[:8]}"
        family = uuid.uuid4()
        misleading = raw_event("signal.misleading", "INC-C", {"signal": "cpu_high", "reason": "a batch job"})
        feedback = [raw_event("briefing.feedback", "INC-C", {"briefing_id": str(uuid.uuid4()),
                                                             "family_id": str(family), "verdict": v},
                              trust="user_stated") for v in ("adopted", "adopted", "refuted")]
        evs = [*events(tenant), record(misleading, tenant=tenant), *(record(f, tenant=tenant) for f in feedback)]
        project_all(storage, tenant, evs)
        project_all(storage, tenant, evs)  # the same events again (a redelivery) change nothing
        with storage.transaction() as tx:  # and side effects written twice are written once
            tx.set_tenant(tenant)
            tx.apply_side_effects(tenant, [policy.project(None, evs[-4])])
        seen = self.side_effects(storage, tenant)
        assert seen["candidates"] == 1 and seen["misleading"] == ["cpu_high"]
        assert seen["feedback"] == {"adopted": 2, "refuted": 1, "ignored": 0}

    def test_a_failed_transaction_leaves_nothing_and_a_savepoint_undoes_only_its_block(
            self, storage: ProjectionStorage) -> None:
        tenant = f"t-{uuid.uuid4().hex[:8]}"
        first, second = events(tenant)[:2]
        with pytest.raises(RuntimeError), storage.transaction() as tx:
            tx.set_tenant(tenant)
            tx.insert_event(first, 0, 0)
            raise RuntimeError("crash before the commit")
        with storage.transaction() as tx:
            tx.set_tenant(tenant)
            assert tx.insert_event(first, 0, 0) is True  # the failed transaction recorded nothing
            with pytest.raises(RuntimeError), tx.savepoint():
                tx.insert_event(second, 0, 1)
                raise RuntimeError("one event's projection failed")
            assert tx.insert_event(second, 0, 1) is True  # only the savepoint's block was undone
            assert tx.insert_event(first, 0, 2) is False

    def test_offsets_round_trip_per_consumer(self, storage: ProjectionStorage) -> None:
        consumer = f"c-{uuid.uuid4().hex[:8]}"
        with storage.transaction() as tx:
            tx.save_offsets(consumer, "ledger", {0: 10, 3: 7})
        with storage.transaction() as tx:
            tx.save_offsets(consumer, "ledger", {0: 12})
        assert storage.load_offsets(consumer, "ledger") == {0: 12, 3: 7}
        assert storage.load_offsets(consumer, "other-topic") == {}


class TestInMemoryProjectionStore(ProjectionStoreContract):
    @pytest.fixture
    def storage(self) -> InMemoryProjectionStorage:
        return InMemoryProjectionStorage()

    def side_effects(self, storage: InMemoryProjectionStorage, tenant: str) -> dict[str, Any]:
        t = storage.tables
        fb = [{k: v for k, v in row.items() if k != "last_feedback_at"}
              for (tn, _), row in t.feedback.items() if tn == tenant]
        return {"candidates": sum(1 for tn, _ in t.candidates if tn == tenant),
                "misleading": sorted(m.signal for (tn, _), m in t.misleading.items() if tn == tenant),
                "feedback": fb[0] if fb else None}


class TestPostgresProjectionStore(ProjectionStoreContract):
    @pytest.fixture
    def storage(self, settings: Settings) -> Any:
        db = Database(settings.database_url, max_size=2)  # the application role: RLS applies
        db.open()
        yield PostgresProjectionStorage(db)
        db.close()

    def side_effects(self, storage: PostgresProjectionStorage, tenant: str) -> dict[str, Any]:
        with storage.db.tenant_transaction(tenant) as cur:
            candidates = cur.execute("SELECT count(*) AS n FROM candidates").fetchone()
            misleading = cur.execute("SELECT signal FROM misleading_signals ORDER BY signal").fetchall()
            fb = cur.execute("SELECT adopted, refuted, ignored FROM family_feedback").fetchone()
        return {"candidates": candidates["n"] if candidates else 0, "misleading": [m["signal"] for m in misleading],
                "feedback": dict(fb) if fb else None}


def test_postgres_refuses_an_event_of_another_tenant(settings: Settings) -> None:
    """Row-level security's WITH CHECK, which the in-memory store mirrors with a PermissionError."""
    db = Database(settings.database_url, max_size=1)
    db.open()
    try:
        ev = events("tenant-a")[0]
        with pytest.raises(psycopg.errors.InsufficientPrivilege), PostgresProjectionStorage(db).transaction() as tx:
            tx.set_tenant("tenant-b")
            tx.insert_event(ev, 0, 0)
        with pytest.raises(PermissionError), InMemoryProjectionStorage().transaction() as mem:
            mem.set_tenant("tenant-b")
            mem.insert_event(ev, 0, 0)
    finally:
        db.close()


def test_the_verified_envelope_is_stored_as_the_model_would_be(settings: Settings) -> None:
    """The runner stores the envelope bytes its hash check verified instead of serializing the model again:
    every column must come out as the record's model says, on both paths."""
    db = Database(settings.database_url, max_size=1)
    db.open()
    try:
        for use_envelopes in (False, True):
            tenant = f"t-{uuid.uuid4().hex[:8]}"
            evs = events(tenant)
            with PostgresProjectionStorage(db).transaction() as tx:
                tx.set_tenant(tenant)
                envelopes = [verify_hash(e.to_json())[1] for e in evs] if use_envelopes else None
                assert tx.insert_events([(e, 0, i) for i, e in enumerate(evs)], envelopes) == {e.event_id for e in evs}
            with db.tenant_transaction(tenant) as cur:
                cur.execute("SELECT event_id, type, tenant, project, incident_id, occurred_at, writer, trust, payload,"
                            " recorded_at, content_hash FROM ledger_events")
                stored = {r["event_id"]: r for r in cur.fetchall()}
            assert stored == {e.event_id: {
                "event_id": e.event_id, "type": e.type.value, "tenant": e.tenant, "project": e.project,
                "incident_id": e.incident_id, "occurred_at": e.occurred_at, "writer": e.writer.model_dump(mode="json"),
                "trust": e.trust.value, "payload": e.payload, "recorded_at": e.recorded_at,
                "content_hash": e.content_hash} for e in evs}
    finally:
        db.close()
