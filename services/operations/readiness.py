"""ReadinessProbe: is this API instance able to do its work right now? (`GET /readyz`)

Three checks, each bounded to a few seconds and named in the answer: PostgreSQL answers a query; the
Kafka broker answers with the ledger topic's end offsets; the projector's lag (end offsets minus the
offsets it stored in PostgreSQL with its projection) is at most OPSLORE_READY_MAX_LAG events. `/healthz`
stays a liveness check of the process alone, so an orchestrator restarts only what is really stuck.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, TopicPartition

from services.common.db import Database
from services.common.settings import Settings
from services.projector import store

KAFKA_CHECK_SECONDS = 3.0


@dataclass
class Readiness:
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return all(c["ok"] for c in self.checks.values())

    def to_json(self) -> dict[str, Any]:
        return {"status": "ready" if self.ready else "not_ready", "checks": self.checks}


class ReadinessProbe:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._consumer: KafkaConsumer | None = None
        self._lock = threading.Lock()

    def check(self) -> Readiness:
        result = Readiness()
        stored = self._database(result)
        ends = self._kafka(result)
        if stored is not None and ends is not None:
            lag = sum(max(end - stored.get(p, 0), 0) for p, end in ends.items())
            result.checks["projector_lag"] = {"ok": lag <= self.settings.ready_max_lag, "lag": lag,
                                              "max": self.settings.ready_max_lag}
        else:
            result.checks["projector_lag"] = {"ok": False, "error": "unknown while a dependency is down"}
        return result

    def _database(self, result: Readiness) -> dict[int, int] | None:
        try:
            with self.db.transaction() as cur:
                offsets = store.load_offsets(cur, self.settings.consumer_group, self.settings.topic)
        except Exception as exc:
            result.checks["postgresql"] = {"ok": False, "error": type(exc).__name__}
            return None
        result.checks["postgresql"] = {"ok": True}
        return offsets

    def _kafka(self, result: Readiness) -> dict[int, int] | None:
        """The ledger's end offsets, within KAFKA_CHECK_SECONDS whatever the client does meanwhile (a
        kafka-python call can block past its own timeouts while the broker is away)."""
        outcome: dict[str, Any] = {}
        worker = threading.Thread(target=self._fetch_end_offsets, args=(outcome,), daemon=True)
        worker.start()
        worker.join(KAFKA_CHECK_SECONDS)
        ends: dict[int, int] | None = outcome.get("ends")
        if ends is None:
            result.checks["kafka"] = {"ok": False, "error": outcome.get("error", "timeout")}
            return None
        result.checks["kafka"] = {"ok": True, "partitions": len(ends)}
        return ends

    def _fetch_end_offsets(self, outcome: dict[str, Any]) -> None:
        if not self._lock.acquire(timeout=KAFKA_CHECK_SECONDS):
            outcome["error"] = "a previous check is still waiting for the broker"
            return
        try:
            consumer = self._consumer = self._consumer or KafkaConsumer(
                bootstrap_servers=self.settings.kafka_bootstrap, client_id="opslore-readiness",
                request_timeout_ms=3000, reconnect_backoff_max_ms=1000)
            partitions = consumer.partitions_for_topic(self.settings.topic) or set()
            if not partitions:
                raise RuntimeError("ledger topic not found")
            ends = consumer.end_offsets([TopicPartition(self.settings.topic, p) for p in partitions])
            outcome["ends"] = {tp.partition: int(offset) for tp, offset in ends.items()}
        except Exception as exc:
            self._reset()
            outcome["error"] = type(exc).__name__
        finally:
            self._lock.release()

    def _reset(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None

    def close(self) -> None:
        if self._lock.acquire(timeout=KAFKA_CHECK_SECONDS):
            try:
                self._reset()
            finally:
                self._lock.release()
