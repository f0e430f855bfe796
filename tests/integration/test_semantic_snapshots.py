"""Semantic index snapshots (issue #39): built off the request path from PostgreSQL, memory-mapped by every
process, extended by an exact scan of newer versions, lost and rebuilt, and never another tenant's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import pytest
from numpy.typing import NDArray

from bench.semantic import insert_versions, real_contents, write_vectors
from schemas.api import BriefingRequest
from services.briefing.embedding import HashingNgramEmbedder
from services.briefing.semantic import SemanticIndex, model_key
from services.briefing.snapshot_builder import BUILD_FROM, SnapshotBuilder
from services.briefing.snapshots import SnapshotStore
from services.briefing.vectors import SemanticIndexNotReady, TenantSemantic, VectorIndexes
from services.common.db import Database
from tests.integration.governed import GovernedServices, reviewer

pytestmark = pytest.mark.integration

DIMS = 384
MODEL = model_key(HashingNgramEmbedder(dims=DIMS))
LIMIT = 200  # rows past the snapshot a process may hold (the shipped DELTA_LIMIT is 2048: smaller keeps this fast)


def unit(v: NDArray[np.float32]) -> NDArray[np.float32]:
    out: NDArray[np.float32] = (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)
    return out


@dataclass
class Tenant:
    name: str
    keys: list[tuple[uuid.UUID, int]]
    vectors: NDArray[np.float32]


class World:
    """A database, a snapshot directory, and tenants whose versions carry clustered vectors of MODEL."""

    def __init__(self, db_url: str, root: Path) -> None:
        self.db_url = db_url
        self.db = Database(db_url, max_size=3)
        self.db.open()
        self.store = SnapshotStore(root)
        self.builder = SnapshotBuilder(self.db, self.store, MODEL, DIMS)
        self.rng = np.random.default_rng(39)
        self.centers = unit(self.rng.standard_normal((40, DIMS)).astype(np.float32))

    def vectors(self, n: int) -> NDArray[np.float32]:
        picks = self.rng.integers(0, len(self.centers), n)
        return unit(self.centers[picks] + self.rng.normal(0, 0.05, (n, DIMS)).astype(np.float32))

    def tenant(self, name: str, n: int) -> Tenant:
        t = Tenant(name, [], np.zeros((0, DIMS), np.float32))
        self.add(t, n)
        return t

    def add(self, t: Tenant, n: int) -> list[tuple[uuid.UUID, int]]:
        start = len(t.keys)
        contents = real_contents(start + n)[start:]
        insert_versions(self.db_url, t.name, contents, first=start)
        keys = [(uuid.uuid5(uuid.NAMESPACE_OID, f"{t.name}/{i}"), 1) for i in range(start, start + n)]
        vectors = self.vectors(n)
        with psycopg.connect(self.db_url) as conn, conn.cursor() as cur:
            cur.execute("SELECT set_config('opslore.tenant', %s, false)", (t.name,))
            write_vectors(cur, t.name, MODEL, keys, vectors)
        t.keys += keys
        t.vectors = np.concatenate([t.vectors, vectors])
        return keys

    def indexes(self) -> VectorIndexes:
        return VectorIndexes(self.store, delta_limit=LIMIT, check_seconds=0.0)

    def current(self, indexes: VectorIndexes, t: Tenant) -> TenantSemantic:
        with self.db.tenant_transaction(t.name) as cur:
            return indexes.current(cur, t.name, MODEL, DIMS)

    def close(self) -> None:
        self.db.close()


@pytest.fixture
def world(fresh_database: Callable[[], str], tmp_path: Path) -> Iterator[World]:
    w = World(fresh_database(), tmp_path / "index")
    yield w
    w.close()


def exact_top(t: Tenant, q: NDArray[np.float32], k: int) -> set[tuple[uuid.UUID, int]]:
    order = np.argsort(-(t.vectors @ q))[:k]
    return {t.keys[int(i)] for i in order}


def test_a_large_tenant_without_a_snapshot_is_not_scanned_on_the_request_path(world: World) -> None:
    t = world.tenant("snap-a", 300)
    with pytest.raises(SemanticIndexNotReady):
        world.current(world.indexes(), t)
    small = world.tenant("snap-small", 50)
    held = world.current(world.indexes(), small)  # a small tenant needs no snapshot: its rows are scanned exactly
    assert held.snapshot is None and len(held.delta) == 50


def test_the_briefing_says_semantic_index_and_answers_lexically(world: World) -> None:
    t = world.tenant("snap-b", 300)
    semantic = SemanticIndex(HashingNgramEmbedder(dims=DIMS), world.indexes())
    svc = GovernedServices(world.db_url, semantic=semantic)
    try:
        ask = BriefingRequest(services=["checkout-api"], text="connection pool exhausted on checkout")
        assert svc.briefing.brief(reviewer(t.name), ask).degraded == ["semantic_index"]
        world.builder.refresh(t.name)
        assert svc.briefing.brief(reviewer(t.name), ask).degraded == []
    finally:
        svc.close()


def test_a_snapshot_is_searched_and_newer_versions_are_scanned_exactly(world: World) -> None:
    t = world.tenant("snap-c", 400)
    meta = world.builder.refresh(t.name)
    assert meta is not None and meta.count == 400 and meta.tenant == t.name
    indexes = world.indexes()
    held = world.current(indexes, t)
    assert held.snapshot is not None and len(held.snapshot) == 400 and len(held.delta) == 0 and held.complete
    queries = world.vectors(20)
    hits = sum(len({k for k, _ in held.search(q, 10)} & exact_top(t, q, 10)) for q in queries)
    assert hits / 200 >= 0.9
    for key, cosine in held.search(queries[0], 5):  # half-precision cosines within 1e-3 of the exact ones
        assert cosine == pytest.approx(float(t.vectors[t.keys.index(key)] @ queries[0]), abs=2e-3)
    new = world.add(t, 5)
    held = world.current(indexes, t)
    assert len(held.delta) == 5 and held.snapshot is not None and held.snapshot.meta.seq == meta.seq
    top_key, top_cos = held.search(t.vectors[-1], 1)[0]
    assert top_key == new[-1] and top_cos == pytest.approx(1.0, abs=1e-5)
    assert set(held.cosines(t.vectors[-1], [new[0], t.keys[0]])) == {new[0], t.keys[0]}
    # an incremental build takes the newer rows in; a process moves to it and holds no delta
    again = world.builder.refresh(t.name, force=True)
    assert again is not None and again.count == 405 and again.seq > meta.seq
    held = world.current(indexes, t)
    assert held.snapshot is not None and held.snapshot.meta.seq == again.seq and len(held.delta) == 0
    assert held.search(t.vectors[-1], 1)[0][0] == new[-1]


def test_a_snapshot_behind_by_more_than_the_limit_serves_and_says_so(world: World) -> None:
    t = world.tenant("snap-d", 300)
    world.builder.refresh(t.name)
    world.add(t, LIMIT + 10)
    held = world.current(world.indexes(), t)
    assert held.snapshot is not None and len(held.delta) == LIMIT and not held.complete


def test_two_processes_map_one_snapshot(world: World) -> None:
    t = world.tenant("snap-e", 300)
    meta = world.builder.refresh(t.name)
    assert meta is not None
    q = t.vectors[7]
    mine = [(str(k[0]), k[1]) for k, _ in world.store.open(meta).search(q, 10)]
    script = f"""
