"""TenantVectors: semantic recall over all of a tenant's record versions, through an in-process HNSW index.

PostgreSQL is the source of truth (`version_vectors`, under row-level security); each API process derives,
per tenant and embedding model, a usearch HNSW index from those rows and keeps it current by reading the rows
whose `seq` (migration 0024) is past the last one it holds, in the briefing's own transaction, so the rows it
sees are exactly what RLS lets this tenant see. The index answers "the versions nearest to this question";
whether a version is still current, active and valid is decided afterwards in SQL (`retrieval`), as for every
other branch, so a superseded or retracted version the index still holds can never become a hint.

Refresh and concurrent writers: an identity is assigned at INSERT, not at COMMIT, so a transaction holding
seq 10 may commit after one holding seq 11 was read. Each refresh therefore asks for every seq past
`REREAD` below the highest one held that it does not hold (one index range scan, usually answering no row);
a writer that stays uncommitted across more than `REREAD` later vector writes (of any tenant) would be missed
until the process restarts (approvals write one vector each and commit in milliseconds).

`search` is exact (one matrix product) below `HNSW_FROM` vectors, where that is both faster and exact, and
HNSW above; `exact` is the reference the tests compare the HNSW answers against.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

import numpy as np
from cachetools import LRUCache
from numpy.typing import NDArray
from usearch.index import Index

from services.briefing.cache import VersionKey
from services.common.db import Cursor

REREAD = 256
HNSW_FROM = 4096



@dataclass
class TenantVectors:
    """One tenant's vectors of one model: the HNSW graph, and the version each key stands for."""

    model: str
    dims: int
    index: Index = field(init=False)
    versions: list[VersionKey] = field(default_factory=list)  # key -> (family_id, version)
    positions: dict[VersionKey, int] = field(default_factory=dict)  # (family_id, version) -> key
    seen: set[int] = field(default_factory=set)  # seqs held
    last_seq: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _recent: list[int] = field(default_factory=list)
    _buffer: NDArray[np.float32] = field(init=False)  # the same vectors, row = key (exact scans), grown x2

    def __post_init__(self) -> None:
        self.index = Index(ndim=self.dims, metric="ip", dtype="f32", connectivity=16, expansion_add=128,
                           expansion_search=96)
        self._buffer = np.zeros((64, self.dims), np.float32)

    @property
    def matrix(self) -> NDArray[np.float32]:
        return self._buffer[:len(self.versions)]

    def recent_seqs(self) -> list[int]:
        """The seqs held within REREAD of the highest one (what a refresh need not read again)."""
        return self._recent

    def __len__(self) -> int:
        return len(self.versions)

    def add(self, rows: list[tuple[int, uuid.UUID, int, list[float]]]) -> int:
        """Rows (seq, family_id, version, vector) not held yet; returns how many were added."""
        new = [r for r in rows if r[0] not in self.seen]
        if not new:
            return 0
        vectors = np.asarray([r[3] for r in new], dtype=np.float32).reshape(len(new), self.dims)
        start = len(self.versions)
        if start + len(new) > self._buffer.shape[0]:
            grown = np.zeros((max(2 * self._buffer.shape[0], start + len(new)), self.dims), np.float32)
            grown[:start] = self._buffer[:start]
            self._buffer = grown
        self._buffer[start:start + len(new)] = vectors
        self.index.add(np.arange(start, start + len(new), dtype=np.uint64), vectors)
        for seq, family_id, version, _ in new:
            self.seen.add(seq)
            self.positions[(family_id, version)] = len(self.versions)
            self.versions.append((family_id, version))
            self.last_seq = max(self.last_seq, seq)
        low = self.last_seq - REREAD
        self._recent = sorted(x for x in [*self._recent, *(r[0] for r in new)] if x > low)
        return len(new)

    def exact(self, query: NDArray[np.float32], k: int) -> list[tuple[VersionKey, float]]:
        """The k nearest by a full scan: the reference answer."""
        if not self.versions:
            return []
        scores = self.matrix @ query
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.versions[int(i)], float(scores[i])) for i in order]

    def search(self, query: NDArray[np.float32], k: int) -> list[tuple[VersionKey, float]]:
        """The k nearest versions with their cosines (vectors are unit length: inner product = cosine)."""
        if len(self.versions) < HNSW_FROM:
            return self.exact(query, k)
        found = self.index.search(query, min(k, len(self.versions)))
        return [(self.versions[int(key)], 1.0 - float(d)) for key, d in zip(found.keys, found.distances, strict=True)]

    def cosines(self, query: NDArray[np.float32], wanted: list[VersionKey]) -> dict[VersionKey, float]:
        """Cosine of the query with each of `wanted` that the index holds (the other branches' candidates)."""
        if not wanted:
            return {}
        rows = [(w, self.positions[w]) for w in wanted if w in self.positions]
        if not rows:
            return {}
        scores = self.matrix[[i for _, i in rows]] @ query
        return {w: float(s) for (w, _), s in zip(rows, scores, strict=True)}


_NEW_ROWS = """SELECT seq, family_id, version, vector FROM version_vectors
               WHERE model = %s AND seq > %s AND NOT (seq = ANY(%s::bigint[])) ORDER BY seq"""


class VectorIndexes:
    """The process's TenantVectors, per (tenant, model), least recently used dropped past `tenants`."""

    def __init__(self, tenants: int = 256) -> None:
        self._held: LRUCache[tuple[str, str], TenantVectors] = LRUCache(maxsize=tenants)
        self._lock = threading.Lock()

    def current(self, cur: Cursor, tenant: str, model: str, dims: int) -> TenantVectors:
        """The tenant's index, refreshed in the caller's transaction (the caller has set the tenant: RLS
        scopes what is read to it)."""
        with self._lock:
            vectors = self._held.get((tenant, model))
            if vectors is None:
                vectors = self._held[(tenant, model)] = TenantVectors(model, dims)
        with vectors.lock:
            cur.execute(_NEW_ROWS, (model, max(vectors.last_seq - REREAD, 0), vectors.recent_seqs()))
            vectors.add([(int(r["seq"]), r["family_id"], int(r["version"]), r["vector"]) for r in cur.fetchall()])
        return vectors
