"""VectorIndexes: what a briefing's semantic recall searches: the tenant's snapshot, and an exact scan of newer rows.

PostgreSQL is the source of truth (`version_vectors`, under row-level security). Each API process holds, per
tenant and embedding model, a `TenantSemantic`: the newest published snapshot (`snapshots`, memory-mapped, built
by the `opslore index snapshots` process, never on the request path) and `TenantVectors`, the tenant's rows newer
than the snapshot, read in the briefing's own transaction (so the rows it sees are exactly what RLS lets this
tenant see) and scanned exactly. The index answers "the versions nearest to this question"; whether a version is
still current, active and valid is decided afterwards in SQL (`retrieval`), as for every other branch, so a
superseded or retracted version the index still holds can never become a hint.

What a briefing may read is bounded: at most `DELTA_LIMIT` rows past the snapshot are held per tenant. A tenant
with no snapshot and more rows than that raises `SemanticIndexNotReady` (the briefing answers lexically and says
`degraded: ["semantic_index"]`, at once); a tenant whose snapshot is behind by more than that is searched over
the snapshot and the first `DELTA_LIMIT` newer rows, and the answer says the same. Small tenants never need a
snapshot.

Refresh and concurrent writers: an identity is assigned at INSERT, not at COMMIT, so a transaction holding
seq 10 may commit after one holding seq 11 was read. Each refresh therefore asks for every seq past
`REREAD` below the highest one held that it does not hold (one index range scan, usually answering no row),
and a snapshot lists the seqs it holds within `REREAD` of its highest; a writer that stays uncommitted across
more than `REREAD` later vector writes (of any tenant) would be missed until the next full snapshot build
(approvals write one vector each and commit in milliseconds).
"""

from __future__ import annotations

import logging
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
from cachetools import LRUCache
from numpy.typing import NDArray

from services.briefing.cache import VersionKey
from services.briefing.snapshots import IndexSnapshot, SnapshotStore
from services.common.db import Cursor

log = logging.getLogger("opslore.vectors")

REREAD = 256
DELTA_LIMIT = 2048  # rows past the snapshot a process holds per tenant (and reads at most per briefing)
SNAPSHOT_CHECK_SECONDS = 1.0  # how often a process looks for a newer snapshot of a tenant it serves


class SemanticIndexNotReady(Exception):
    """The tenant has more vectors than a briefing may scan exactly, and no snapshot yet."""


@dataclass
class TenantVectors:
    """One tenant's vectors of one model newer than its snapshot (all of them without one), scanned exactly."""

    model: str
    dims: int
    base_seq: int = 0  # the snapshot's highest seq (rows at or below it, outside `seen`, are the snapshot's)
    base_recent: tuple[int, ...] = ()
    versions: list[VersionKey] = field(default_factory=list)  # row -> (family_id, version)
    positions: dict[VersionKey, int] = field(default_factory=dict)
    seen: set[int] = field(default_factory=set)  # seqs held here or in the snapshot within REREAD
    last_seq: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _recent: list[int] = field(default_factory=list)
    _buffer: NDArray[np.float32] = field(init=False)  # row = position, grown x2

    def __post_init__(self) -> None:
        self._buffer = np.zeros((16, self.dims), np.float32)
        self.last_seq = self.base_seq
        self.seen = set(self.base_recent)
        self._recent = sorted(self.base_recent)

    @property
    def matrix(self) -> NDArray[np.float32]:
        return self._buffer[:len(self.versions)]

    def recent_seqs(self) -> list[int]:
        """The seqs held within REREAD of the highest one (what a refresh need not read again)."""
        return self._recent

    def __len__(self) -> int:
        return len(self.versions)

    def add(self, rows: list[tuple[int, uuid.UUID, int, NDArray[np.float32]]]) -> int:
        """Rows (seq, family_id, version, vector) not held yet; returns how many were added."""
        new = [r for r in rows if r[0] not in self.seen]
        if not new:
            return 0
        start = len(self.versions)
        if start + len(new) > self._buffer.shape[0]:
            grown = np.zeros((max(2 * self._buffer.shape[0], start + len(new)), self.dims), np.float32)
            grown[:start] = self._buffer[:start]
            self._buffer = grown
        self._buffer[start:start + len(new)] = np.asarray([r[3] for r in new], np.float32).reshape(len(new), self.dims)
        for seq, family_id, version, _ in new:
            self.seen.add(seq)
            self.positions[(family_id, version)] = len(self.versions)
            self.versions.append((family_id, version))
            self.last_seq = max(self.last_seq, seq)
        low = self.last_seq - REREAD
        self._recent = sorted(x for x in [*self._recent, *(r[0] for r in new)] if x > low)
        return len(new)

    def exact(self, query: NDArray[np.float32], k: int) -> list[tuple[VersionKey, float]]:
        """The k nearest by a full scan (vectors are unit length: inner product = cosine)."""
        if not self.versions:
            return []
        scores = self.matrix @ query
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.versions[int(i)], float(scores[i])) for i in order]

    def cosines(self, query: NDArray[np.float32], wanted: list[VersionKey]) -> dict[VersionKey, float]:
        """Cosine of the query with each of `wanted` held here."""
        rows = [(w, self.positions[w]) for w in wanted if w in self.positions]
        if not rows:
            return {}
        scores = self.matrix[[i for _, i in rows]] @ query
        return {w: float(s) for (w, _), s in zip(rows, scores, strict=True)}


