"""LedgerGateway: validate, bind tenant and project from the key, hash, and append all-or-nothing.

A request is validated completely before anything is produced; the batch is then produced inside one
Kafka transaction (idempotent producer, acks=all) and consumers read committed records only, so a
rejected or failed request appends nothing that any projector will ever see.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from kafka import KafkaProducer
from kafka.errors import KafkaError

from schemas.ledger import (
    IMPORTED_FIELD,
    LedgerRecord,
    LedgerValidationError,
    SubmittedEvent,
    bind_event,
    parse_submitted_event,
)
from services.common import logs, tracing
from services.common.auth import Principal
from services.common.errors import Forbidden, InvalidInput, TooLarge, Unavailable
from services.common.kafka import COMMIT_SECONDS, commit_within

MAX_BATCH = 1000
DEFAULT_PROJECT = "default"


def split_request(body: Any) -> tuple[list[Any], str]:
    """A request is one envelope or `{"events": [...]}`; returns the raw events and the field prefix."""
    if isinstance(body, dict) and "events" in body and "event_id" not in body:
        events = body["events"]
        if not isinstance(events, list) or not events:
            raise InvalidInput("events must be a non-empty list", field="events")
        if len(events) > MAX_BATCH:
            raise InvalidInput(f"at most {MAX_BATCH} events per request", field="events")
        return events, "events"
    return [body], ""


def bind_scope(event: SubmittedEvent, principal: Principal) -> tuple[str, str]:
    tenant = principal.scoped_tenant
    if event.tenant is not None and event.tenant != tenant:
        raise Forbidden(f"tenant {event.tenant!r} does not match the API key's tenant")
    if principal.project is not None:
        if event.project is not None and event.project != principal.project:
            raise Forbidden(f"project {event.project!r} does not match the API key's project")
        return tenant, principal.project
    return tenant, event.project or DEFAULT_PROJECT


def validate_request(body: Any, principal: Principal, now: datetime, *,
                     imported_allowed: bool = False) -> list[LedgerRecord]:
    """Every event validated and bound, or the error naming the first bad field. A payload carrying
    `imported` (the mark of a reviewer's postmortem import, the evidence gate's other way in) is refused
    (403) unless the caller is the import itself (`imported_allowed`, `PostmortemImporter`): an agent cannot
    forge its way past the gate through the public endpoint."""
    raw_events, prefix = split_request(body)
    records: list[LedgerRecord] = []
    for index, raw in enumerate(raw_events):
        where = f"{prefix}[{index}]" if prefix else ""
        try:
            event = parse_submitted_event(raw)
        except LedgerValidationError as exc:
            field = exc.prefixed(where).field if where else exc.field
            raise InvalidInput(f"{field or 'body'}: {exc.message}", field=field or "body") from None
        if IMPORTED_FIELD in event.payload and not imported_allowed:
            at = f"{where}.payload.{IMPORTED_FIELD}" if where else f"payload.{IMPORTED_FIELD}"
            raise Forbidden("an imported postmortem comes in only through POST /v1/postmortems (reviewer)", field=at)
        try:
            tenant, project = bind_scope(event, principal)
        except Forbidden as exc:
            raise Forbidden(exc.message, field=f"{where}.tenant" if where else "tenant") from None
        records.append(bind_event(event, tenant, project).to_record(now))
    ids = [r.event_id for r in records]
    if len(set(ids)) != len(ids):
        raise InvalidInput("a batch repeats an event_id", field=prefix or "event_id")
    return records


# one ledger event, serialised: below the broker's default message.max.bytes (1 MiB) with room for headers
MAX_EVENT_BYTES = 900_000


def trace_headers() -> list[tuple[str, bytes]]:
    """The request's W3C `traceparent` as a Kafka header, so a projected event links back to the request
    that appended it (the projector logs it with anything it does to the event)."""
    ctx = logs.current()
    parent = ctx.traceparent() if ctx else None
    return [("traceparent", parent.encode())] if parent else []


class LedgerGateway:
    """Appends validated events to the ledger, one Kafka transaction per request.

    Failure handling: requests wait at most LOCK_SECONDS for the producer (one transaction at a time),
    the producer's own waits are bounded (services.common.kafka.PRODUCER_TIMEOUTS, commit_within), and
    any Kafka error answers 503 and discards the producer; the next request creates a new one with the
    same transactional id, which fences the old one, so the gateway heals as soon as the broker is back.
    """

    LOCK_SECONDS = 5.0

    def __init__(self, producer_factory: Callable[[], KafkaProducer], topic: str) -> None:
        self._factory = producer_factory
        self._producer: KafkaProducer | None = None
        self.topic = topic
        self._lock = threading.Lock()  # one Kafka transaction at a time per producer

    def close(self) -> None:
        with self._lock:
            self._discard(timeout=5)

    def append(self, body: Any, principal: Principal) -> list[LedgerRecord]:
        principal.require("agent")
        records = validate_request(body, principal, datetime.now(UTC))
        self.produce(records)
        return records

    def produce(self, records: Sequence[LedgerRecord]) -> None:
        values = [r.to_json() for r in records]
        for i, value in enumerate(values):  # checked before the transaction: a rejected batch appends nothing
            if len(value) > MAX_EVENT_BYTES:
                raise TooLarge(f"event {i} is {len(value)} bytes; the ledger takes at most {MAX_EVENT_BYTES}",
                               field=f"events[{i}]")
        if not self._lock.acquire(timeout=self.LOCK_SECONDS):
            raise Unavailable("the ledger is busy; retry shortly")
        try:
            producer = self._producer = self._producer or self._factory()
            producer.begin_transaction()
            with tracing.producing(self.topic, len(records)) as carrier:
                headers = [(k, v.encode()) for k, v in carrier.items()] or trace_headers()
                futures = [producer.send(self.topic, key=r.kafka_key, value=v, headers=headers)
                           for r, v in zip(records, values, strict=True)]
                commit_within(producer)
                for f in futures:
                    f.get(timeout=COMMIT_SECONDS)
        except KafkaError as exc:
            self._discard(timeout=0)
            raise Unavailable(f"the ledger did not accept the events: {exc}") from exc
        finally:
            self._lock.release()

    def _discard(self, timeout: float) -> None:
        """Drop the producer; its successor (same transactional id) fences it and aborts what it left open."""
        if self._producer is not None:
            with contextlib.suppress(Exception):
                self._producer.close(timeout=timeout)
            self._producer = None
