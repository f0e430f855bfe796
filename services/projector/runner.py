"""ProjectorRunner: the poll loop that turns the ledger topic into PostgreSQL projections.

Commit order for each polled batch:
  1. Decode every record and verify its content_hash. One that does not decode or whose hash does not
     match is set aside for the dead-letter topic.
  2. In ONE PostgreSQL transaction: apply the batch, then store the next offset of every partition in
     `projector_offsets`. Fast path (under a SAVEPOINT): per tenant, insert the event rows in one
     pipelined statement (which tells the new `(tenant, event_id)`s from repeats), load the touched
     episodes in one query, run the pure policy in memory, write each touched episode once. If the fast
     path raises, it is rolled back and the batch is applied event by event, each under its own
     SAVEPOINT, so that only the event whose projection raises goes to the dead-letter topic.
  3. Produce the dead-letter records and flush them (before the commit, so none is lost).
  4. Commit the PostgreSQL transaction.
  5. Only then commit the Kafka consumer-group offsets (for lag monitoring; sent without waiting).
PostgreSQL is the source of truth for the position: when partitions are assigned, the runner seeks
to the stored offsets (or to the beginning when there are none, which is how a rebuild starts).
A crash before 4 re-reads the batch (nothing was applied); after 4, the stored offsets skip it.
A crash between 3 and 4 can repeat a dead-letter record; its key (topic/partition/offset) dedupes it.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from pydantic import ValidationError

from schemas.ledger import LedgerRecord, Payload, canonical_json
from services.common import logs
from services.common.db import Database
from services.common.kafka import ensure_topics, ledger_consumer, plain_producer
from services.common.settings import Settings
from services.projector import metrics, policy, store
from services.projector.readiness import GroupState

log = logging.getLogger("opslore.projector")


def traceparent_of(rec: Any) -> str | None:
    """The `traceparent` header the gateway stamped on the record, if any."""
    for key, value in rec.headers or []:
        if key == "traceparent" and value:
            return bytes(value).decode("ascii", errors="replace")
    return None


@dataclass(frozen=True)
class DeadLetter:
    partition: int
    offset: int
    reason: str
    value: bytes

    def key(self, topic: str) -> bytes:
        return f"{topic}/{self.partition}/{self.offset}".encode()

    def to_json(self, topic: str) -> bytes:
        return orjson.dumps({
            "topic": topic, "partition": self.partition, "offset": self.offset,
            "reason": self.reason, "value": self.value.decode("utf-8", errors="replace"),
        })


@dataclass(frozen=True)
class Decoded:
    """A ledger record that decoded and whose content_hash matched, with its typed payload (validated once)."""

    rec: Any
    event: LedgerRecord
    payload: Payload
    envelope: bytes  # the canonical envelope JSON the content_hash was checked against


def verify_hash(value: bytes) -> tuple[dict[str, Any], bytes]:
    """The record's JSON and its canonical envelope (the record minus `recorded_at` and `content_hash`),
    after checking that `content_hash` is the SHA-256 of that envelope, computed from the bytes as stored."""
    raw = orjson.loads(value)
    if not isinstance(raw, dict):
        raise ValueError("a ledger record is a JSON object")
    envelope = canonical_json({k: v for k, v in raw.items() if k not in ("recorded_at", "content_hash")})
    if hashlib.sha256(envelope).hexdigest() != raw.get("content_hash"):
        raise ValueError("content_hash does not match the envelope")
    return raw, envelope


# A batch of 2,000 events allocates some 50k objects (models, dicts) that all live until it commits. At the
# default (700, 10, 10) the collector walked them over and over: decode cost 72-84 us per event against 36-54
# with collection off and 33-39 at a first generation of 50,000 (20k events of bench.generate's ledger, one
# process). The projection builds no reference cycles on purpose; what cycles there are (tracebacks, the Kafka
# client's internals) are still collected, in larger steps.
GC_THRESHOLDS = (50_000, 20, 20)


@dataclass
class BatchResult:
    applied: int = 0
    duplicates: int = 0
    dead_letters: int = 0


class _SeekToStoredOffsets(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, runner: ProjectorRunner) -> None:
        self.runner = runner

    def on_partitions_revoked(self, revoked: Any) -> None:
        """Called inside poll(), between batches: the last batch's transaction has committed, so the
        partitions leave with their offsets stored in PostgreSQL and nothing half-applied."""
        log.info("partitions revoked: %s", sorted(tp.partition for tp in revoked))
        self.runner.group = GroupState()  # rebalancing: not ready until the assignment completes

    def on_partitions_assigned(self, assigned: Any) -> None:
        log.info("partitions assigned: %s (seeking to the offsets stored with the projection)",
                 sorted(tp.partition for tp in assigned))
        self.runner.seek_to_stored(list(assigned))
        partitions = frozenset(tp.partition for tp in assigned)  # empty for a standby member
        self.runner.group = GroupState(member=True, partitions=partitions, lag=dict.fromkeys(partitions),
                                       polled_at=time.monotonic())


RESTART_BACKOFF = (0.5, 10.0)  # seconds: first wait after a failure, and the cap


class ProjectorRunner:
    def __init__(self, settings: Settings, db: Database | None, *, consumer_name: str | None = None,
                 storage: store.ProjectionStorage | None = None) -> None:
        """`storage` defaults to PostgreSQL through `db` (the in-memory storage is for tests)."""
        if storage is None:
            assert db is not None, "a Database or a ProjectionStorage is required"
            storage = store.PostgresProjectionStorage(db)
        self.settings = settings
        self.storage = storage
        self.topic = settings.topic
        self.consumer_name = consumer_name or settings.consumer_group
        self.consumer: KafkaConsumer | None = None
        self.dlq: KafkaProducer | None = None
        self.stop_event = threading.Event()
        self.group = GroupState()  # what the loop last saw, for the readiness probe (services.projector.readiness)
        self.positions: dict[int, int] = {}  # partition -> next offset to project (seeks and committed batches)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        ensure_topics(self.settings)  # the dead-letter topic must exist before anything fails
        self.consumer = ledger_consumer(self.settings, self.consumer_name)
        self.consumer.subscribe([self.topic], listener=_SeekToStoredOffsets(self))
        self.dlq = plain_producer(self.settings, f"{self.consumer_name}-dlq")

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close(autocommit=False)
        if self.dlq is not None:
            self.dlq.close()

    def run_forever(self) -> None:
        """Poll until SIGTERM. When PostgreSQL or Kafka fails under it, the runner closes its consumer,
        waits (backoff 0.5 s doubling to 10 s) and starts again: the new consumer seeks to the offsets stored
        in PostgreSQL, so the batch that failed is read again, nothing is lost or applied twice, and no
        operator has to restart the process."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop_event.set())
        gc.freeze()  # what startup built lives for the whole run: keep it out of every collection
        gc.set_threshold(*GC_THRESHOLDS)
        backoff = RESTART_BACKOFF[0]
        while not self.stop_event.is_set():
            try:
                self.start()
                while not self.stop_event.is_set():
                    self.poll_once()
                    backoff = RESTART_BACKOFF[0]
            except Exception:
                metrics.RESTARTS.inc()
                log.exception("projector loop failed; restarting from the stored offsets in %.1fs", backoff)
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, RESTART_BACKOFF[1])
            finally:
                self.group = GroupState()
                with contextlib.suppress(Exception):
                    self.close()
                self.consumer = self.dlq = None

    def seek_to_stored(self, partitions: Sequence[TopicPartition]) -> None:
        assert self.consumer is not None
        stored = self.storage.load_offsets(self.consumer_name, self.topic)
        for tp in partitions:
            if tp.partition in stored:
                self.consumer.seek(tp, stored[tp.partition])
            else:
                self.consumer.seek_to_beginning(tp)
            self.positions[tp.partition] = stored.get(tp.partition, 0)  # the ledger is never truncated

    # ------------------------------------------------------------------ one batch
    def poll_once(self, timeout_ms: int = 500) -> BatchResult:
        assert self.consumer is not None
        with metrics.stage("kafka_poll"):
            polled = self.consumer.poll(timeout_ms=timeout_ms, max_records=self.settings.projector_batch)
        if not polled:
            self._note_position()
            return BatchResult()
        records = [r for batch in polled.values() for r in batch]
        start = time.perf_counter()
        result, offsets = self._project(records)
        with metrics.stage("kafka_commit"):
            self._commit_kafka(offsets)
        self._observe(result, offsets, time.perf_counter() - start)
        self.positions.update(offsets)
        self._note_position()
        return result

    def _note_position(self) -> None:
        """The readiness probe's view: own partitions' lag (the high watermark the last fetch reported minus the
        next offset this process will project: no round trip) and the time of this poll."""
        group = self.group
        if not group.member or self.consumer is None:
            return
        lag: dict[int, int | None] = {}
        for partition in group.partitions:
            end = self.consumer.highwater(TopicPartition(self.topic, partition))
            lag[partition] = None if end is None else max(0, end - self.positions.get(partition, 0))
        self.group = GroupState(member=True, partitions=group.partitions, lag=lag, polled_at=time.monotonic())

    def _observe(self, result: BatchResult, offsets: dict[int, int], seconds: float) -> None:
        metrics.EVENTS.labels("applied").inc(result.applied)
        metrics.EVENTS.labels("duplicate").inc(result.duplicates)
        metrics.EVENTS.labels("dead_letter").inc(result.dead_letters)
        metrics.BATCH_SECONDS.observe(seconds)
        metrics.LAST_BATCH.set_to_current_time()
        assert self.consumer is not None
        for partition, offset in offsets.items():
            end = self.consumer.highwater(TopicPartition(self.topic, partition))
            if end is not None:
                metrics.LAG.labels(str(partition)).set(max(0, end - offset))

    def _project(self, records: list[Any]) -> tuple[BatchResult, dict[int, int]]:
        result = BatchResult()
        offsets = {rec.partition: rec.offset + 1 for rec in records}
        dead: list[DeadLetter] = []
        with metrics.stage("decode"):
            decoded = self._decode(records, dead)
        with metrics.stage("transaction"), self.storage.transaction() as tx:
            try:
                with tx.savepoint():  # the fast path
                    result.applied, result.duplicates = self._apply_batch(tx, decoded)
            except Exception:
                log.warning("batch fast path failed; applying the batch event by event", exc_info=True)
                for d in decoded:
                    outcome = self._apply_one(tx, d.rec, d.event, dead)
                    result.applied += outcome == "applied"
                    result.duplicates += outcome == "duplicate"
            tx.save_offsets(self.consumer_name, self.topic, offsets)
            self._publish_dead_letters(dead)
            # leaving the transaction block commits (step 4)
        result.dead_letters = len(dead)
        return result, offsets

    @staticmethod
    def _decode(records: list[Any], dead: list[DeadLetter]) -> list[Decoded]:
        decoded = []
        for rec in records:
            try:
                raw, envelope = verify_hash(rec.value)
                event = LedgerRecord.model_validate(raw)
                decoded.append(Decoded(rec, event, event.typed_payload(), envelope))
            except (ValidationError, ValueError) as exc:
                dead.append(DeadLetter(rec.partition, rec.offset, f"undecodable: {exc}"[:2000],
                                       bytes(rec.value or b"")))
        return decoded

    def _apply_batch(self, tx: store.ProjectionTransaction, decoded: list[Decoded]) -> tuple[int, int]:
        by_tenant: dict[str, list[Decoded]] = {}
        for d in decoded:
            by_tenant.setdefault(d.event.tenant, []).append(d)
        applied = 0
        for tenant, items in by_tenant.items():
            tx.set_tenant(tenant)
            with metrics.stage("record_events"):
                new_ids = tx.insert_events([(d.event, d.rec.partition, d.rec.offset) for d in items],
                                           [d.envelope for d in items])
            fresh: list[Decoded] = []
            seen: set[Any] = set()
            for d in items:
                if d.event.event_id in new_ids and d.event.event_id not in seen:
                    seen.add(d.event.event_id)
                    fresh.append(d)
            applied += self._project_fresh(tx, tenant, fresh)
        return applied, len(decoded) - applied

    @staticmethod
    def _project_fresh(tx: store.ProjectionTransaction, tenant: str, fresh: list[Decoded]) -> int:
        with metrics.stage("load_episodes"):
            episodes = tx.load_episodes(sorted({d.event.incident_id for d in fresh}))
        touched: dict[str, None] = {}
        changes = []
        with metrics.stage("policy"):
            for d in fresh:
                incident = d.event.incident_id
                change = policy.apply(episodes.get(incident), d.event, d.payload)  # the runner owns these episodes
                if change.episode is not None:
                    episodes[incident] = change.episode
                    touched[incident] = None
                changes.append(change)
        with metrics.stage("save_episodes"):
            tx.save_episodes([episodes[i] for i in touched])
        with metrics.stage("side_effects"):
            tx.apply_side_effects(tenant, changes)
        return len(fresh)

    def _apply_one(self, tx: store.ProjectionTransaction, rec: Any, event: LedgerRecord, dead: list[DeadLetter]) -> str:
        try:
            with tx.savepoint():
                tx.set_tenant(event.tenant)
                if not tx.insert_event(event, rec.partition, rec.offset):
                    return "duplicate"
                change = policy.project(tx.load_episodes([event.incident_id]).get(event.incident_id), event)
                tx.save_episodes([change.episode] if change.episode is not None else [])
                tx.apply_side_effects(event.tenant, [change])
        except Exception as exc:  # a projection bug must not stop the partition
            logs.begin(traceparent_of(rec))  # the failure's log line carries the appending request's trace id
            logs.bind(tenant=event.tenant, incident_id=event.incident_id)
            log.exception("projection failed at %s/%s", rec.partition, rec.offset)
            dead.append(DeadLetter(rec.partition, rec.offset, f"projection failed: {exc!r}"[:2000], bytes(rec.value)))
            return "dead"
        return "applied"

    def _publish_dead_letters(self, dead: list[DeadLetter]) -> None:
        if not dead:
            return
        assert self.dlq is not None
        for d in dead:
            log.warning("dead letter %s/%s: %s", d.partition, d.offset, d.reason[:200])
            self.dlq.send(self.settings.dlq_topic, key=d.key(self.topic), value=d.to_json(self.topic))
        self.dlq.flush(timeout=30)

    def _commit_kafka(self, offsets: dict[int, int]) -> None:
        """Asynchronous: the request leaves now and its answer is read by a later poll. These offsets are
        informational (lag monitoring; PostgreSQL holds the real position), so the loop does not wait for
        the broker's round trip (5 us per event at 2,000-event batches, bench.run's stage profile)."""
        assert self.consumer is not None
        commits = {TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}
        try:
            self.consumer.commit_async(commits, callback=_kafka_commit_answered)
        except Exception:
            log.warning("kafka offset commit failed; PostgreSQL offsets remain authoritative", exc_info=True)


def _kafka_commit_answered(_offsets: Any, response: Any) -> None:
    if isinstance(response, Exception):
        log.warning("kafka offset commit failed; PostgreSQL offsets remain authoritative: %s", response)


def rebuild(settings: Settings, owner_db_url: str) -> None:
    """Empty the projection and its offsets; the next projector run replays the topic from offset 0."""
    import psycopg

    with psycopg.connect(owner_db_url) as conn, conn.transaction(), conn.cursor() as cur:
        store.truncate_projection(cur, settings.consumer_group)  # type: ignore[arg-type]