@dataclass
class TenantSemantic:
    """What one briefing searches: the snapshot (if any) and the exact rows newer than it."""

    snapshot: IndexSnapshot | None
    delta: TenantVectors
    checked: float  # time.monotonic() of the last look for a newer snapshot
    complete: bool = True  # the delta holds every newer row (else the snapshot is behind by > DELTA_LIMIT)

    def search(self, query: NDArray[np.float32], k: int) -> list[tuple[VersionKey, float]]:
        found = dict(self.snapshot.search(query, k)) if self.snapshot is not None else {}
        found.update(self.delta.exact(query, k))
        return sorted(found.items(), key=lambda kv: -kv[1])[:k]

    def cosines(self, query: NDArray[np.float32], wanted: list[VersionKey]) -> dict[VersionKey, float]:
        got = self.delta.cosines(query, wanted)
        if self.snapshot is not None:
            got = {**self.snapshot.cosines(query, [w for w in wanted if w not in got]), **got}
        return got


# ---------------------------------------------------------------- reading rows (array_send, into numpy)

_ROWS = """SELECT seq, family_id, version, array_send(vector) AS vector FROM version_vectors
           WHERE model = %s AND seq > %s AND NOT (seq = ANY(%s::bigint[])) ORDER BY seq"""
_HEAD = struct.Struct(">iiI")  # ndim, has nulls, element type


def read_rows(cur: Cursor, model: str, after: int, held: list[int], limit: int | None = None,
              ) -> list[tuple[int, uuid.UUID, int, NDArray[np.float32]]]:
    """The caller's tenant's `model` rows (seq, family_id, version, vector) with seq > `after`, outside `held`,
    in seq order, at most `limit`. Each vector arrives in PostgreSQL's binary array form (`array_send`) and is
    parsed straight into numpy: no Python float per element (a pipeline-mode transaction cannot COPY)."""
    if limit is None:
        cur.execute(_ROWS, (model, after, held))
    else:
        cur.execute(_ROWS + " LIMIT %s", (model, after, held, limit))
    return [(int(r["seq"]), r["family_id"], int(r["version"]), array_vector(r["vector"])) for r in cur.fetchall()]


def array_vector(data: bytes) -> NDArray[np.float32]:
    """A one-dimensional real[] without nulls, in PostgreSQL's binary array form."""
    ndim, nulls, _ = _HEAD.unpack_from(data, 0)
    if ndim == 0:
        return np.zeros(0, np.float32)
    if ndim != 1 or nulls:
        raise ValueError("a vector is a one-dimensional real[] without nulls")
    (n,) = struct.unpack_from(">i", data, _HEAD.size)
    elems = np.frombuffer(data, dtype=[("size", ">i4"), ("value", ">f4")], count=n, offset=_HEAD.size + 8)
    return elems["value"].astype(np.float32)


