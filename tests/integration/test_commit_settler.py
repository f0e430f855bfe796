"""The briefing's record commits after the answer has gone, with COMMIT sent before the answer returns
(`services.briefing.settler`), against the real PostgreSQL: a briefing is readable the moment it is
answered (by this process and by another), its record survives the end of the process right after the answer,
a commit that fails later is counted and leaves the pool healthy, and an error before the commit leaves
nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from schemas.api import BriefingRequest
from services.briefing import records
from services.briefing import settler as settler_module
from services.briefing.service import BriefingService
from services.briefing.settler import CommitSettler
from services.common.auth import Principal
from services.common.db import Database
from services.common.errors import NotFound
from services.common.settings import Settings
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
QUESTION = BriefingRequest(services=["render"], signals=["cpu_throttled"], text="render pods throttled")


def agent(tenant: str) -> Principal:
    return Principal(key_id=uuid.uuid4(), tenant=tenant, project=None, role="agent")


def approved_tenant(svc: GovernedServices) -> str:
    tenant = f"rec-{uuid.uuid4().hex[:8]}"
    d = draft("cpu_limit", "render", signal="cpu_throttled", summary="render pods throttled by their CPU limit")
    svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d), note=None, edits=None)
    return tenant


def cited_edges(db: Database, tenant: str, briefing_id: uuid.UUID) -> int:
    with db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT count(*) AS n FROM lineage_edges WHERE src_kind = 'briefing' AND src_id = %s",
                    (str(briefing_id),))
        return int(cur.fetchone()["n"])  # type: ignore[index]


def test_a_briefing_is_readable_the_moment_it_is_answered(svc: GovernedServices) -> None:
    tenant = approved_tenant(svc)
    answer = svc.briefing.brief(agent(tenant), QUESTION)
    assert answer.hints
    assert svc.briefing.get(agent(tenant), answer.briefing_id) == answer.wire()  # this process: waits for it
    other_db = Database(svc.db.url, max_size=1)  # another API process: its own pool and settler
    other_db.open()
    try:
        other = BriefingService(other_db, Settings())
        stored = other.issued(agent(tenant), answer.briefing_id)
        assert stored is not None and [c.family_id for c in stored.cited] == [str(answer.hints[0].family_id)]
        other.close()
    finally:
        other_db.close()
    assert cited_edges(svc.db, tenant, answer.briefing_id) == len(answer.hints)


_ANSWER_THEN_DIE = """
import os, sys
from schemas.api import BriefingRequest
from services.briefing.service import BriefingService
from services.common.auth import Principal
from services.common.db import Database
from services.common.settings import Settings
db = Database(sys.argv[1], max_size=1)
db.open()
answer = BriefingService(db, Settings(briefing_recorder_threads=1)).brief(
    Principal(key_id=None, tenant=sys.argv[2], project=None, role="agent"),
    BriefingRequest(services=["render"], signals=["cpu_throttled"], text="render pods throttled"))
