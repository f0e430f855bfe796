"""The semantic index off the request path (issue #39), over HTTP against API processes of the bench's own.

One bench database with a tenant of 4,500 records and one of 100,000 (`BENCH_SNAPSHOT_LARGE`), their vectors from
the e5 pool (bench.semantic.VectorPool: real e5 vectors of synthetic texts plus noise). Then, in one run:
- the snapshot build of each tenant as the builder makes it (full, from PostgreSQL), its bytes per record;
- API restarts (2 workers, as `make up` runs them): the first five briefings of each tenant after each restart,
  with the snapshot published (the 4,500 tenant: each <= 300 ms; the 100k one: p95 <= 1 s) and, for the large
  tenant, without it (answered lexically with `degraded: ["semantic_index"]`: p95 <= 100 ms);
- 4 API workers, each having answered briefings of the large tenant: the snapshot's resident memory summed over
  the workers' proportional set size (PSS) against one copy (<= 1.3x).
JSON in bench/results/snapshots-<time>.json.
"""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.run import as_json, drop_database, fresh_database, load_records, log, percentiles, queries, write_result
from bench.semantic import VectorPool, _children, api_server, concurrent, sequential
from services.briefing.semantic import make_embedder, model_key
from services.briefing.snapshot_builder import SnapshotBuilder
from services.briefing.snapshots import SnapshotStore
from services.cli.client import OpsloreClient
from services.common.db import Database
from services.common.settings import get_settings

SMALL_TENANT = ("bench-4k5", 4_500)
LARGE_TENANT = ("bench-100k", int(os.environ.get("BENCH_SNAPSHOT_LARGE", "100000")))
RESTARTS = int(os.environ.get("BENCH_SNAPSHOT_RESTARTS", "3"))


def snapshot_bytes(store: SnapshotStore, tenant: str, model: str) -> int:
    return sum(f.stat().st_size for f in store.directory(tenant, model).iterdir())


def first_five(url: str, key: str, offset: int) -> tuple[list[float], list[list[str]]]:
    """The first five briefings after a restart, one after another (distinct questions): ms and `degraded`."""
    import httpx

    out, degraded = [], []
    with httpx.Client(base_url=url, timeout=600, headers={"Authorization": f"Bearer {key}"}) as http:
        for q in queries(5, offset=offset):
            t0 = time.perf_counter()
            answer = http.post("/v1/briefings", json=as_json(q))
            out.append((time.perf_counter() - t0) * 1000)
            ok = answer.status_code == 200
            degraded.append(answer.json().get("degraded", []) if ok else [str(answer.status_code)])
    return out, degraded


def mapped_pss_kb(pid: int, name: str) -> tuple[int, int]:
    """(PSS, RSS) in kB of `pid`'s mappings of files whose path contains `name`."""
    pss = rss = 0
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
            inside = len(head) >= 6 and name in head[-1]
        elif inside and line.startswith("Pss:"):
            pss += int(head[1])
        elif inside and line.startswith("Rss:"):
            rss += int(head[1])
    return pss, rss


