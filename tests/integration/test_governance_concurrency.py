"""Two processes run governance on the same families at once (real PostgreSQL), 250 attempts each.

Each worker loops: preview `duplicate` -> execute the consolidation it sees -> revert it when it won.
Both see the same proposal (one open proposal per finding), so they race for the same leases and rows.
Afterwards: no proposal executed twice, no lost update (the keeper's versions are exactly 1 plus two per
successful execution, gap-free, one audit row each), and every refusal is one of the explained conflicts.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import re
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any, cast

import psycopg
import pytest

from services.common.db import Cursor
from services.common.errors import Conflict
from services.governance import store
from services.governance.jobs import Proposal
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration
ATTEMPTS_PER_WORKER = 250
EXPLAINED = re.compile(r"holds the lease|moved since the preview|this proposal is (reverted|stale|executed)|"
                       r"changed after the execution|only an executed proposal")


def worker(db_url: str, tenant: str, barrier: Any, out: Any) -> None:
    svc = GovernedServices(db_url)
    try:
        barrier.wait()
        out.put(("ok", *_race(svc, tenant)))
    except BaseException:  # reported, so the parent fails at once instead of waiting on a dead worker
        out.put(("crashed", traceback.format_exc()))
    finally:
        svc.close()


def _race(svc: GovernedServices, tenant: str) -> tuple[list[str], int, list[str]]:
    who = reviewer(tenant)
    executed: list[str] = []
    already = 0
    refusals: list[str] = []
    for _ in range(ATTEMPTS_PER_WORKER):
        for p in svc.governance.preview(who, ["duplicate"]).proposals:
            try:
                done = svc.governance.execute(who, p.proposal_id)
                if done.already_executed:
                    already += 1
                    continue
                executed.append(str(p.proposal_id))
                svc.governance.revert(who, p.proposal_id, "race")
            except Conflict as exc:
                refusals.append(exc.message)
    return executed, already, refusals


def _collect(procs: list[Any], out: Any, deadline_s: float) -> list[tuple[Any, ...]]:
    """Each worker's report; fails (and ends the workers) as soon as one crashed, died or ran out of time."""
    results: list[tuple[Any, ...]] = []
    deadline = time.monotonic() + deadline_s
    try:
        while len(results) < len(procs):
            try:
                report = out.get(timeout=1)
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode is not None and p.exitcode != 0]
                assert not dead, f"a worker died without a report (exit codes {dead})"
                assert time.monotonic() < deadline, f"workers still running after {deadline_s} s"
                continue
            assert report[0] == "ok", f"a worker crashed:\n{report[1]}"
            results.append(report[1:])
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return results


def test_two_workers_never_double_execute_or_lose_an_update(fresh_database: Callable[[], str]) -> None:
    db_url = fresh_database()
    svc = GovernedServices(db_url)
    tenant = f"gov-race-{uuid.uuid4().hex[:8]}"
    who = reviewer(tenant)
    families = []
    for service in ("checkout-api", "payments", "search"):
        cid = seed_candidate(svc.db, tenant, draft("db_connection_pool", service, signal="db_pool_saturation"))
        families.append(svc.review.approve(who, cid, note=None, edits=None, resolution="new_family").family_id)

    try:
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=worker, args=(db_url, tenant, barrier, out)) for _ in range(2)]
        for p in procs:
            p.start()
        results = _collect(procs, out, deadline_s=240)

        executed = [pid for r in results for pid in r[0]]
        refusals = [msg for r in results for msg in r[2]]
        print(f"executed={len(executed)} already_executed={sum(r[1] for r in results)} refusals={len(refusals)}")
        assert executed and len(executed) == len(set(executed))  # 0 double executions
        assert all(EXPLAINED.search(m) for m in refusals), [m for m in refusals if not EXPLAINED.search(m)][:5]
        with svc.db.tenant_transaction(tenant) as cur:
            cur.execute("SELECT family_id, current_version, state FROM memory_families")
            fams = {r["family_id"]: r for r in cur.fetchall()}
            cur.execute("SELECT family_id, array_agg(version ORDER BY version) AS vs FROM memory_versions GROUP BY 1")
            versions = {r["family_id"]: r["vs"] for r in cur.fetchall()}
            cur.execute("SELECT family_id, count(*) AS n FROM memory_audit GROUP BY 1")
            audits = {r["family_id"]: r["n"] for r in cur.fetchall()}
            cur.execute("SELECT count(*) AS n FROM governance_proposals WHERE state = 'reverted'")
            reverted = cur.fetchone()
        assert reverted is not None and reverted["n"] == len(executed)
        assert all(f["state"] == "active" for f in fams.values())
        growth = sum(len(v) - 1 for v in versions.values())
        assert growth == 2 * len(executed)  # each win: one consolidating version and one rollback, nothing lost
        for family_id, vs in versions.items():
            assert vs == list(range(1, len(vs) + 1)) and fams[family_id]["current_version"] == vs[-1]
        merged_audits = sum(audits.values()) - 3  # approvals
        assert merged_audits == 2 * len(executed) + 2 * 2 * len(executed)  # keeper 2 + two merged families 2 each
    finally:
        svc.close()


