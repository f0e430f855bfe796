"""The embedding branch in the benchmarks (issue #29): synthetic vectors, HNSW recall, reindex, HTTP probes.

Embedding a million synthetic texts with e5 on 2 cores is out of reach, so `VectorPool` embeds a pool of
distinct synthetic texts with the real model once (each archetype's `semantic_text` with one of `variants`
service-instance lines appended) and gives every record version the pool vector of its archetype and
variant plus small deterministic Gaussian noise, re-normalised (`write_vectors` stores them in
`version_vectors` under the model key the API serves). Questions are embedded for real at request time.

`hnsw_recall`: the HNSW answers of a snapshot's graph (services.briefing.snapshots) against the exact scan.
`reindex_bench`: records/s of services.briefing.semantic.reindex (what `opslore index reindex-semantic` runs) on
records whose texts are the real-world postmortem corpus's. `ApiServer`: an API process of its own (2 workers) over
the bench database, whose CPU time is read from /proc. """

from __future__ import annotations

import hashlib
import os
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg.types.json import Jsonb

from bench.generate import ARCHETYPES, T0, Picker, record_content
from bench.load import closed_loop
from schemas.memory import EvidenceRef, VersionContent
from services.briefing.embedding import Embedder
from services.briefing.semantic import RECALL_K, SemanticIndex, model_key, reindex, semantic_text
from services.briefing.snapshots import DTYPE, index_for
from services.common.db import Database
from services.memory.records import content_hash

POOL_VARIANTS = int(os.environ.get("BENCH_POOL_VARIANTS", "60"))  # x 23 archetypes = 1,380 distinct texts
NOISE_SIGMA = 0.0025  # per dimension: a noise vector of norm ~0.05 (cosine to its pool vector ~0.9988)
CACHE = Path(os.environ.get("BENCH_POOL_CACHE", Path.home() / ".cache" / "opslore"))


class _Only(Picker):
    """A picker that always draws the same archetype (to build that archetype's record content)."""

    def __init__(self, archetype: dict[str, Any]) -> None:
        self._only = archetype

    def archetype(self) -> dict[str, Any]:
        return self._only


def pool_text(archetype: dict[str, Any], variant: int) -> str:
    content, _ = record_content(0, _Only(archetype))
    return f"{semantic_text(content)}\n{archetype['service']}-{variant}"


class VectorPool:
    """Real e5 passage vectors of len(ARCHETYPES) x `variants` distinct texts (cached on disk per model and
    texts), and the noisy record vectors drawn from them."""

    def __init__(self, embedder: Embedder, variants: int = POOL_VARIANTS, sigma: float = NOISE_SIGMA) -> None:
        self.model = model_key(embedder)
        self.dims = embedder.dims
        self.variants, self.sigma = variants, sigma
        self.row = {str(a["id"]): k * variants for k, a in enumerate(ARCHETYPES)}
        texts = [pool_text(a, v) for a in ARCHETYPES for v in range(variants)]
        digest = hashlib.sha256("\n\0".join([self.model, *texts]).encode()).hexdigest()[:16]
        path = CACHE / f"bench-pool-{digest}.npy"
        self.cached = path.exists()
        start = time.perf_counter()
        if self.cached:
            self.vectors: NDArray[np.float32] = np.load(path)
        else:
            self.vectors = np.concatenate([embedder.embed(texts[i:i + 64]) for i in range(0, len(texts), 64)])
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, self.vectors)
        self.seconds = time.perf_counter() - start
        self.texts = len(texts)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "distinct_texts_embedded": self.texts, "variants_per_archetype": self.variants,
                "noise_sigma_per_dim": self.sigma, "pool_from_cache": self.cached,
                "pool_seconds": round(self.seconds, 1),
                "method": "record vector = the real e5 passage vector of its archetype's semantic_text plus a "
                          "variant line (record index mod variants), + N(0, sigma^2) per dimension (seeded by "
                          "tenant and chunk), re-normalised; questions are embedded for real at request time"}

    def for_records(self, picks: list[tuple[int, str]], seed: int) -> NDArray[np.float32]:
        """The vectors of records (index, archetype id), deterministic for `seed`."""
        rows = [self.row[a] + i % self.variants for i, a in picks]
        out = self.vectors[rows] + np.random.default_rng(seed).normal(0, self.sigma, (len(rows), self.dims))
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_FLOAT4_OID = 700


