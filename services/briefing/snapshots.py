"""IndexSnapshot and SnapshotStore: each tenant's semantic index, built off the request path, shared by mmap.

Who writes: `SnapshotBuilder` (`snapshot_builder`, the `opslore index snapshots` process: one per machine, beside
the API processes) builds a usearch HNSW index of one tenant's vectors of one model from `version_vectors` and
publishes it here. PostgreSQL stays the source of truth: a lost or damaged snapshot costs a rebuild, never data.
Who reads: every API process memory-maps the newest snapshot (`Index.restore(view=True)`, the keys with
`np.load(mmap_mode="r")`), so every process on the machine shares one copy in the page cache, and nothing is
built or loaded on the request path but the mapping itself.

Layout: `<root>/<sha256(tenant)[:24]>/<sha256(model)[:16]>/<seq>.{usearch,keys.npy,json}`, `seq` (16 digits) the
highest `version_vectors.seq` the snapshot holds. The JSON, written last by rename, publishes the snapshot: it
names the tenant, the model, the count, the vector dtype, and the seqs it holds within `REREAD` below `seq` (a
reader's exact scan of newer rows skips those). A snapshot whose JSON names another tenant or model, another
format, or whose files disagree with it, is never opened: row-level security scopes the rows, this scopes the
files (a copied or moved directory cannot serve another tenant's briefing).

Vectors are stored in half precision: 768 bytes a vector instead of 1,536, cosines within about 1e-3 of the
float32 ones (the newer rows the exact scan serves stay float32).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

# onnxruntime (the embedding's engine) must load before usearch: the other order crashes the process in
# onnxruntime's import (SIGSEGV; usearch 2.26 with onnxruntime 1.28 and 1.32). tests/unit/test_native_imports.py
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401
from usearch.index import Index

from services.briefing.cache import VersionKey

log = logging.getLogger("opslore.snapshots")

FORMAT = 1
DTYPE = "f16"  # usearch scalar kind of the stored vectors
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 96
KEYS = np.dtype([("hi", "<u8"), ("lo", "<u8"), ("version", "<i4"), ("seq", "<i8")])  # row = usearch key


def index_for(dims: int) -> Index:
    """An empty index as snapshots hold them (inner product of unit vectors: distance = 1 - cosine)."""
    return Index(ndim=dims, metric="ip", dtype=DTYPE, connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD,
                 expansion_search=EXPANSION_SEARCH)


def key_rows(keys: list[tuple[int, uuid.UUID, int]]) -> NDArray[np.void]:
    """(seq, family_id, version) triples as the keys file stores them."""
    out = np.zeros(len(keys), KEYS)
    for i, (seq, family_id, version) in enumerate(keys):
        out[i] = (family_id.int >> 64, family_id.int & 0xFFFF_FFFF_FFFF_FFFF, version, seq)
    return out


@dataclass(frozen=True)
class SnapshotMeta:
    tenant: str
    model: str
    dims: int
    seq: int  # the highest version_vectors.seq held
    count: int
    recent: tuple[int, ...]  # the seqs held within REREAD below `seq`
    built_at: str
    dtype: str = DTYPE
    format: int = FORMAT

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "recent": list(self.recent)})

    @classmethod
    def parse(cls, text: str) -> SnapshotMeta:
        raw = json.loads(text)
        return cls(tenant=str(raw["tenant"]), model=str(raw["model"]), dims=int(raw["dims"]), seq=int(raw["seq"]),
                   count=int(raw["count"]), recent=tuple(int(x) for x in raw["recent"]),
                   built_at=str(raw["built_at"]), dtype=str(raw["dtype"]), format=int(raw["format"]))


class IndexSnapshot:
    """One published snapshot, memory-mapped: HNSW search, and the stored vectors of chosen versions."""

    def __init__(self, meta: SnapshotMeta, index: Index, keys: NDArray[np.void]) -> None:
        self.meta = meta
        self.index = index
        self.keys = keys
        self._sorted: tuple[NDArray[np.uint64], NDArray[np.intp]] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.meta.count

    def version(self, position: int) -> VersionKey:
        row = self.keys[position]
        return uuid.UUID(int=(int(row["hi"]) << 64) | int(row["lo"])), int(row["version"])

    def _lookup(self) -> tuple[NDArray[np.uint64], NDArray[np.intp]]:
        """A 64-bit mix of each key, sorted, and the positions in that order: made once per mapped snapshot
        (numpy over the mapped keys, ~10 ms at 100k; a dict of 100k UUIDs took 0.8 s on the first briefing)."""
        if self._sorted is None:
            with self._lock:
                if self._sorted is None:
                    mixed = _mix(np.asarray(self.keys["hi"]), np.asarray(self.keys["lo"]),
                                 np.asarray(self.keys["version"]))
                    order = np.argsort(mixed, kind="stable")
                    self._sorted = (mixed[order], order)
        return self._sorted

    def positions_of(self, wanted: list[VersionKey]) -> list[int | None]:
        """The key of each wanted (family_id, version), None where the snapshot does not hold it."""
        if not wanted or not self.meta.count:
            return [None] * len(wanted)
        mixed, order = self._lookup()
        his = np.array([f.int >> 64 for f, _ in wanted], dtype=np.uint64)
        los = np.array([f.int & 0xFFFF_FFFF_FFFF_FFFF for f, _ in wanted], dtype=np.uint64)
        vers = np.array([v for _, v in wanted], dtype=np.int64)
        probe = _mix(his, los, vers)
        out: list[int | None] = []
        for n, at in enumerate(np.searchsorted(mixed, probe)):
            found = None
            while at < len(mixed) and mixed[at] == probe[n]:  # a mix is not unique: compare the key itself
                row = self.keys[int(order[at])]
                if int(row["hi"]) == int(his[n]) and int(row["lo"]) == int(los[n]) and int(row["version"]) == vers[n]:
                    found = int(order[at])
                    break
                at += 1
            out.append(found)
        return out

    def versions(self) -> set[VersionKey]:
        """Every (family_id, version) held (tests and tools: a Python object per vector)."""
        return {self.version(i) for i in range(self.meta.count)}

    def search(self, query: NDArray[np.float32], k: int) -> list[tuple[VersionKey, float]]:
        if not self.meta.count:
            return []
        found = self.index.search(query, min(k, self.meta.count))
        return [(self.version(int(key)), 1.0 - float(d)) for key, d in zip(found.keys, found.distances, strict=True)]

    def vectors(self, positions: list[int]) -> NDArray[np.float32]:
        got = self.index.get(np.asarray(positions, dtype=np.uint64), dtype="f32")
        return np.asarray(got, dtype=np.float32).reshape(len(positions), self.meta.dims)

    def cosines(self, query: NDArray[np.float32], wanted: list[VersionKey]) -> dict[VersionKey, float]:
        rows = [(w, p) for w, p in zip(wanted, self.positions_of(wanted), strict=True) if p is not None]
        if not rows:
            return {}
        scores = self.vectors([p for _, p in rows]) @ query
        return {w: float(s) for (w, _), s in zip(rows, scores, strict=True)}


def _mix(hi: NDArray[np.uint64], lo: NDArray[np.uint64], version: NDArray[np.integer]) -> NDArray[np.uint64]:
    """A 64-bit mix of (family_id, version), wrapping arithmetic (numpy uint64)."""
    with np.errstate(over="ignore"):
        out: NDArray[np.uint64] = (hi.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ lo.astype(np.uint64) \
            ^ (version.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
    return out


def _digest(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


class SnapshotStore:
    """Snapshots under one directory (OPSLORE_INDEX_DIR): published atomically, newest found, pruned."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def directory(self, tenant: str, model: str) -> Path:
        return self.root / _digest(tenant, 24) / _digest(model, 16)

    def newest(self, tenant: str, model: str) -> SnapshotMeta | None:
        """The newest published snapshot of `tenant`'s `model` vectors that is theirs (else None)."""
        where = self.directory(tenant, model)
        try:
            names = sorted((n for n in os.listdir(where) if n.endswith(".json")), reverse=True)
        except FileNotFoundError:
            return None
        for name in names:
            try:
                meta = SnapshotMeta.parse((where / name).read_text(encoding="utf-8"))
            except (OSError, ValueError, KeyError, TypeError):
                log.warning("unreadable snapshot description %s: skipped", where / name)
                continue
            if meta.tenant != tenant or meta.model != model or meta.format != FORMAT or meta.dtype != DTYPE:
                log.error("snapshot %s is not %s's %s snapshot: never opened", where / name, tenant, model)
                continue
            return meta
        return None

    def open(self, meta: SnapshotMeta) -> IndexSnapshot:
        """Memory-maps a published snapshot; ValueError when its files disagree with its description."""
        base = self.directory(meta.tenant, meta.model) / f"{meta.seq:016d}"
        keys = np.load(f"{base}.keys.npy", mmap_mode="r", allow_pickle=False)
        index = Index.restore(f"{base}.usearch", view=True)
        if index is None or len(index) != meta.count or keys.shape[0] != meta.count or keys.dtype != KEYS \
                or index.ndim != meta.dims:
            raise ValueError(f"snapshot {base} does not match its description")
        return IndexSnapshot(meta, index, keys)

    def publish(self, meta: SnapshotMeta, index: Index, keys: NDArray[np.void]) -> Path:
        """Writes the index and keys, then the description (each to a temporary name first): a reader sees a
        snapshot whole or not at all. Returns the description's path."""
        where = self.directory(meta.tenant, meta.model)
        where.mkdir(parents=True, exist_ok=True)
        base = where / f"{meta.seq:016d}"
        tmp = f".tmp-{os.getpid()}-{threading.get_ident()}"
        index.save(f"{base}.usearch{tmp}")
        os.replace(f"{base}.usearch{tmp}", f"{base}.usearch")
        with open(f"{base}.keys.npy{tmp}", "wb") as fh:
            np.save(fh, keys, allow_pickle=False)
        os.replace(f"{base}.keys.npy{tmp}", f"{base}.keys.npy")
        Path(f"{base}.json{tmp}").write_text(meta.to_json(), encoding="utf-8")
        os.replace(f"{base}.json{tmp}", f"{base}.json")
        return Path(f"{base}.json")

    def prune(self, tenant: str, model: str, keep: int = 2) -> int:
        """Removes all but the newest `keep` snapshots (a process still mapping one keeps its pages: unlinking a
        mapped file frees it only when unmapped); returns how many were removed."""
        where = self.directory(tenant, model)
        try:
            seqs = sorted({n.split(".")[0] for n in os.listdir(where) if n[:16].isdigit()}, reverse=True)
        except FileNotFoundError:
            return 0
        for seq in seqs[keep:]:
            for suffix in (".json", ".usearch", ".keys.npy"):
                Path(where / f"{seq}{suffix}").unlink(missing_ok=True)
        return max(len(seqs) - keep, 0)

    def lose(self, tenant: str, model: str) -> None:
        """Removes every snapshot of the tenant's model (a lost snapshot: tests and benchmarks)."""
        where = self.directory(tenant, model)
        for name in os.listdir(where) if where.exists() else []:
            (where / name).unlink(missing_ok=True)
