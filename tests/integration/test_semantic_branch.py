"""The optional embedding branch: vectors per model, reindex without a serving gap, lexical fallback."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from schemas.api import BriefingRequest
from services.briefing.embedding import HashingNgramEmbedder
from services.briefing.semantic import SemanticIndex, model_key, reindex
from services.briefing.service import BriefingService
from services.common.settings import Settings
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration


class BrokenEmbedder(HashingNgramEmbedder):
    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        raise RuntimeError("model server down")

    def embed_query(self, text: str) -> NDArray[np.float32]:
        raise RuntimeError("model server down")


def _request() -> BriefingRequest:
    return BriefingRequest(services=["checkout-api"], signals=["db_pool_saturation"],
                           text="connection pool exhausted on checkout", explain=True)


def test_vectors_are_written_with_versions_and_used_for_ranking(fresh_database: Callable[[], str]) -> None:
    index = SemanticIndex(HashingNgramEmbedder())
    svc = GovernedServices(fresh_database(), semantic=index)
    tenant = f"sem-{uuid.uuid4().hex[:8]}"
    try:
        cid = seed_candidate(svc.db, tenant, draft("db_connection_pool", "checkout-api",
                                                   signal="db_pool_saturation", summary="pool exhausted"))
        family = svc.review.approve(reviewer(tenant), cid, note=None, edits=None).family_id
        with svc.db.tenant_transaction(tenant) as cur:
            cur.execute("SELECT model, array_length(vector, 1) AS dims FROM version_vectors WHERE family_id = %s",
                        (family,))
            assert cur.fetchall() == [{"model": model_key(index.embedder), "dims": 512}]
        answer = svc.briefing.brief(reviewer(tenant), _request())
        assert answer.degraded == []
        assert answer.hints and answer.hints[0].explain and float(answer.hints[0].explain["match_semantic"]) > 0
    finally:
        svc.close()


def test_reindex_serves_the_old_model_until_the_new_one_is_complete(fresh_database: Callable[[], str]) -> None:
    db_url = fresh_database()
    old = SemanticIndex(HashingNgramEmbedder(dims=512))
    svc = GovernedServices(db_url, semantic=old)
    tenant = f"sem-{uuid.uuid4().hex[:8]}"
    try:
        for i in range(3):
            svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, draft(f"cat{i}", "checkout-api")),
                               note=None, edits=None)
        reindex(svc.db, old, tenant, activate=True)
        new = SemanticIndex(HashingNgramEmbedder(dims=256))
        assert reindex(svc.db, new, tenant, activate=False)["vectors_written"] == 3
        with svc.db.tenant_transaction(tenant) as cur:
            assert old.active_model(cur) == old.model  # still serving the old vectors
        assert reindex(svc.db, new, tenant, activate=True)["vectors_written"] == 0  # nothing missing
        with svc.db.tenant_transaction(tenant) as cur:
            assert new.active_model(cur) == new.model
            cur.execute("SELECT model, count(*) AS n FROM version_vectors GROUP BY model ORDER BY model")
            assert [r["n"] for r in cur.fetchall()] == [3, 3]
    finally:
        svc.close()


def test_a_failing_embedder_degrades_to_lexical(fresh_database: Callable[[], str]) -> None:
    db_url = fresh_database()
    svc = GovernedServices(db_url)
    tenant = f"sem-{uuid.uuid4().hex[:8]}"
    try:
        cid = seed_candidate(svc.db, tenant, draft("db_connection_pool", "checkout-api", signal="db_pool_saturation"))
        svc.review.approve(reviewer(tenant), cid, note=None, edits=None)
    finally:
        svc.close()
    broken = GovernedServices(db_url, semantic=SemanticIndex(BrokenEmbedder()))
    try:
        answer = broken.briefing.brief(reviewer(tenant), _request())
        assert answer.degraded == ["embedding"] and len(answer.hints) == 1
    finally:
        broken.close()


class ThreadNoting(HashingNgramEmbedder):
    """Notes the thread each question is embedded on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def embed_query(self, text: str) -> NDArray[np.float32]:
        self.threads.append(threading.current_thread().name)
        return super().embed_query(text)


def test_the_question_is_embedded_alongside_the_transaction_and_answers_the_same(
        fresh_database: Callable[[], str]) -> None:
    """OPSLORE_BRIEFING_EMBED_ALONGSIDE (default): the question is embedded on a thread of its own while the
    briefing's transaction reads; the answer is the one the embed-first briefing gives, a remembered question is
    not embedded again, and a failing embedder still degrades to lexical."""
    db_url = fresh_database()
    embedder = ThreadNoting()
    svc = GovernedServices(db_url, semantic=SemanticIndex(embedder))
    first = BriefingService(svc.db, Settings(briefing_embed_alongside=False), semantic=SemanticIndex(ThreadNoting()))
    tenant = f"sem-{uuid.uuid4().hex[:8]}"
    try:
        cid = seed_candidate(svc.db, tenant, draft("db_connection_pool", "checkout-api", signal="db_pool_saturation",
                                                   summary="pool exhausted"))
        svc.review.approve(reviewer(tenant), cid, note=None, edits=None)
        alongside = svc.briefing.brief(reviewer(tenant), _request())
        assert embedder.threads and all(t.startswith("question-embedding") for t in embedder.threads)
        embedded = len(embedder.threads)
        again = svc.briefing.brief(reviewer(tenant), _request())
        assert len(embedder.threads) == embedded  # remembered: answered without a thread hop or an embedding
        before = first.brief(reviewer(tenant), _request())
        assert before.hints and before.causes
        for a in (alongside, again):
            assert [(h.family_id, h.score) for h in a.hints] == [(h.family_id, h.score) for h in before.hints]
            assert a.causes == before.causes and a.degraded == before.degraded == []
    finally:
        first.close()
        svc.close()
    broken = GovernedServices(db_url, semantic=SemanticIndex(BrokenEmbedder()))
    try:
        assert broken.briefing.brief(reviewer(tenant), _request()).degraded == ["embedding"]
    finally:
        broken.close()
