"""The briefing's VersionCache against the real PostgreSQL: it may only ever save reads, never change answers.

A cached version must still disappear when its family leaves `active`, a superseded family must answer its
new version's text, feedback counts must be read fresh, and a search row rewritten by a reindex must be read
again (its xmin is part of the key).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from schemas.api import BriefingRequest, Hint, RecordSearchRequest
from services.briefing import retrieval
from services.briefing.cache import VersionCache
from services.briefing.facts import RecordFacts
from services.briefing.service import build_query
from services.lexicon import index as lexical
from services.projector.policy import FeedbackDelta
from services.projector.store import _apply_feedback
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration

QUESTION = BriefingRequest(text="ledger volume filled with WAL segments", services=["ledger-db"],
                           signals=["disk_usage_high"])


@pytest.fixture()
def tenant() -> str:
    return f"vc-{uuid.uuid4().hex[:8]}"


def approve(svc: GovernedServices, tenant: str, category: str = "disk_full") -> uuid.UUID:
    d = draft(category, "ledger-db", signal="disk_usage_high", summary="ledger volume filled with WAL segments")
    return svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d), note=None, edits=None).family_id


def answer(svc: GovernedServices, tenant: str) -> list[Hint]:
    """The records a search ranks for the question: the same retrieval, caches and details as a briefing's hints,
    without the causes' gate (two records of two causes matching alike are no evidence for either in v1.3)."""
    return svc.briefing.search(reviewer(tenant, "agent"), RecordSearchRequest(query=QUESTION.text or "",
                                                                              services=QUESTION.services))


def shown(hints: list[Hint]) -> list[tuple[str, int, str, float]]:
    return [(str(h.family_id), h.version, h.summary, h.score) for h in hints]


def candidates(svc: GovernedServices, tenant: str, cache: VersionCache) -> list[RecordFacts]:
    tokens = build_query(QUESTION)[1]
    with svc.db.tenant_transaction(tenant) as cur:
        stats = lexical.corpus_stats(cur, tokens)
        return retrieval.fetch_candidates(cur, QUESTION, tokens, None, datetime.now(UTC), stats, cache)


def test_a_repeated_briefing_is_answered_from_the_cache_and_answers_the_same(svc: GovernedServices,
                                                                              tenant: str) -> None:
    approve(svc, tenant), approve(svc, tenant, "wal_retention")
    first = answer(svc, tenant)
    counts = svc.briefing.cache.counts()
    assert len(first) == 2 and counts["facts"].misses == 2 and counts["details"].misses == 2
    second = answer(svc, tenant)
    assert shown(second) == shown(first)
    assert (counts["facts"].hits, counts["facts"].misses) == (2, 2)
    assert (counts["details"].hits, counts["details"].misses) == (2, 2)


def test_a_retracted_family_is_not_answered_from_the_cache(svc: GovernedServices, tenant: str) -> None:
    keep, gone = approve(svc, tenant), approve(svc, tenant, "wal_retention")
    assert {h.family_id for h in answer(svc, tenant)} == {keep, gone}
    svc.memory.retract(reviewer(tenant), gone, "wrong root cause")
    assert [h.family_id for h in answer(svc, tenant)] == [keep]


def test_a_superseded_family_answers_its_new_versions_text(svc: GovernedServices, tenant: str) -> None:
    family = approve(svc, tenant)
    assert [(h.version, h.summary) for h in answer(svc, tenant)] == [
        (1, "ledger volume filled with WAL segments")]
    svc.memory.supersede(reviewer(tenant), family, {"summary": "ledger volume filled with WAL segments "
                                                                "kept by a stale replication slot"}, "restated")
    assert [(h.version, h.summary) for h in answer(svc, tenant)] == [
        (2, "ledger volume filled with WAL segments kept by a stale replication slot")]


def test_feedback_counts_are_read_fresh(svc: GovernedServices, tenant: str) -> None:
    family = approve(svc, tenant)
    cache = VersionCache(100)
    assert [(f.adopted, f.refuted) for f in candidates(svc, tenant, cache)] == [(0, 0)]
    with svc.db.tenant_transaction(tenant) as cur:
        for verdict in ("adopted", "adopted", "refuted"):
            _apply_feedback(cur, tenant, FeedbackDelta(family, verdict, datetime.now(UTC)))
    assert [(f.adopted, f.refuted) for f in candidates(svc, tenant, cache)] == [(2, 1)]
    assert cache.counts()["facts"].hits == 1


def test_a_rewritten_search_row_is_read_again(svc: GovernedServices, tenant: str) -> None:
    family = approve(svc, tenant)
    cache = VersionCache(100)
    [before] = candidates(svc, tenant, cache)
    assert "zorblax" not in before.lexemes
    with svc.db.tenant_transaction(tenant) as cur:  # what a reindex with a new alias dictionary does
        lexical.clear(cur)
        lexical.write(cur, tenant, [lexical.SearchDocument(family, 1, (*sorted(before.lexemes), "zorblax"))])
    [after] = candidates(svc, tenant, cache)
    assert after.lexemes == before.lexemes | {"zorblax"} and after.doc_length == before.doc_length + 1
    assert (cache.counts()["facts"].hits, cache.counts()["facts"].misses) == (0, 2)


def test_capacity_zero_reads_every_time_and_answers_the_same(svc: GovernedServices, tenant: str) -> None:
    approve(svc, tenant)
    cached, uncached = VersionCache(100), VersionCache(0)
    for _ in range(2):
        assert candidates(svc, tenant, uncached) == candidates(svc, tenant, cached)
    assert (uncached.counts()["facts"].hits, uncached.counts()["facts"].misses) == (0, 2)
    assert (cached.counts()["facts"].hits, cached.counts()["facts"].misses) == (1, 1)