class VectorIndexes:
    """The process's TenantSemantic, per (tenant, model), least recently used dropped past `tenants`."""

    def __init__(self, store: SnapshotStore | None = None, tenants: int = 256, delta_limit: int = DELTA_LIMIT,
                 check_seconds: float = SNAPSHOT_CHECK_SECONDS) -> None:
        self.store = store
        self.delta_limit = delta_limit
        self.check_seconds = check_seconds
        self._held: LRUCache[tuple[str, str], TenantSemantic] = LRUCache(maxsize=tenants)
        self._lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()
        self._unready: dict[tuple[str, str], float] = {}  # (tenant, model) -> until when the verdict holds

    def unready(self, tenant: str, model: str) -> bool:
        """The tenant had more rows than DELTA_LIMIT and no snapshot less than `check_seconds` ago (the briefing
        then skips the question's embedding too)."""
        until = self._unready.get((tenant, model))
        return until is not None and time.monotonic() < until

    def _snapshot(self, tenant: str, model: str, dims: int, have: TenantSemantic | None) -> TenantSemantic | None:
        """A TenantSemantic on a newer snapshot than `have`'s, or None when there is none."""
        if self.store is None:
            return None
        meta = self.store.newest(tenant, model)
        if meta is None or meta.dims != dims or (have is not None and have.snapshot is not None
                                                 and have.snapshot.meta.seq >= meta.seq):
            return None
        try:
            snapshot = self.store.open(meta)
        except (OSError, ValueError, RuntimeError):
            log.warning("snapshot of %s (seq %s) could not be opened; serving without it", tenant, meta.seq,
                        exc_info=True)
            return None
        return TenantSemantic(snapshot, TenantVectors(model, dims, meta.seq, meta.recent), time.monotonic())

    def current(self, cur: Cursor, tenant: str, model: str, dims: int) -> TenantSemantic:
        """The tenant's searchable vectors, refreshed in the caller's transaction (the caller has set the tenant:
        RLS scopes what is read to it). Raises SemanticIndexNotReady (see the module docstring)."""
        with self._lock:
            held = self._held.get((tenant, model))
            if held is None or time.monotonic() - held.checked >= self.check_seconds:
                newer = self._snapshot(tenant, model, dims, held)
                if newer is not None:
                    held = newer
                elif held is None:
                    held = TenantSemantic(None, TenantVectors(model, dims), time.monotonic())
                else:
                    held.checked = time.monotonic()
                self._held[(tenant, model)] = held
        delta = held.delta
        with delta.lock:
            if held.snapshot is None and not len(delta) and self._too_many(cur, model, delta):
                self._not_ready(tenant, model)
            room = self.delta_limit - len(delta)
            rows = read_rows(cur, model, max(delta.last_seq - REREAD, 0), delta.recent_seqs(), room + 1) \
                if room >= 0 else []
            if len(rows) > room:
                if held.snapshot is None:
                    self._not_ready(tenant, model)
                held.complete = False
                rows = rows[:room]
            delta.add(rows)
        return held

    def _too_many(self, cur: Cursor, model: str, delta: TenantVectors) -> bool:
        """More rows than DELTA_LIMIT to scan: one index-only count, no vector read."""
        cur.execute("""SELECT count(*) AS n FROM (SELECT 1 FROM version_vectors WHERE model = %s AND seq > %s
                       AND NOT (seq = ANY(%s::bigint[])) LIMIT %s) newer""",
                    (model, max(delta.last_seq - REREAD, 0), delta.recent_seqs(), self.delta_limit + 1))
        row = cur.fetchone()
        return row is not None and int(row["n"]) > self.delta_limit

    def _not_ready(self, tenant: str, model: str) -> None:
        """Hold nothing (the builder will make a snapshot), remember the verdict for `check_seconds`, raise."""
        self._warn(tenant, model)
        with self._lock:
            self._held.pop((tenant, model), None)
            self._unready[(tenant, model)] = time.monotonic() + max(self.check_seconds, 0.0)
        raise SemanticIndexNotReady(f"more than {self.delta_limit} vectors and no snapshot yet")

    def _warn(self, tenant: str, model: str) -> None:
        if (tenant, model) not in self._warned:
            self._warned.add((tenant, model))
            log.warning("tenant %s has more than %d %s vectors and no snapshot: answering lexically until the "
                        "snapshot builder (`opslore index snapshots`) publishes one", tenant, self.delta_limit, model)