def main() -> None:
    # the bench's API processes answer every client: fair sharing per key (bench.fairness measures it) is off
    os.environ.update({"OPSLORE_FAIR_KEY_RATE": "0", "OPSLORE_FAIR_TENANT_RATE": "0", "OPSLORE_FAIR_KEY_BRIEFINGS": "0",
                       "OPSLORE_FAIR_TENANT_BRIEFINGS": "0"})
    settings = get_settings()
    embedder = make_embedder(settings.embedding)
    if embedder is None:
        raise SystemExit("OPSLORE_EMBEDDING=off: nothing to measure")
    model = model_key(embedder)
    started = time.perf_counter()
    doc: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(), "machine": {"cpus": os.cpu_count()},
                           "model": model, "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    db_url, owner_url = fresh_database(settings)
    root = Path(settings.index_dir) / f"bench-{int(time.time())}"
    store = SnapshotStore(root)
    try:
        pool = VectorPool(embedder)
        db = Database(db_url, max_size=2)
        db.open()
        builder = SnapshotBuilder(db, store, model, embedder.dims)
        for tenant, n in (SMALL_TENANT, LARGE_TENANT):
            t0 = time.perf_counter()
            load_records(db_url, tenant, 0, n, 7, pool)
            log(f"snapshots: {n} records of {tenant} loaded in {time.perf_counter() - t0:.0f}s")
            t0 = time.perf_counter()
            meta = builder.refresh(tenant, full=True, force=True)
            assert meta is not None and meta.count == n
            build_s = time.perf_counter() - t0
            size = snapshot_bytes(store, tenant, model)
            doc[tenant] = {"records": n, "build_seconds": round(build_s, 1), "snapshot_bytes": size,
                           "bytes_per_record": round(size / n, 1), "float32_vector_bytes": 4 * embedder.dims}
            log(f"snapshots: {tenant} built in {build_s:.1f}s, {size / n:.0f} bytes/record")
        db.close()
        with psycopg.connect(owner_url, autocommit=True) as conn:  # steady state, not the bulk load's statistics
            conn.execute("VACUUM (ANALYZE) memory_versions, memory_families, version_search, lexeme_stats,"
                         " search_corpus, version_vectors")
            conn.execute("CHECKPOINT")
        large = LARGE_TENANT[0]
        for label, tenant, keep in (("small_with_snapshot", SMALL_TENANT[0], True),
                                    ("large_with_snapshot", large, True), ("large_without_snapshot", large, False)):
            if not keep:
                shutil.move(str(store.directory(large, model)), str(root / "set-aside"))
            samples: list[float] = []
            degraded: list[list[str]] = []
            for restart in range(RESTARTS):
                with api_server(db_url, settings.embedding, workers=2, index_dir=str(root)) as api:
                    key = OpsloreClient(api.url, settings.admin_token).create_key(tenant, "agent", None)
                    ms, deg = first_five(api.url, key, 300_000 + 10 * restart + (0 if keep else 1000))
                samples += ms
                degraded += deg
            doc[label] = {"restarts": RESTARTS, "first_five_ms": [round(x, 1) for x in samples],
                          "ms": percentiles(samples), "max_ms": round(max(samples), 1),
                          "degraded": sorted({",".join(d) or "-" for d in degraded})}
            log(f"snapshots: {label}: {doc[label]['ms']} max {doc[label]['max_ms']} degraded {doc[label]['degraded']}")
            if not keep:
                shutil.move(str(root / "set-aside"), str(store.directory(large, model)))
        with api_server(db_url, settings.embedding, workers=4, index_dir=str(root)) as api:
            key = OpsloreClient(api.url, settings.admin_token).create_key(large, "agent", None)
            asks = [as_json(q) for q in queries(400, offset=200_000)]
            _, errors, _ = concurrent(api.url, key, lambda i, n: asks[(i * 100 + n) % len(asks)], clients=8,
                                      seconds=30)
            sequential(api.url, key, asks[:8])
            workers = _children().get(api.proc.pid, [])
            newest = store.newest(large, model)
            assert newest is not None
            name = f"{newest.seq:016d}.usearch"
            per = {pid: mapped_pss_kb(pid, name) for pid in workers}
            one_copy_kb = (root / store.directory(large, model).relative_to(root) / name).stat().st_size / 1024
            mapping = [p for p, (_, rss) in per.items() if rss > 0]
            doc["four_workers"] = {"workers": len(workers), "workers_mapping_the_snapshot": len(mapping),
                                   "errors": errors, "snapshot_file_kb": round(one_copy_kb),
                                   "pss_kb": {str(p): v[0] for p, v in per.items()},
                                   "rss_kb": {str(p): v[1] for p, v in per.items()},
                                   "pss_sum_over_one_copy": round(sum(v[0] for v in per.values()) / one_copy_kb, 3),
                                   "rss_sum_over_one_copy": round(sum(v[1] for v in per.values()) / one_copy_kb, 3)}
            log(f"snapshots: 4 workers: {doc['four_workers']}")
    finally:
        drop_database(settings, db_url)
        shutil.rmtree(root, ignore_errors=True)
    doc["seconds_total"] = round(time.perf_counter() - started, 1)
    write_result("snapshots", doc)


if __name__ == "__main__":
    main()
