"""Prometheus metrics of the API process (exposed on /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

EVENTS_ACCEPTED = Counter("opslore_ledger_events_accepted_total", "Ledger events accepted by the gateway")
BRIEFING_HINTS = Histogram("opslore_briefing_hints", "Hints per briefing", buckets=(0, 1, 2, 3, 5, 10))
REQUEST_SECONDS = Histogram("opslore_http_request_seconds", "HTTP request latency", ["route", "method", "status"])
