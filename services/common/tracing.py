"""OpenTelemetry tracing: the API's server spans (continuing an incoming W3C `traceparent`), PostgreSQL
spans (psycopg instrumentation) and a producer span per Kafka append whose context travels in the
records' `traceparent` header.

Off unless asked: `OPSLORE_OTEL_EXPORTER_OTLP_ENDPOINT` (e.g. http://otel-collector:4318) exports spans with
OTLP over HTTP; tests install an in-memory exporter through `configure(exporter=...)`. Without a provider
the OpenTelemetry API is a no-op, so instrumented code costs nothing when tracing is off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

TRACER_NAME = "opslore"
_configured: TracerProvider | None = None


def configure(endpoint: str | None = None, exporter: SpanExporter | None = None) -> TracerProvider | None:
    """Install the process's tracer provider once: OTLP to `endpoint`, or the given exporter (tests)."""
    global _configured
    if _configured is not None or (endpoint is None and exporter is None):
        return _configured
    provider = TracerProvider(resource=Resource.create({"service.name": "opslore"}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")))
    trace.set_tracer_provider(provider)
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    PsycopgInstrumentor().instrument(enable_commenter=False, skip_dep_check=True)
    _configured = provider
    return provider


def instrument_app(app: Any) -> None:
    """Server spans for every route of the FastAPI app (only when a provider is configured)."""
    if _configured is None:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, excluded_urls="healthz,metrics")


@contextmanager
def producing(topic: str, count: int) -> Iterator[dict[str, str]]:
    """A producer span around one ledger append; yields the carrier (W3C headers) to put on the records."""
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(f"{topic} publish", kind=trace.SpanKind.PRODUCER,
                                      attributes={"messaging.system": "kafka", "messaging.destination.name": topic,
                                                  "messaging.batch.message_count": count}):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        yield carrier


def current_trace_id() -> str | None:
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.trace_id:032x}" if ctx.is_valid else None
