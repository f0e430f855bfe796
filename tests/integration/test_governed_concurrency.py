"""Two processes race to publish candidates as new versions of the same family (real PostgreSQL).

Each worker reads the current version N and approves its next candidate with expected_version=N.
Exactly one writer can move the pointer from N; the other gets 409 and tries its next candidate.
Afterwards: versions are 1..K without gaps, every success created exactly the version after the one
it read (nothing stale replaced an approved version), no success was lost, one audit row each.
"""

from __future__ import annotations

import multiprocessing as mp
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from services.common.errors import Conflict
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration
ATTEMPTS_PER_WORKER = 500


def race(db_url: str, tenant: str, family: str, candidates: list[str], barrier: Any, out: Any) -> None:
    svc = GovernedServices(db_url)
    who = reviewer(tenant)
    wins: list[tuple[str, int, int]] = []
    conflicts = 0
    barrier.wait()
    try:
        for cid in candidates:
            seen = svc.memory.get_record(who, uuid.UUID(family)).model_dump()["current_version"]
            try:
                got = svc.review.approve(who, uuid.UUID(cid), note="race", edits=None, expected_version=seen,
                                         resolution="new_version")
                wins.append((cid, seen, got.version))
            except Conflict:
                conflicts += 1
    finally:
        svc.close()
    out.put((wins, conflicts))


def test_two_processes_never_lose_or_overwrite_an_approval(fresh_database: Callable[[], str]) -> None:
    db_url = fresh_database()
    svc = GovernedServices(db_url)
    tenant = f"race-{uuid.uuid4().hex[:8]}"
    who = reviewer(tenant)
    first = seed_candidate(svc.db, tenant, draft("db_connection_pool", "checkout-api"))
    family = str(svc.review.approve(who, first, note="v1", edits=None).family_id)
    batches = [[str(seed_candidate(svc.db, tenant, draft("db_connection_pool", "checkout-api")))
                for _ in range(ATTEMPTS_PER_WORKER)] for _ in range(2)]

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    workers = [ctx.Process(target=race, args=(db_url, tenant, family, b, barrier, out)) for b in batches]
    for w in workers:
        w.start()
    results = [out.get(timeout=300) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0

    wins = [win for r in results for win in r[0]]
    conflicts = sum(r[1] for r in results)
    record = svc.memory.get_record(who, uuid.UUID(family)).model_dump()
    versions = record["versions"]
    svc.close()
    print(f"\nrace: {len(wins)} published, {conflicts} rejected with 409, {len(versions)} versions")

    assert len(wins) + conflicts == 2 * ATTEMPTS_PER_WORKER
    assert [v["version"] for v in versions] == list(range(1, len(wins) + 2))  # no gaps, nothing lost
    assert all(new == seen + 1 for _, seen, new in wins)  # each built on the version its writer saw
    by_version = {v["version"]: v for v in versions}
    for cid, seen, new in wins:
        assert str(by_version[new]["candidate_id"]) == cid and by_version[new]["supersedes"] == seen
    assert record["current_version"] == len(versions)
    assert [v["state"] for v in versions].count("active") == 1
    assert len(record["audit"]) == len(versions)
