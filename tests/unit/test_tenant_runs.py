"""TenantRuns: at most one run per tenant per interval, and the last request of a burst is always run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from services.briefing.tenant_runs import TenantRuns


def _recorder() -> tuple[list[tuple[str, float]], threading.Event, Callable[[str], None]]:
    seen: list[tuple[str, float]] = []
    done = threading.Event()

    def job(tenant: str) -> None:
        seen.append((tenant, time.monotonic()))
        done.set()

    return seen, done, job


def test_a_burst_runs_once_now_and_once_at_the_end_of_the_interval() -> None:
    runs = TenantRuns("test", min_interval=0.3)
    seen: list[tuple[str, float]] = []
    state = {"size": 0}

    def sized(tenant: str) -> None:
        seen.append((f"{tenant}@{state['size']}", time.monotonic()))

    try:
        t0 = time.monotonic()
        state["size"] = 1
        assert runs.start("a", sized)
        for size in range(2, 6):  # a burst closer together than the interval: deferred, not dropped
            state["size"] = size
            assert not runs.start("a", sized)
        deadline = time.monotonic() + 5
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.4)  # nothing more than the one trailing run
        assert [name for name, _ in seen] == ["a@1", "a@5"]  # the trailing run sees the burst's last state
        assert seen[1][1] - t0 >= 0.29
    finally:
        runs.close()


def test_tenants_are_limited_separately_and_a_closed_runner_runs_nothing() -> None:
    runs = TenantRuns("test", min_interval=60)
    seen, done, job = _recorder()
    assert runs.start("a", job)
    assert done.wait(5)
    done.clear()
    assert runs.start("b", job)
    assert done.wait(5)
    assert not runs.start("a", job)  # deferred by 60 s
    runs.close()
    assert not runs.start("c", job)
    time.sleep(0.1)
    assert [t for t, _ in seen] == ["a", "b"]
