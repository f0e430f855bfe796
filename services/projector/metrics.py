"""Prometheus metrics of the projector process (served on OPSLORE_PROJECTOR_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

EVENTS = Counter("opslore_projector_events_total", "ledger records handled, by outcome", ["outcome"])
LAG = Gauge("opslore_projector_lag_records", "ledger end offset minus the projected offset", ["partition"])
BATCH_SECONDS = Histogram("opslore_projector_batch_seconds", "one polled batch: decode, project, commit",
                          buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
LAST_BATCH = Gauge("opslore_projector_last_batch_timestamp_seconds", "when the last non-empty batch committed")
RESTARTS = Counter("opslore_projector_restarts_total", "loop restarts after a PostgreSQL or Kafka failure")
