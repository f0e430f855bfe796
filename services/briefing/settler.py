"""CommitSettler: the briefing's record commits after the answer has gone, never before it is sent.

It settles (reads the outcome of) the briefings' commits; it records nothing itself: `records.py` writes the
briefing's row, in the briefing's own transaction.

A briefing reads and records in one transaction (the record and its lineage edges cite exactly the versions
the read saw). Waiting for that transaction's COMMIT took about 1.7 ms of a 15 ms briefing at 1M records
(the INSERT's execution, the commit, a round trip), and the agent does not need it. Order, per briefing:

1. the read, then the INSERT of the record and its `cited` lineage edges, in pipeline mode (nothing waited for);
2. COMMIT sent (`OpenTransaction.send_commit`): from here the server commits whatever happens to this process;
3. the answer is returned to the caller, the transaction left open with the settler;
4. the settler thread reads the transaction's results (`OpenTransaction.settle`) and returns the connection.

The settler thread settles in rounds: every `TICK` seconds it takes every open transaction, or sooner once
`wake_at` are open (a pool must not run dry while its connections wait for a round). A thread woken per
briefing (a thread pool's `submit`) cost the briefing thread a futex wake with the GIL held and the settler
two switches, for each answer; a round settles the briefings of ~10 ms for one wake-up.

A failure in 4 (the database refused or lost the commit) leaves an answer whose record is missing: it is
logged with the briefing id and counted (`opslore_briefing_record_failures_total`), never retried (the read
it recorded is gone). Reads of a briefing by id (`issued`) settle it first if it is still open (or wait for the
round that has it), and after a miss look again for up to `LATE_WINDOW` seconds: another API process answered
it a moment ago and its commit may not have landed yet. `threads=0` settles inline, before the answer returns
(errors raise).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from uuid import UUID

from prometheus_client import Counter

from services.briefing import records
from services.briefing.records import StoredBriefing
from services.common.db import Database, OpenTransaction

log = logging.getLogger("opslore.briefing")
FAILURES = Counter("opslore_briefing_record_failures_total", "briefings answered whose record did not commit")
LATE_WINDOW = (0.02, 0.05, 0.1)  # pauses before looking again for a briefing id not found (170 ms in all)
TICK = 0.01  # seconds between the settler's rounds


class CommitSettler:
    def __init__(self, threads: int, wake_at: int = 4) -> None:
        """`threads`: 0 settles inline, any other number runs the settler thread; `wake_at`: open transactions
        that start a round before its tick (a quarter of the pool's connections, say)."""
        self._open: OrderedDict[UUID, OpenTransaction] = OrderedDict()
        self._settling: set[UUID] = set()
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._round = threading.Event()
        self._wake_at = max(1, wake_at)
        self._closing = False
        self._thread: threading.Thread | None = None
        if threads:
            self._thread = threading.Thread(target=self._run, name="briefing-settler", daemon=True)
            self._thread.start()

    def settle(self, briefing_id: UUID, tx: OpenTransaction) -> None:
        """Read the outcome of `tx` (COMMIT already sent) now (`threads=0`), or in the settler's next round."""
        if self._thread is None:
            tx.settle()
            return
        with self._lock:  # `close` flips `_closing` under this lock: a transaction is queued or settled here
            closing = self._closing
            if not closing:
                self._open[briefing_id] = tx
            due = len(self._open) >= self._wake_at
        if closing:  # a briefing that finished after `close`: no round will come for it
            self._settle(briefing_id, tx)
        elif due:
            self._round.set()

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
        """Until this process has settled `briefing_id`: here, if it is still open."""
        with self._lock:
            tx = self._open.pop(briefing_id, None)
            if tx is None:
                self._settled.wait_for(lambda: briefing_id not in self._settling, timeout)
                return
            self._settling.add(briefing_id)
        self._settle(briefing_id, tx)

    def close(self) -> None:
        """Settle every briefing still open (graceful shutdown)."""
        if self._thread is not None:
            with self._lock:
                self._closing = True
            self._round.set()
            self._thread.join()

    def _run(self) -> None:
        while not self._closing or self._open:
            self._round.wait(TICK)
            self._round.clear()
            while (item := self._take()) is not None:
                self._settle(*item)

    def _take(self) -> tuple[UUID, OpenTransaction] | None:
        with self._lock:
            if not self._open:
                return None
            briefing_id, tx = self._open.popitem(last=False)
            self._settling.add(briefing_id)
            return briefing_id, tx

    def _settle(self, briefing_id: UUID, tx: OpenTransaction) -> None:
        try:
            tx.settle()
        except Exception:
            FAILURES.inc()
            log.error("briefing answered but its record did not commit", extra={"briefing_id": str(briefing_id)},
                      exc_info=True)
        finally:
            with self._lock:
                self._settling.discard(briefing_id)
                self._settled.notify_all()


def _read(db: Database, tenant: str, briefing_id: UUID) -> StoredBriefing | None:
    with db.tenant_transaction(tenant) as cur:
        return records.get(cur, briefing_id)