print(answer.briefing_id, len(answer.hints), flush=True)
os._exit(0)  # no settling, no pool close, no atexit: the process is gone right after the answer
"""


def test_the_record_survives_the_process_ending_right_after_the_answer(svc: GovernedServices) -> None:
    tenant = approved_tenant(svc)
    done = subprocess.run([sys.executable, "-c", _ANSWER_THEN_DIE, svc.db.url, tenant], cwd=ROOT, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    briefing_id, hints = done.stdout.split()
    stored = svc.briefing.issued(agent(tenant), uuid.UUID(briefing_id))
    assert stored is not None and len(stored.cited) == int(hints) == 1
    assert cited_edges(svc.db, tenant, uuid.UUID(briefing_id)) == 1


def test_a_commit_that_fails_after_the_answer_is_counted_and_the_pool_stays_healthy(
        svc: GovernedServices, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = approved_tenant(svc)
    before = REGISTRY.get_sample_value("opslore_briefing_record_failures_total") or 0.0
    # refused by the server 0.2 s after it was sent, so after the answer (an error that is back before COMMIT
    # goes out fails the briefing instead, as before: nothing is recorded, the caller gets the error)
    monkeypatch.setattr(records, "insert", lambda cur, **_: cur.execute("SELECT 1 / (SELECT 0 FROM pg_sleep(0.2))"))
    answer = svc.briefing.brief(agent(tenant), QUESTION)
    assert answer.hints  # the answer was given; its record was refused after it
    with pytest.raises(NotFound):
        svc.briefing.get(agent(tenant), answer.briefing_id)
    assert REGISTRY.get_sample_value("opslore_briefing_record_failures_total") == before + 1
    monkeypatch.undo()
    for _ in range(6):  # more briefings than the pool has connections: each was returned, rolled back
        again = svc.briefing.brief(agent(tenant), QUESTION)
    assert svc.briefing.get(agent(tenant), again.briefing_id)["hints"] == again.wire()["hints"]


def test_an_error_before_the_commit_records_nothing_and_returns_the_connection(
        svc: GovernedServices, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = approved_tenant(svc)
    written: list[uuid.UUID] = []
    real_insert = records.insert

    def insert_then_fail(cur: object, **kw: object) -> None:
        real_insert(cur, **kw)  # type: ignore[arg-type]
        written.append(kw["briefing_id"])  # type: ignore[arg-type]
        raise RuntimeError("the process failed between the record's INSERT and its COMMIT")

    monkeypatch.setattr(records, "insert", insert_then_fail)
    for _ in range(6):  # more than the pool's 4 connections: a leaked one would make the next checkout wait
        with pytest.raises(RuntimeError):
            svc.briefing.brief(agent(tenant), QUESTION)
    monkeypatch.undo()
    assert len(written) == 6
    for briefing_id in written:
        assert svc.briefing.issued(agent(tenant), briefing_id) is None
        assert cited_edges(svc.db, tenant, briefing_id) == 0
    assert svc.briefing.brief(agent(tenant), QUESTION).hints


def idle(db: Database) -> int:
    return db.pool.get_stats().get("pool_available", 0)


def test_the_settler_returns_connections_in_rounds_without_being_asked(
        svc: GovernedServices, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = approved_tenant(svc)
    monkeypatch.setattr(settler_module, "TICK", 0.5)
    service = BriefingService(svc.db, Settings())
    service.settler.close()
    service.settler = settler = CommitSettler(1, wake_at=100)  # rounds on the tick only
    answer = service.brief(agent(tenant), QUESTION)
    pool = svc.db.pool.get_stats()["pool_size"]
    assert idle(svc.db) == pool - 1  # answered; its connection waits for the round
    deadline = time.monotonic() + 5
    while idle(svc.db) < pool and time.monotonic() < deadline:
        time.sleep(0.005)
    assert idle(svc.db) == pool  # nobody read the answer: a round settled it
    with svc.db.tenant_transaction(tenant) as cur:
        assert records.get(cur, answer.briefing_id) is not None
    settler.close()


def test_open_records_start_a_round_early_and_close_settles_the_rest(svc: GovernedServices) -> None:
    tenant = approved_tenant(svc)
    service = BriefingService(svc.db, Settings())
    service.settler.close()
    service.settler = settler = CommitSettler(1, wake_at=2)
    started = time.monotonic()
    for _ in range(8):  # twice the pool: each pair of open records starts a round before the pool runs dry
        service.brief(agent(tenant), QUESTION)
    assert time.monotonic() - started < 5.0  # never waited out the pool's 5 s checkout timeout
    last = service.brief(agent(tenant), QUESTION)
    settler.close()  # the last one is settled by the close, not by a reader
    assert idle(svc.db) == svc.db.pool.get_stats()["pool_size"]
    assert service.issued(agent(tenant), last.briefing_id) is not None
    late = service.brief(agent(tenant), QUESTION)  # answered after the close: settled at once, not left open
    assert idle(svc.db) == svc.db.pool.get_stats()["pool_size"]
    assert service.issued(agent(tenant), late.briefing_id) is not None