def binary_copy(keys: list[tuple[uuid.UUID, int]], vectors: NDArray[np.float32]) -> bytes:
    """Rows (family_id uuid, version int4, vector float4[]) in PostgreSQL's binary COPY format."""
    n, dims = vectors.shape
    elems = np.empty((n, dims), dtype=[("size", ">i4"), ("value", ">f4")])
    elems["size"], elems["value"] = 4, vectors
    array_head = struct.pack(">iiIii", 1, 0, _FLOAT4_OID, dims, 1)
    field_head = struct.pack(">i", len(array_head) + elems.itemsize * dims)
    parts = [_COPY_SIGNATURE]
    for (family_id, version), row in zip(keys, elems, strict=True):
        parts += [struct.pack(">hi", 3, 16), family_id.bytes, struct.pack(">ii", 4, version), field_head,
                  array_head, row.tobytes()]
    parts.append(struct.pack(">h", -1))
    return b"".join(parts)


def write_vectors(cur: psycopg.Cursor[Any], tenant: str, model: str, keys: list[tuple[uuid.UUID, int]],
                  vectors: NDArray[np.float32]) -> None:
    """Insert `version_vectors` rows in the cursor's transaction (tenant set: RLS checks them): binary COPY
    into a temporary table, then one INSERT ... SELECT (COPY FROM is refused on a table with RLS)."""
    cur.execute("CREATE TEMP TABLE IF NOT EXISTS bench_vectors (family_id uuid, version integer, vector real[])")
    with cur.copy("COPY bench_vectors (family_id, version, vector) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(binary_copy(keys, vectors))
    cur.execute("INSERT INTO version_vectors (tenant, family_id, version, model, vector)"
                " SELECT %s, family_id, version, %s, vector FROM bench_vectors", (tenant, model))
    cur.execute("TRUNCATE bench_vectors")


# ---------------------------------------------------------------- HNSW against the exact scan
def hnsw_recall(vectors: NDArray[np.float32], queries: NDArray[np.float32], k: int = 10) -> dict[str, Any]:
    """recall@k of a snapshot's HNSW graph (services.briefing.snapshots: half-precision vectors, as the snapshot
    builder makes them) against the exact float32 scan, and both latencies; also recall at the briefing's own
    depth (RECALL_K), how close the missed neighbours were (the mean cosine of HNSW's k-th answer against the
    exact k-th), and the snapshot's bytes per vector on disk (graph and vectors; keys add 28)."""
    import tempfile

    index = index_for(vectors.shape[1])
    start = time.perf_counter()
    index.add(np.arange(len(vectors), dtype=np.uint64), vectors)
    build = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as where:
        index.save(f"{where}/i.usearch")
        size = os.path.getsize(f"{where}/i.usearch")

    def exact(q: NDArray[np.float32], n: int) -> list[int]:
        return [int(i) for i in np.argsort(-(vectors @ q), kind="stable")[:n]]

    hits, deep_hits, kth_approx, kth_exact, hnsw_ms, exact_ms = 0, 0, [], [], [], []
    for q in queries:
        t0 = time.perf_counter()
        found = index.search(q, k)
        t1 = time.perf_counter()
        truth = exact(q, k)
        t2 = time.perf_counter()
        hits += len({int(x) for x in found.keys} & set(truth))
        kth_approx.append(float(vectors[int(found.keys[-1])] @ q))
        kth_exact.append(float(vectors[truth[-1]] @ q))
        hnsw_ms.append((t1 - t0) * 1000)
        exact_ms.append((t2 - t1) * 1000)
        deep_hits += len({int(x) for x in index.search(q, RECALL_K).keys} & set(exact(q, RECALL_K)))
    return {"vectors": len(vectors), "queries": len(queries), "k": k, "dtype": DTYPE,
            f"recall_at_{k}": round(hits / (k * len(queries)), 4),
            f"recall_at_{RECALL_K}": round(deep_hits / (RECALL_K * len(queries)), 4),
            "cosine_of_kth_hnsw_vs_exact": [round(float(np.mean(kth_approx)), 4), round(float(np.mean(kth_exact)), 4)],
            "build_seconds": round(build, 1), "hnsw_search_ms_p50": round(float(np.median(hnsw_ms)), 3),
            "exact_scan_ms_p50": round(float(np.median(exact_ms)), 3),
            "index_bytes_per_vector": round(size / len(vectors), 1),
            "float32_bytes_per_vector": 4 * vectors.shape[1]}


def unit_vectors(rng: np.random.Generator, n: int, dims: int) -> NDArray[np.float32]:
    v = rng.standard_normal((n, dims)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def recall_bench(pool: VectorPool | None, n: int = 100_000, queries: int = 200) -> dict[str, Any]:
    """recall@10 on `n` random unit vectors (queries random too: the hardest case, no structure), and on `n`
    pool-derived record vectors asked with real question vectors' stand-ins (pool vectors with fresh noise)."""
    rng = np.random.default_rng(29)
    out: dict[str, Any] = {"random_unit": hnsw_recall(unit_vectors(rng, n, 384), unit_vectors(rng, queries, 384))}
    if pool is not None:
        picks = [(i, str(ARCHETYPES[i % len(ARCHETYPES)]["id"])) for i in range(n)]
        asked = [(i * 7919, str(ARCHETYPES[i % len(ARCHETYPES)]["id"])) for i in range(queries)]
        out["pool_records"] = hnsw_recall(pool.for_records(picks, 1), pool.for_records(asked, 2))
    return out


# ---------------------------------------------------------------- reindex throughput
def real_contents(count: int) -> list[VersionContent]:
    """`count` record versions whose texts are the real-world postmortem corpus's (each postmortem in its
    language and in the other one, cycled; the incident id makes each version distinct)."""
    from replay.realworld import load

    pms = load()
    out = []
    for i in range(count):
        pm = pms[(i // 2) % len(pms)]
        symptoms = pm.symptoms if i % 2 == 0 else pm.symptoms_other
        inc = f"INC-R{i:06d}"
        out.append(VersionContent(
            memory_type="episodic", summary=pm.summary or pm.root_cause, canonical_content=pm.root_cause,
            root_cause=pm.root_cause, root_cause_category=pm.cls, alert_name=pm.alert, services=pm.services,
            signals=pm.signals, entities=pm.services, source_incidents=[inc],
            evidence=[EvidenceRef(event_id=uuid.uuid5(uuid.NAMESPACE_OID, inc), incident_id=inc, source="prometheus",
                                  summary=symptoms, trust="trusted_tool", signals=pm.signals)],
            trust_mix={"trusted_tool": 1}, confidence=0.7, environment="prod", valid_from=T0, observed_at=T0))
    return out


def insert_versions(db_url: str, tenant: str, contents: list[VersionContent], first: int = 0) -> None:
    """Approved versions (family `uuid5(tenant/i)`, i from `first`), written straight to the tables."""
    cols = ["tenant", "family_id", "version", "project", *VersionContent.model_fields, "content_hash",
            "created_by", "state"]
    sql = f"INSERT INTO memory_versions ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
    fams, rows = [], []
    for i, content in enumerate(contents, start=first):
        fid = uuid.uuid5(uuid.NAMESPACE_OID, f"{tenant}/{i}")
        data = content.model_dump(mode="python")
        for col in ("evidence", "verify_with", "trust_mix"):
            data[col] = Jsonb(content.model_dump(mode="json")[col])
        rows.append((tenant, fid, 1, "bench", *(data[c] for c in VersionContent.model_fields), content_hash(content),
                     "bench", "active"))
        fams.append((tenant, fid, "bench", "episodic", "active", 1))
    with psycopg.connect(db_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT set_config('opslore.tenant', %s, false)", (tenant,))
        cur.executemany("INSERT INTO memory_families (tenant, family_id, project, memory_type, state,"
                        " current_version) VALUES (%s, %s, %s, %s, %s, %s)", fams)
        cur.executemany(sql, rows)


def reindex_bench(db_url: str, embedder: Embedder, count: int = 2000, batch: int = 32) -> dict[str, Any]:
    """records/s of `reindex` (the CLI's `opslore index reindex-semantic`) over `count` real-text records."""
    tenant = "bench-reindex"
    contents = real_contents(count)
    insert_versions(db_url, tenant, contents)
    texts = [semantic_text(c) for c in contents]
    db = Database(db_url, max_size=2)
    db.open()
    try:
        cpu, start = time.process_time(), time.perf_counter()
        done = reindex(db, SemanticIndex(embedder), tenant, activate=True, batch=batch)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        db.close()
    return {"records": count, "batch": batch, "vectors_written": done["vectors_written"], "seconds": round(seconds, 1),
            "records_per_s": round(count / seconds, 1), "cpu_ms_per_record": round(cpu / count * 1000, 1),
            "text_chars_mean": round(sum(map(len, texts)) / len(texts)), "distinct_texts": len(set(texts)),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "(unset: all cores)")}


# ---------------------------------------------------------------- an API server of the bench's own
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of `pid` and its descendants (the API's uvicorn workers), from /proc."""
    tree, todo, total = _children(), [pid], 0.0
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
        todo += tree.get(p, [])
    return total


class ApiServer:
    """`opslore api --workers N` over the bench database (its own port), started and stopped by the bench."""

    def __init__(self, db_url: str, embedding: str, workers: int = 2, omp_threads: int | None = None,
                 index_dir: str | None = None) -> None:
        """`omp_threads`: OMP_NUM_THREADS of the server's processes (read when OpenMP loads, at import of usearch
        and of the e5 engine); None: as the environment has it (unset: one OpenMP thread per core). `index_dir`:
        where its processes find the semantic index snapshots (OPSLORE_INDEX_DIR)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.embedding, self.workers = embedding, workers
        env = os.environ | {"OPSLORE_DATABASE_URL": db_url, "OPSLORE_EMBEDDING": embedding,
                            "OPSLORE_API_WORKERS": str(workers), "OPSLORE_API_PORT": str(self.port)}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        if index_dir is not None:
            env["OPSLORE_INDEX_DIR"] = index_dir
        if omp_threads is not None:
            env["OMP_NUM_THREADS"] = str(omp_threads)
        self.log = Path(f"/tmp/bench-api-{self.port}.log")
        self.proc = subprocess.Popen([sys.executable, "-m", "services.cli.main", "api", "--port", str(self.port),
                                      "--workers", str(workers)], env=env, stdout=self.log.open("wb"),
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"bench API did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.5)

    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def api_server(db_url: str, embedding: str, workers: int = 2, omp_threads: int | None = None,
               index_dir: str | None = None) -> Iterator[ApiServer]:
    server = ApiServer(db_url, embedding, workers, omp_threads, index_dir)
    try:
        yield server
    finally:
        server.stop()


def sequential(url: str, key: str, asks: list[dict[str, Any]]) -> tuple[list[float], int]:
    """Latencies (ms) of `asks` one after another over one connection, and the count of non-200 answers."""
    out, errors = [], 0
    with httpx.Client(base_url=url, timeout=600, headers={"Authorization": f"Bearer {key}"}) as http:
        for ask in asks:
            t0 = time.perf_counter()
            try:
                ok = http.post("/v1/briefings", json=ask).status_code == 200
            except httpx.HTTPError:
                ok = False
            out.append((time.perf_counter() - t0) * 1000)
            errors += not ok
    return out, errors


def concurrent(url: str, key: str, asks: Callable[[int, int], dict[str, Any]], clients: int,
               seconds: float, each: int | None = None) -> tuple[list[float], int, float]:
    """`clients` threads (one connection each) asking `asks(client, n)` for `seconds` (or `each` questions
    each): latencies (ms), the count of non-200 answers or transport errors, and the wall time."""
    return closed_loop(url, key, lambda http, i, n: http.post("/v1/briefings", json=asks(i, n)), clients, seconds,
                       each)
