"""Kafka client factories (kafka-python) and topic administration.

The ledger topic is append-only: `cleanup.policy=delete` with unlimited retention, several partitions,
keyed by `tenant/incident_id`. Producers are idempotent with `acks=all`; the gateway's producer is
transactional so that a batch is all-or-nothing; consumers read committed data only.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import KafkaTimeoutError, TopicAlreadyExistsError

from services.common.settings import Settings

LEDGER_TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}


def ensure_topics(settings: Settings) -> None:
    admin = KafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap, client_id="opslore-admin")
    try:
        existing = set(admin.list_topics())
        wanted = [
            NewTopic(settings.topic, settings.topic_partitions, 1, topic_configs=LEDGER_TOPIC_CONFIG),
            NewTopic(settings.dlq_topic, 1, 1, topic_configs=LEDGER_TOPIC_CONFIG),
        ]
        missing = [t for t in wanted if t.name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another process created it meanwhile
                admin.create_topics(missing)
    finally:
        admin.close()


# Bounded waits: while the broker is away, a request must fail within seconds, never hang.
PRODUCER_TIMEOUTS: dict[str, Any] = {
    "max_block_ms": 3000,  # metadata, buffer space and init_transactions
    "request_timeout_ms": 4000,
    "delivery_timeout_ms": 6000,
    "transaction_timeout_ms": 15000,  # an abandoned transaction is aborted by the coordinator after this
    "reconnect_backoff_max_ms": 1000,
}
COMMIT_SECONDS = 4.0


def transactional_producer(settings: Settings, name: str, transactional_id: str | None = None) -> KafkaProducer:
    """A transactional producer; reusing `transactional_id` fences an earlier producer with that id and
    aborts its open transaction (how a failed producer is replaced without stalling readers)."""
    producer = KafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap,
        acks="all",
        enable_idempotence=True,
        transactional_id=transactional_id or f"{name}-{uuid.uuid4()}",
        linger_ms=2,
        client_id=name,
        **PRODUCER_TIMEOUTS,
    )
    try:
        producer.init_transactions()
    except Exception:
        producer.close(timeout=0)
        raise
    return producer


def producer_factory(settings: Settings, name: str) -> Callable[[], KafkaProducer]:
    """Creates the gateway's transactional producers, all with one transactional id per process."""
    transactional_id = f"{name}-{uuid.uuid4()}"
    return lambda: transactional_producer(settings, name, transactional_id)


def commit_within(producer: KafkaProducer, seconds: float = COMMIT_SECONDS) -> None:
    """`commit_transaction()` of kafka-python waits without limit when the broker is gone; this waits
    `seconds` and then raises KafkaTimeoutError (the outcome is then unknown: the caller answers 503 and
    a client retry with the same event ids is a no-op if the commit did land). Uses the producer's
    transaction manager, as commit_transaction() itself does (kafka-python 2.x-3.x)."""
    result = producer._transaction_manager.begin_commit()
    producer._sender.wakeup()
    if not result.wait(timeout_ms=int(seconds * 1000)):
        raise KafkaTimeoutError(f"transaction commit not acknowledged within {seconds:.0f}s")


def plain_producer(settings: Settings, name: str) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap, acks="all", enable_idempotence=True, client_id=name
    )


def ledger_consumer(settings: Settings, group: str, **overrides: Any) -> KafkaConsumer:
    config: dict[str, Any] = {
        "bootstrap_servers": settings.kafka_bootstrap,
        "group_id": group,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "isolation_level": "read_committed",
        "max_poll_records": settings.projector_batch,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 2000,
        "client_id": group,
    }
    config.update(overrides)
    return KafkaConsumer(**config)
