"""BriefingRecorder: the briefing's record commits after the answer has gone, never before it is sent.

A briefing reads and records in one transaction (the record and its lineage edges cite exactly the versions
the read saw). Waiting for that transaction's COMMIT took about 1.7 ms of a 15 ms briefing at 1M records
(the INSERT's execution, the commit, a round trip), and the agent does not need it. Order, per briefing:

1. the read, then the INSERT of the record and its `cited` lineage edges, in pipeline mode (nothing waited for);
2. COMMIT sent (`OpenTransaction.send_commit`): from here the server commits whatever happens to this process;
3. the answer is returned to the caller;
4. a recorder thread reads the transaction's results (`OpenTransaction.settle`) and returns the connection.

A failure in 4 (the database refused or lost the commit) leaves an answer whose record is missing: it is
logged with the briefing id and counted (`opslore_briefing_record_failures_total`), never retried (the read
it recorded is gone). Reads of a briefing by id (`issued`) wait for one this process is still settling, and
after a miss look again for up to `LATE_WINDOW` seconds: another API process answered it a moment ago and its
commit may not have landed yet. `threads=0` settles inline, before the answer returns (errors raise).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from uuid import UUID

from prometheus_client import Counter

from services.briefing import records
from services.briefing.records import StoredBriefing
from services.common.db import Database, OpenTransaction

log = logging.getLogger("opslore.briefing")
FAILURES = Counter("opslore_briefing_record_failures_total", "briefings answered whose record did not commit")
LATE_WINDOW = (0.02, 0.05, 0.1)  # pauses before looking again for a briefing id not found (170 ms in all)


class BriefingRecorder:
    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="briefing-recorder") if threads else None
        self._pending: dict[UUID, Future[None]] = {}
        self._lock = threading.Lock()

    def settle(self, briefing_id: UUID, tx: OpenTransaction) -> None:
        """Read the outcome of `tx` (COMMIT already sent) now (`threads=0`), or on a recorder thread."""
        if self._executor is None:
            tx.settle()
            return
        future = self._executor.submit(self._settle, briefing_id, tx)
        with self._lock:
            self._pending[briefing_id] = future
        future.add_done_callback(lambda _: self._forget(briefing_id))  # at once if it is already done

    def issued(self, db: Database, tenant: str, briefing_id: UUID) -> StoredBriefing | None:
        """A briefing just answered, by id in `tenant`: after this process settled it, looking again on a miss."""
        self.wait(briefing_id)
        found = _read(db, tenant, briefing_id)
        for pause in LATE_WINDOW:
            if found is not None:
                break
            time.sleep(pause)
            found = _read(db, tenant, briefing_id)
        return found

    def wait(self, briefing_id: UUID, timeout: float = 5.0) -> None:
        with self._lock:
            future = self._pending.get(briefing_id)
        if future is not None:
            wait_for([future], timeout)

    def close(self) -> None:
        """Settle every briefing still pending (graceful shutdown)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def _forget(self, briefing_id: UUID) -> None:
        with self._lock:
            self._pending.pop(briefing_id, None)

    @staticmethod
    def _settle(briefing_id: UUID, tx: OpenTransaction) -> None:
        try:
            tx.settle()
        except Exception:
            FAILURES.inc()
            log.error("briefing answered but its record did not commit", extra={"briefing_id": str(briefing_id)},
                      exc_info=True)


def _read(db: Database, tenant: str, briefing_id: UUID) -> StoredBriefing | None:
    with db.tenant_transaction(tenant) as cur:
        return records.get(cur, briefing_id)
