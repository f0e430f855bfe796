"""The workers' readiness decisions (pure) and their probe endpoint (WSGI, no server)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler

from services.common.metrics_server import Readiness, bounded, probe_app
from services.governance.worker import TICK_JOB, scheduler_check
from services.projector.readiness import STALE_AFTER_SECONDS, GroupState, checks

UP = {"ok": True}
NOW = 1_000.0


def ready(state: GroupState, database: dict[str, Any] = UP, max_lag: int = 100) -> bool:
    return Readiness(checks(state, NOW, database, max_lag)).ready


def test_a_projector_is_ready_holding_partitions_or_as_a_standby() -> None:
    holding = GroupState(member=True, partitions=frozenset({0, 3}), lag={0: 10, 3: 90}, polled_at=NOW - 1)
    standby = GroupState(member=True, polled_at=NOW - 1)
    assert ready(holding) and ready(standby)
    assert checks(standby, NOW, UP, 100)["group"]["standby"] is True


def test_a_projector_is_not_ready_outside_the_group_stale_behind_or_without_postgresql() -> None:
    holding = GroupState(member=True, partitions=frozenset({0, 3}), lag={0: 10, 3: 90}, polled_at=NOW - 1)
    assert not ready(GroupState())  # starting, rebalancing or restarting after a failure
    assert not ready(GroupState(member=True, partitions=holding.partitions, lag=holding.lag,
                                polled_at=NOW - STALE_AFTER_SECONDS - 1))  # the loop is stuck
    assert not ready(holding, max_lag=99)  # 100 behind on its own partitions
    assert not ready(GroupState(member=True, partitions=frozenset({0}), lag={0: None}, polled_at=NOW))
    assert not ready(holding, database={"ok": False, "error": "PoolTimeout"})
    assert checks(holding, NOW, UP, 99)["lag"] == {"ok": False, "lag": 100, "max": 99}


def _call(app: Any, path: str) -> tuple[str, dict[str, Any]]:
    seen: dict[str, str] = {}
    body = b"".join(app({"PATH_INFO": path, "REQUEST_METHOD": "GET"}, lambda status, headers: seen.update(s=status)))
    return seen["s"], json.loads(body)


def test_the_probe_endpoint_answers_liveness_readiness_and_bounds_a_hanging_check() -> None:
    state = {"ok": True}
    app = probe_app(lambda: Readiness({"postgresql": dict(state)}))
    assert _call(app, "/healthz") == ("200 OK", {"status": "ok"})
    assert _call(app, "/readyz") == ("200 OK", {"status": "ready", "checks": {"postgresql": {"ok": True}}})
    state["ok"] = False
    assert _call(app, "/readyz")[0] == "503 Service Unavailable"
    assert _call(probe_app(None), "/readyz")[0] == "404 Not Found"
    release = threading.Event()
    start = time.monotonic()
    answer = bounded(lambda: (release.wait(10), Readiness({"x": UP}))[1], seconds=0.2)
    release.set()
    assert not answer.ready and time.monotonic() - start < 2 and "no answer" in answer.checks["check"]["error"]
    assert not bounded(lambda: 1 / 0).ready  # type: ignore[arg-type,return-value]
    assert not Readiness().ready  # no check at all is not ready


def test_the_governance_scheduler_check_follows_the_scheduler() -> None:
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(lambda: None, "interval", seconds=3600, id=TICK_JOB)
    assert scheduler_check(scheduler)["ok"] is False  # not started
    scheduler.start()
    try:
        assert scheduler_check(scheduler)["ok"] is True and scheduler_check(scheduler)["next_run"]
        scheduler.remove_job(TICK_JOB)
        assert scheduler_check(scheduler) == {"ok": False, "error": "the governance tick is not scheduled"}
    finally:
        scheduler.shutdown(wait=False)
    assert scheduler_check(scheduler)["ok"] is False
