"""Prometheus metrics of the API process (exposed on /metrics): what on-call asks of opslore.

Request latency by route; briefing latency by outcome (hints, abstained, degraded), hints per answer and
warnings by code; ledger events accepted; and, read from PostgreSQL at scrape time, the review queue's
depth and the age of its oldest candidate per tenant (`ReviewQueueCollector`).
"""

from __future__ import annotations

import logging
import os
from collections import Counter as Tally
from collections.abc import Iterator
from datetime import UTC, datetime

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from schemas.api import BriefingResponse
from services.common.db import Database

log = logging.getLogger("opslore.metrics")
EVENTS_ACCEPTED = Counter("opslore_ledger_events_accepted_total", "Ledger events accepted by the gateway")
BRIEFING_HINTS = Histogram("opslore_briefing_hints", "Hints per briefing", buckets=(0, 1, 2, 3, 5, 10))
BRIEFING_SECONDS = Histogram("opslore_briefing_seconds", "Briefing latency by outcome", ["outcome"],
                             buckets=(0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
BRIEFING_WARNINGS = Counter("opslore_briefing_warnings_total", "Warnings attached to hints, by code", ["code"])
REVIEW_QUEUE_METRICS = ("opslore_review_queue_pending", "opslore_review_queue_oldest_age_seconds")
REQUEST_SECONDS = Histogram("opslore_http_request_seconds", "HTTP request latency", ["route", "method", "status"])


def observe_briefing(response: BriefingResponse, seconds: float) -> None:
    outcome = "degraded" if response.degraded else "hints" if response.hints else "abstained"
    BRIEFING_SECONDS.labels(outcome).observe(seconds)
    BRIEFING_HINTS.observe(len(response.hints))
    for code, count in Tally(w.code for hint in response.hints for w in hint.warnings).items():
        BRIEFING_WARNINGS.labels(code).inc(count)


class ReviewQueueCollector(Collector):
    """Pending candidates per tenant and the age of the oldest, through `opslore_review_queue()` (aggregates
    only; the function is the one read across tenants). A failed read yields nothing, never a failed scrape."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(REVIEW_QUEUE_METRICS[0], "Pending candidates", labels=["tenant"])
        age = GaugeMetricFamily(REVIEW_QUEUE_METRICS[1], "Age of the oldest pending candidate", labels=["tenant"])
        try:
            with self.db.transaction() as cur:
                cur.execute("SELECT tenant, pending, oldest FROM opslore_review_queue()")
                rows = cur.fetchall()
        except Exception:
            log.warning("review queue metric unavailable", exc_info=True)
            return
        now = datetime.now(UTC)
        for r in rows:
            depth.add_metric([r["tenant"]], float(r["pending"]))
            age.add_metric([r["tenant"]], max(0.0, (now - r["oldest"]).total_seconds()))
        yield depth
        yield age


def exposition(db: Database) -> bytes:
    """The /metrics body: with several API processes (PROMETHEUS_MULTIPROC_DIR) the samples of all of them,
    then the review queue."""
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    queue = CollectorRegistry()
    queue.register(ReviewQueueCollector(db))
    return generate_latest(registry) + generate_latest(queue)
