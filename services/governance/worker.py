"""The governance worker (`opslore governance run`): an APScheduler job that previews every tenant.

Each tick, for each tenant with a live API key: one preview of every job (proposals only), then — when
`OPSLORE_GOVERNANCE_AUTO_EXPIRE` is on — execution of the `expire` proposals (a validity window a reviewer
set has passed; nothing else is executed without a reviewer). Several replicas may run: execution takes
per-family leases and re-checks every basis, so two workers never overwrite each other; a worker that
loses a race counts a conflict and moves on. Metrics per job on `OPSLORE_GOVERNANCE_METRICS_PORT`.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Counter, Histogram

from services.common.auth import Principal
from services.common.db import Database
from services.common.errors import Conflict
from services.common.settings import Settings
from services.governance.service import GovernanceService
from services.memory.service import MemoryService
from services.review.service import ReviewService

log = logging.getLogger("opslore.governance")
PROPOSALS = Counter("opslore_governance_proposals_total", "open proposals returned by previews", ["kind"])
EXECUTED = Counter("opslore_governance_executed_total", "proposals executed by the worker", ["kind"])
CONFLICTS = Counter("opslore_governance_conflicts_total", "executions refused (moved basis or held lease)",
                    ["kind"])
DURATION = Histogram("opslore_governance_tick_seconds", "one preview (and auto-execution) of one tenant")


def worker_principal(tenant: str) -> Principal:
    return Principal(key_id=None, tenant=tenant, project=None, role="reviewer", service="governance-worker")


class GovernanceWorker:
    def __init__(self, db: Database, settings: Settings) -> None:
        memory = MemoryService(db)
        self.db = db
        self.settings = settings
        self.service = GovernanceService(db, settings, memory, ReviewService(db, memory))

    def tenants(self) -> list[str]:
        with self.db.transaction() as cur:
            cur.execute("SELECT opslore_key_tenants() AS tenant")
            return [r["tenant"] for r in cur.fetchall()]

    def tick(self, tenants: list[str] | None = None) -> dict[str, int]:
        """One pass over every tenant (or the given ones); returns counts (for logs and tests)."""
        counts = {"tenants": 0, "proposals": 0, "executed": 0, "conflicts": 0}
        for tenant in self.tenants() if tenants is None else tenants:
            start = time.perf_counter()
            self._tenant(tenant, counts)
            DURATION.observe(time.perf_counter() - start)
            counts["tenants"] += 1
        log.info("governance tick: %s", counts)
        return counts

    def _tenant(self, tenant: str, counts: dict[str, int]) -> None:
        principal = worker_principal(tenant)
        preview = self.service.preview(principal, now=datetime.now(UTC))
        for p in preview.proposals:
            PROPOSALS.labels(p.kind).inc()
            counts["proposals"] += 1
            if not (self.settings.governance_auto_expire and p.kind == "expire"):
                continue
            try:
                self.service.execute(principal, p.proposal_id)
                EXECUTED.labels(p.kind).inc()
                counts["executed"] += 1
            except Conflict as exc:
                CONFLICTS.labels(p.kind).inc()
                counts["conflicts"] += 1
                log.info("governance %s %s not executed: %s", p.kind, p.proposal_id, exc.message)


TICK_JOB = "governance-tick"


def scheduler_check(scheduler: Any) -> dict[str, Any]:
    """The scheduler is running and has the tick scheduled (APScheduler's state, read without a lock)."""
    job = scheduler.get_job(TICK_JOB) if scheduler.running else None
    if job is None:
        return {"ok": False, "error": "the scheduler is not running" if not scheduler.running
                else "the governance tick is not scheduled"}
    return {"ok": True, "next_run": job.next_run_time.isoformat() if job.next_run_time else None}


def run_forever(settings: Settings) -> None:
    from apscheduler.schedulers.blocking import BlockingScheduler

    from services.common import logs
    from services.common.metrics_server import Readiness, database_check, serve_metrics

    logs.configure(settings.log_format)
    db = Database(settings.database_url, max_size=4)
    db.open()
    worker = GovernanceWorker(db, settings)
    scheduler = BlockingScheduler(timezone="UTC")
    scheduler.add_job(worker.tick, "interval", seconds=settings.governance_interval_seconds, id=TICK_JOB,
                      next_run_time=datetime.now(UTC), max_instances=1, coalesce=True)

    def ready() -> Readiness:  # /readyz: PostgreSQL answers and the scheduler runs the tick
        return Readiness({"postgresql": database_check(db), "scheduler": scheduler_check(scheduler)})

    serve_metrics(settings.governance_metrics_host, settings.governance_metrics_port, ready)
    try:
        scheduler.start()
    finally:
        db.close()