import json, sys, numpy as np
from services.briefing.snapshots import SnapshotStore
store = SnapshotStore({str(world.store.root)!r})
snap = store.open(store.newest({t.name!r}, {MODEL!r}))
found = [(str(k[0]), k[1]) for k, _ in snap.search(np.asarray({q.tolist()!r}, np.float32), 10)]
maps = open('/proc/self/maps').read()
print(json.dumps({{"found": found, "mapped": {f"{meta.seq:016d}.usearch"!r} in maps}}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    assert [tuple(x) for x in theirs["found"]] == mine and theirs["mapped"]
    assert mine[0] == (str(t.keys[7][0]), 1)


def test_a_lost_snapshot_is_rebuilt_from_postgresql(world: World) -> None:
    t = world.tenant("snap-f", BUILD_FROM + 44)
    before = world.builder.refresh(t.name)
    assert before is not None
    world.store.lose(t.name, MODEL)
    assert world.store.newest(t.name, MODEL) is None
    with pytest.raises(SemanticIndexNotReady):
        world.current(world.indexes(), t)
    assert world.builder.tick([t.name]) == {"tenants": 1, "built": 1, "failed": 0}
    after = world.store.newest(t.name, MODEL)
    assert after is not None and (after.count, after.seq) == (before.count, before.seq)
    held = world.current(world.indexes(), t)
    assert held.snapshot is not None and held.snapshot.versions() == set(t.keys)


def test_a_damaged_snapshot_is_never_served_and_is_rebuilt_whole(world: World) -> None:
    t = world.tenant("snap-g", 300)
    meta = world.builder.refresh(t.name)
    assert meta is not None
    path = world.store.directory(t.name, MODEL) / f"{meta.seq:016d}.keys.npy"
    path.write_bytes(path.read_bytes()[:200])  # torn
    with pytest.raises(SemanticIndexNotReady):
        world.current(world.indexes(), t)  # not opened; the tenant is too large to scan: lexical
    rebuilt = world.builder.build(t.name, MODEL, meta)  # the previous one cannot be opened: a full build
    assert rebuilt is not None and rebuilt.count == 300


def test_a_tenant_never_reads_another_tenants_snapshot(world: World) -> None:
    a, b = world.tenant("snap-h", 300), world.tenant("snap-i", 300)
    meta = world.builder.refresh(a.name)
    assert meta is not None
    # A's files placed where B's snapshot would be: their description names A, so B's briefings never open them
    shutil.copytree(world.store.directory(a.name, MODEL), world.store.directory(b.name, MODEL))
    assert world.store.newest(b.name, MODEL) is None
    with pytest.raises(SemanticIndexNotReady):
        world.current(world.indexes(), b)
    world.builder.refresh(b.name)
    held = world.current(world.indexes(), b)
    assert held.snapshot is not None and held.snapshot.meta.tenant == b.name
    assert held.snapshot.versions() == set(b.keys) and not held.snapshot.versions() & set(a.keys)
    # and the rows B's process reads past its snapshot are B's alone (RLS)
    world.add(a, 3)
    assert len(world.current(world.indexes(), b).delta) == 0


def test_an_idle_tick_visits_no_tenant_and_a_new_vector_brings_its_tenant_back(world: World) -> None:
    big, small = world.tenant("snap-j", BUILD_FROM + 10), world.tenant("snap-k", 20)
    assert world.builder.tick() == {"tenants": 2, "built": 1, "failed": 0}  # the small one needs no snapshot
    assert world.builder.tick() == {"tenants": 0, "built": 0, "failed": 0}
    world.add(small, 1)
    assert world.builder.tick() == {"tenants": 1, "built": 0, "failed": 0}
    world.add(big, 2)  # below REBUILD_ROWS and younger than MAX_LAG_SECONDS: it waits, and is visited again
    assert world.builder.tick()["tenants"] == 1 and world.builder.behind == {big.name}
    assert world.builder.tick() == {"tenants": 1, "built": 0, "failed": 0}


def test_each_tenant_a_tick_visits_is_handed_to_the_calibrations(world: World) -> None:
    seen: list[str] = []
    builder = SnapshotBuilder(world.db, world.store, MODEL, DIMS, on_changed=seen.append)
    t = world.tenant("snap-l", 10)
    builder.tick()
    assert seen == [t.name]
    builder.tick()
    assert seen == [t.name]  # nothing changed: nothing to calibrate


class CountingEmbedder(HashingNgramEmbedder):
    def __init__(self) -> None:
        super().__init__(dims=DIMS)
        self.questions = 0

    def embed_query(self, text: str) -> NDArray[np.float32]:
        self.questions += 1
        return super().embed_query(text)


def test_a_tenant_known_to_have_no_index_is_answered_without_embedding_the_question(world: World) -> None:
    t = world.tenant("snap-m", 300)
    embedder = CountingEmbedder()
    semantic = SemanticIndex(embedder, VectorIndexes(world.store, delta_limit=LIMIT, check_seconds=60.0))
    svc = GovernedServices(world.db_url, semantic=semantic)
    try:
        for n in range(3):
            ask = BriefingRequest(services=["checkout-api"], text=f"connection pool exhausted on checkout {n}")
            assert svc.briefing.brief(reviewer(t.name), ask).degraded == ["semantic_index"]
        assert embedder.questions == 1  # the first found the tenant too large; the next two skipped the model
        assert semantic.unready(t.name) and not semantic.unready("snap-other")
    finally:
        svc.close()
