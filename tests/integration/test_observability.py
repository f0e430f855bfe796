"""Logs and traces of a real request: the API (in this process, against the live PostgreSQL and Kafka)
writes JSON lines carrying the request's ids, continues the caller's W3C trace, and stamps it on the
Kafka records the request appends."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from kafka import KafkaConsumer, TopicPartition

from services.api.app import create_app
from services.common.logs import JsonFormatter
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident

pytestmark = pytest.mark.integration
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def app_and_lines(settings: Settings) -> Iterator[tuple[TestClient, io.StringIO]]:
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    with TestClient(create_app(settings.model_copy(update={"log_format": "json"}))) as client:
        logging.getLogger().addHandler(handler)  # after create_app configured the root logger
        yield client, lines
        logging.getLogger().removeHandler(handler)


def test_a_briefing_logs_json_with_its_ids_and_continues_the_trace(
        app_and_lines: tuple[TestClient, io.StringIO], tenant_client: TenantFactory) -> None:
    client, lines = app_and_lines
    agent = tenant_client(role="agent")
    headers = {"Authorization": f"Bearer {agent.key}", "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
    answer = client.post("/v1/briefings", json={"services": ["checkout-api"], "incident_id": "INC-LOG"},
                         headers=headers)
    assert answer.status_code == 200 and answer.headers["traceparent"].split("-")[1] == TRACE
    access = [json.loads(x) for x in lines.getvalue().splitlines() if '"opslore.access"' in x]
    line = next(x for x in access if x["route"] == "/v1/briefings")
    assert line["trace_id"] == TRACE and line["tenant"] == getattr(agent, "tenant")  # noqa: B009
    assert line["briefing_id"] == answer.json()["briefing_id"] and line["incident_id"] == "INC-LOG"
    assert line["status"] == 200 and agent.key not in lines.getvalue()


def test_appended_records_carry_the_trace_to_kafka(app_and_lines: tuple[TestClient, io.StringIO],
                                                   tenant_client: TenantFactory, settings: Settings) -> None:
    client, _ = app_and_lines
    agent = tenant_client(role="agent")
    consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    partitions = [TopicPartition(settings.topic, p) for p in consumer.partitions_for_topic(settings.topic)]
    consumer.assign(partitions)
    for tp, end in consumer.end_offsets(partitions).items():
        consumer.seek(tp, end)
    events = resolved_incident(f"INC-TRACE-{uuid.uuid4().hex[:6]}")[:2]
    headers = {"Authorization": f"Bearer {agent.key}", "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
    assert client.post("/v1/ledger/events", json={"events": events}, headers=headers).status_code == 202
    mine = {e["event_id"] for e in events}
    stamped = {}
    for rec in consumer:
        value = json.loads(rec.value)
        if value["event_id"] in mine:
            stamped[value["event_id"]] = dict(rec.headers or []).get("traceparent", b"").decode()
        if len(stamped) == len(mine):
            break
    consumer.close()
    assert set(stamped) == mine and all(v.split("-")[1] == TRACE for v in stamped.values())
