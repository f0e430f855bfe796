"""TenantRuns: a process's background runs of one kind of per-tenant job (a calibration), on one thread.

`start(tenant, job)` submits `job(tenant)` unless a run for that tenant started less than `min_interval` seconds
ago; then it defers one run to the end of that interval (a trailing run), so the last change of a burst is always
calibrated: the job reads the tenant's state when it runs, and a burst of approvals closer together than the
interval would otherwise leave the tenant's model at the size of the burst's first. A failure is logged with the
tenant and never reaches the briefing that started it. Both calibrations of the briefing (`calibrator`: the
abstention point, `causes_calibrator`: the causes model) start their runs through it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


class TenantRuns:
    def __init__(self, name: str, min_interval: float) -> None:
        self.name = name
        self.min_interval = min_interval
        self._started: dict[str, float] = {}
        self._deferred: dict[str, threading.Timer] = {}
        self._closed = False
        self._lock = threading.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"opslore-{name}")
        self._log = logging.getLogger(f"opslore.briefing.{name}")

    def start(self, tenant: str, job: Callable[[str], object]) -> bool:
        """Submit `job(tenant)` now unless one started within `min_interval`, else defer one run (at most one per
        tenant) to the end of the interval; whether it was submitted now."""
        with self._lock:
            if self._closed:
                return False
            wait = self._started.get(tenant, -1e9) + self.min_interval - time.monotonic()
            if wait > 0:
                if tenant not in self._deferred:
                    timer = threading.Timer(wait, self._trailing, (tenant, job))
                    timer.daemon = True
                    self._deferred[tenant] = timer
                    timer.start()
                return False
            self._started[tenant] = time.monotonic()
        self._thread.submit(self._logged, tenant, job)
        return True

    def _trailing(self, tenant: str, job: Callable[[str], object]) -> None:
        with self._lock:
            self._deferred.pop(tenant, None)
        self.start(tenant, job)

    def _logged(self, tenant: str, job: Callable[[str], object]) -> None:
        try:
            self._log.info("%s of %s: %s", self.name, tenant, job(tenant))
        except Exception:
            self._log.warning("%s of %s failed", self.name, tenant, exc_info=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timers = list(self._deferred.values())
            self._deferred.clear()
        for timer in timers:
            timer.cancel()
        self._thread.shutdown(wait=False, cancel_futures=True)
