"""Prometheus metrics of the projector process (served on OPSLORE_PROJECTOR_METRICS_PORT)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

EVENTS = Counter("opslore_projector_events_total", "ledger records handled, by outcome", ["outcome"])
LAG = Gauge("opslore_projector_lag_records", "ledger end offset minus the projected offset", ["partition"])
BATCH_SECONDS = Histogram("opslore_projector_batch_seconds", "one polled batch: decode, project, commit",
                          buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
LAST_BATCH = Gauge("opslore_projector_last_batch_timestamp_seconds", "when the last non-empty batch committed")
RESTARTS = Counter("opslore_projector_restarts_total", "loop restarts after a PostgreSQL or Kafka failure")
STAGE_SECONDS = Counter(
    "opslore_projector_stage_seconds_total",
    "time spent per stage of the batch loop (divide by events_total for the per-event cost): kafka_poll"
    " (fetch and kafka-python's record parsing), decode (hash check, validation), record_events (insert_events),"
    " load_episodes,"
    " policy, save_episodes, side_effects, transaction (the whole PostgreSQL transaction, commit included),"
    " kafka_commit", ["stage"])
# stage names are what dashboards and bench results read: `record_events` is the time of `insert_events`
STAGES = ("kafka_poll", "decode", "record_events", "load_episodes", "policy", "save_episodes", "side_effects",
          "transaction", "kafka_commit")


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Add the block's wall time to `name`'s counter (a batch's stage, not an event's: the cost is two clock reads)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        STAGE_SECONDS.labels(name).inc(time.perf_counter() - start)
