"""Kafka client factories (kafka-python) and topic administration.

The ledger topic is append-only: `cleanup.policy=delete` with unlimited retention, several partitions,
keyed by `tenant/incident_id`. Producers are idempotent with `acks=all`; the gateway's producer is
transactional so that a batch is all-or-nothing; consumers read committed data only.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

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


def transactional_producer(settings: Settings, name: str) -> KafkaProducer:
    producer = KafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap,
        acks="all",
        enable_idempotence=True,
        transactional_id=f"{name}-{uuid.uuid4()}",
        linger_ms=2,
        client_id=name,
    )
    producer.init_transactions()
    return producer


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
        "max_poll_records": 500,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 2000,
        "client_id": group,
    }
    config.update(overrides)
    return KafkaConsumer(**config)
