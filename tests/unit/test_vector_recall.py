"""HNSW answers of TenantVectors against its exact scan, above HNSW_FROM (below it only the exact scan serves).

Vectors with the structure of sentence embeddings (clusters of related texts around topics, unit length).
`BENCH_ONLY=hnsw_recall python -m bench.run` measures recall at 100k vectors, on random unit vectors (no
structure at all: the hardest case for a graph index, where recall is far lower) and on the bench's e5 pool.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from numpy.typing import NDArray

from services.briefing.semantic import RECALL_K
from services.briefing.vectors import HNSW_FROM, TenantVectors

DIMS = 384
N = 6_000


def unit(v: NDArray[np.float32]) -> NDArray[np.float32]:
    out: NDArray[np.float32] = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return out


def clustered(rng: np.random.Generator, n: int, topics: int = 300, spread: float = 0.03) -> NDArray[np.float32]:
    centers = unit(rng.standard_normal((topics, DIMS)).astype(np.float32))
    return unit(centers[rng.integers(0, topics, n)] + rng.normal(0, spread, (n, DIMS)).astype(np.float32))


def index_of(vectors: NDArray[np.float32]) -> TenantVectors:
    held = TenantVectors("test", DIMS)
    held.add([(i + 1, uuid.UUID(int=i + 1), 1, v.tolist()) for i, v in enumerate(vectors)])
    return held


def recall(held: TenantVectors, queries: NDArray[np.float32], k: int) -> float:
    hits = sum(len({key for key, _ in held.search(q, k)} & {key for key, _ in held.exact(q, k)}) for q in queries)
    return hits / (k * len(queries))


@pytest.fixture(scope="module")
def structured() -> tuple[TenantVectors, NDArray[np.float32]]:
    rng = np.random.default_rng(29)
    data = clustered(rng, N + 60)
    return index_of(data[:N]), data[N:]


def test_the_index_serves_hnsw_at_this_size() -> None:
    assert N >= HNSW_FROM


def test_hnsw_recall_at_10_on_embedding_like_vectors(structured: tuple[TenantVectors, NDArray[np.float32]]) -> None:
    held, queries = structured
    assert recall(held, queries, 10) >= 0.95


def test_hnsw_recall_at_the_briefings_depth(structured: tuple[TenantVectors, NDArray[np.float32]]) -> None:
    held, queries = structured
    assert recall(held, queries, RECALL_K) >= 0.95


def test_hnsw_cosines_are_the_exact_ones(structured: tuple[TenantVectors, NDArray[np.float32]]) -> None:
    held, queries = structured
    for q in queries[:20]:
        for key, cosine in held.search(q, 10):
            assert cosine == pytest.approx(float(held.matrix[held.positions[key]] @ q), abs=1e-5)
