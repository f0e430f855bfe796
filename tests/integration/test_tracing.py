"""OpenTelemetry: a request that carries a W3C traceparent yields the API's server span, PostgreSQL spans
and the Kafka produce span, all in the caller's trace (in-memory exporter, real PostgreSQL and Kafka)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from tests.conftest import TenantFactory

pytestmark = pytest.mark.integration
TRACE = "0af7651916cd43dd8448eb211c80319c"


def test_one_trace_spans_the_api_postgresql_and_the_kafka_produce(tenant_client: TenantFactory) -> None:
    agent = tenant_client(role="agent")
    parent = f"00-{TRACE}-b7ad6b7169203331-01"
    out = subprocess.run([sys.executable, "-m", "tests.integration.trace_probe", agent.key, parent,
                          f"INC-OTEL-{uuid.uuid4().hex[:6]}"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OPSLORE_API_WORKERS": "1"}, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == 202 and result["traceparent"].split("-")[1] == TRACE
    spans = result["spans"]
    assert {s["trace_id"] for s in spans} == {TRACE}, spans
    kinds = {s["kind"] for s in spans}
    assert {"SERVER", "PRODUCER"} <= kinds, spans
    producer = next(s for s in spans if s["kind"] == "PRODUCER")
    assert producer["attributes"]["messaging.system"] == "kafka" and producer["attributes"][
        "messaging.batch.message_count"] == "2"
    assert any(s["attributes"].get("db.system") == "postgresql" or s["attributes"].get("db.system.name")
               == "postgresql" for s in spans), [s["name"] for s in spans]
