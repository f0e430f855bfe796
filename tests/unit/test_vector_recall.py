"""A snapshot's HNSW answers (half-precision, published and memory-mapped) against the exact float32 scan.

Vectors with the structure of sentence embeddings (clusters of related texts around topics, unit length).
`BENCH_ONLY=hnsw_recall python -m bench.run` measures recall at 100k vectors, on random unit vectors (no
structure at all: the hardest case for a graph index, where recall is far lower) and on the bench's e5 pool.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from services.briefing.semantic import RECALL_K
from services.briefing.snapshot_builder import BUILD_FROM, MAX_LAG_SECONDS, REBUILD_ROWS, Pending, should_build
from services.briefing.snapshots import IndexSnapshot, SnapshotMeta, SnapshotStore, index_for, key_rows
from services.briefing.vectors import TenantSemantic, TenantVectors

DIMS = 384
N = 6_000


def unit(v: NDArray[np.float32]) -> NDArray[np.float32]:
    out: NDArray[np.float32] = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return out


def clustered(rng: np.random.Generator, n: int, topics: int = 300, spread: float = 0.03) -> NDArray[np.float32]:
    centers = unit(rng.standard_normal((topics, DIMS)).astype(np.float32))
    return unit(centers[rng.integers(0, topics, n)] + rng.normal(0, spread, (n, DIMS)).astype(np.float32))


def publish(root: Path, vectors: NDArray[np.float32]) -> IndexSnapshot:
    index = index_for(DIMS)
    index.add(np.arange(len(vectors), dtype=np.uint64), vectors)
    keys = key_rows([(i + 1, uuid.UUID(int=i + 1), 1) for i in range(len(vectors))])
    store = SnapshotStore(root)
    meta = SnapshotMeta(tenant="t", model="m", dims=DIMS, seq=len(vectors), count=len(vectors), recent=(),
                        built_at="2026-12-02T00:00:00+00:00")
    store.publish(meta, index, keys)
    found = store.newest("t", "m")
    assert found == meta
    return store.open(found)


Structured = tuple[IndexSnapshot, NDArray[np.float32], NDArray[np.float32]]


@pytest.fixture(scope="module")
def structured(tmp_path_factory: pytest.TempPathFactory) -> Structured:
    rng = np.random.default_rng(29)
    data = clustered(rng, N + 60)
    return publish(tmp_path_factory.mktemp("snap"), data[:N]), data[:N], data[N:]


def exact(vectors: NDArray[np.float32], q: NDArray[np.float32], k: int) -> set[tuple[uuid.UUID, int]]:
    return {(uuid.UUID(int=int(i) + 1), 1) for i in np.argsort(-(vectors @ q))[:k]}


def recall(snap: IndexSnapshot, vectors: NDArray[np.float32], queries: NDArray[np.float32], k: int) -> float:
    hits = sum(len({key for key, _ in snap.search(q, k)} & exact(vectors, q, k)) for q in queries)
    return hits / (k * len(queries))


def test_hnsw_recall_at_10_on_embedding_like_vectors(structured: Structured) -> None:
    snap, vectors, queries = structured
    assert recall(snap, vectors, queries, 10) >= 0.95


def test_hnsw_recall_at_the_briefings_depth(structured: Structured) -> None:
    snap, vectors, queries = structured
    assert recall(snap, vectors, queries, RECALL_K) >= 0.95


def test_half_precision_cosines_are_within_a_thousandth(structured: Structured) -> None:
    snap, vectors, queries = structured
    for q in queries[:20]:
        found = snap.search(q, 10)
        for key, cosine in found:
            assert cosine == pytest.approx(float(vectors[key[0].int - 1] @ q), abs=1e-3)
        scored = snap.cosines(q, [k for k, _ in found])
        assert all(scored[k] == pytest.approx(c, abs=1e-3) for k, c in found)


def test_the_snapshot_and_the_newer_rows_are_searched_together(structured: Structured) -> None:
    snap, vectors, queries = structured
    delta = TenantVectors("m", DIMS, base_seq=snap.meta.seq)
    newer = (uuid.UUID(int=10**9), 1)
    delta.add([(snap.meta.seq + 1, newer[0], 1, queries[0])])
    both = TenantSemantic(snap, delta, checked=0.0)
    top, cosine = both.search(queries[0], 5)[0]
    assert top == newer and cosine == pytest.approx(1.0, abs=1e-6)
    assert {k for k, _ in both.search(queries[0], 5)[1:]} <= exact(vectors, queries[0], 10)
    assert set(both.cosines(queries[0], [newer, (uuid.UUID(int=1), 1)])) == {newer, (uuid.UUID(int=1), 1)}


def test_rows_the_snapshot_holds_are_not_added_again() -> None:
    delta = TenantVectors("m", DIMS, base_seq=500, base_recent=(499, 500))
    v = np.ones(DIMS, np.float32) / np.sqrt(DIMS)
    assert delta.add([(499, uuid.uuid4(), 1, v), (501, uuid.uuid4(), 1, v)]) == 1
    assert delta.last_seq == 501 and delta.recent_seqs() == [499, 500, 501]


def test_snapshot_build_rule() -> None:
    assert not should_build(Pending(False, BUILD_FROM - 1, 999.0, BUILD_FROM - 1))  # small: scanned exactly
    assert should_build(Pending(False, BUILD_FROM, 0.0, BUILD_FROM))
    assert should_build(Pending(True, REBUILD_ROWS, 0.0))
    assert not should_build(Pending(True, 3, MAX_LAG_SECONDS - 1))
    assert should_build(Pending(True, 3, MAX_LAG_SECONDS))
    assert not should_build(Pending(True, 0, 10 * MAX_LAG_SECONDS))


def test_a_snapshot_of_another_tenant_or_model_is_not_found(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    meta = SnapshotMeta(tenant="a", model="m", dims=DIMS, seq=1, count=0, recent=(), built_at="x")
    store.publish(meta, index_for(DIMS), key_rows([]))
    (tmp_path / "elsewhere").mkdir()
    assert store.newest("b", "m") is None and store.newest("a", "other") is None
    target = store.directory("b", "m")
    target.mkdir(parents=True)
    for f in store.directory("a", "m").iterdir():
        (target / f.name).write_bytes(f.read_bytes())
    assert store.newest("b", "m") is None  # the description names tenant a


def test_positions_of_held_and_unknown_versions(structured: Structured) -> None:
    snap, _, _ = structured
    wanted = [(uuid.UUID(int=5), 1), (uuid.UUID(int=5), 2), (uuid.UUID(int=10**12), 1), (uuid.UUID(int=N), 1)]
    assert snap.positions_of(wanted) == [4, None, None, N - 1]
    assert snap.positions_of([]) == []
