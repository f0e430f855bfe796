"""Two processes run governance on the same families at once (real PostgreSQL), 250 attempts each.

Each worker loops: preview `duplicate` -> execute the consolidation it sees -> revert it when it won.
Both see the same proposal (one open proposal per finding), so they race for the same leases and rows.
Afterwards: no proposal executed twice, no lost update (the keeper's versions are exactly 1 plus two per
successful execution, gap-free, one audit row each), and every refusal is one of the explained conflicts.
"""

from __future__ import annotations

import multiprocessing as mp
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from services.common.errors import Conflict
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration
ATTEMPTS_PER_WORKER = 250
EXPLAINED = re.compile(r"holds the lease|moved since the preview|this proposal is (reverted|stale|executed)|"
                       r"changed after the execution|only an executed proposal")


def worker(db_url: str, tenant: str, barrier: Any, out: Any) -> None:
    svc = GovernedServices(db_url)
    who = reviewer(tenant)
    executed: list[str] = []
    already = 0
    refusals: list[str] = []
    barrier.wait()
    try:
        for _ in range(ATTEMPTS_PER_WORKER):
            proposals = svc.governance.preview(who, ["duplicate"]).proposals
            for p in proposals:
                try:
                    done = svc.governance.execute(who, p.proposal_id)
                    if done.already_executed:
                        already += 1
                        continue
                    executed.append(str(p.proposal_id))
                    svc.governance.revert(who, p.proposal_id, "race")
                except Conflict as exc:
                    refusals.append(exc.message)
    finally:
        svc.close()
    out.put((executed, already, refusals))


def test_two_workers_never_double_execute_or_lose_an_update(fresh_database: Callable[[], str]) -> None:
    db_url = fresh_database()
    svc = GovernedServices(db_url)
    tenant = f"gov-race-{uuid.uuid4().hex[:8]}"
    who = reviewer(tenant)
    families = []
    for service in ("checkout-api", "payments", "search"):
        cid = seed_candidate(svc.db, tenant, draft("db_connection_pool", service, signal="db_pool_saturation"))
        families.append(svc.review.approve(who, cid, note=None, edits=None, resolution="new_family").family_id)

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(db_url, tenant, barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)

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
    svc.close()