class _MovesAfterInsert:
    """A cursor that, right after the proposal INSERT did nothing, lets another connection move the open row
    out of `proposed` and commit: the interleaving two previews and an execute can produce under load."""

    def __init__(self, cur: Cursor, move: Callable[[], None]) -> None:
        self.cur, self.move, self.moved = cur, move, False

    def execute(self, query: str, params: Any = None) -> Any:
        self.cur.execute(query, params)
        return self

    def fetchone(self) -> Any:
        row = self.cur.fetchone()
        if row is None and not self.moved:
            self.moved = True
            self.move()
        return row


def test_a_preview_whose_open_proposal_moves_between_insert_and_read_writes_a_new_one(
        fresh_database: Callable[[], str]) -> None:
    db_url = fresh_database()
    svc = GovernedServices(db_url)
    tenant = f"gov-move-{uuid.uuid4().hex[:8]}"
    who = reviewer(tenant)
    try:
        for service in ("checkout-api", "payments"):
            cid = seed_candidate(svc.db, tenant, draft("db_connection_pool", service, signal="db_pool_saturation"))
            svc.review.approve(who, cid, note=None, edits=None, resolution="new_family")
        first = svc.governance.preview(who, ["duplicate"]).proposals
        assert len(first) == 1
        with svc.db.tenant_transaction(tenant) as cur:
            row = store.get_proposal(cur, first[0].proposal_id, lock=False)
        assert row is not None
        finding = Proposal(kind=row.kind, project=row.project, family_ids=row.family_ids, reason=row.reason,
                           change=dict(row.change), based_on=row.based_on)
        assert finding.fingerprint == row.fingerprint

        def stale_it_elsewhere() -> None:
            with psycopg.connect(db_url, autocommit=True) as other:
                other.execute("SELECT set_config('opslore.tenant', %s, false)", (tenant,))
                moved = other.execute("UPDATE governance_proposals SET state = 'stale' WHERE proposal_id = %s",
                                      (row.proposal_id,))
                assert moved.rowcount == 1

        with svc.db.tenant_transaction(tenant) as cur:
            run_id = store.insert_run(cur, tenant, None, ["duplicate"], "test")
            spy = _MovesAfterInsert(cur, stale_it_elsewhere)
            written = store.insert_proposal(cast(Cursor, spy), tenant, run_id, finding)
        assert spy.moved  # the interleaving happened
        assert written.proposal_id != row.proposal_id and written.state == "proposed"
        with svc.db.tenant_transaction(tenant) as cur:
            cur.execute("SELECT state, count(*) AS n FROM governance_proposals GROUP BY 1 ORDER BY 1")
            assert {r["state"]: r["n"] for r in cur.fetchall()} == {"proposed": 1, "stale": 1}
    finally:
        svc.close()
