"""Run by test_tracing.py in its own process (tracing installs process-wide instrumentation): one request
through the in-process API with an in-memory span exporter; prints the finished spans as JSON."""

from __future__ import annotations

import json
import sys

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.api.app import create_app
from services.common import tracing
from services.common.settings import get_settings
from tests.factories import resolved_incident


def main(key: str, traceparent: str, incident: str) -> None:
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter)
    with TestClient(create_app(get_settings())) as client:
        answer = client.post("/v1/ledger/events", json={"events": resolved_incident(incident)[:2]},
                             headers={"Authorization": f"Bearer {key}", "traceparent": traceparent})
    spans = [{"name": s.name, "kind": s.kind.name, "trace_id": f"{s.context.trace_id:032x}",
              "attributes": {k: str(v) for k, v in (s.attributes or {}).items()}}
             for s in exporter.get_finished_spans()]
    print(json.dumps({"status": answer.status_code, "traceparent": answer.headers.get("traceparent"),
                      "spans": spans}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
