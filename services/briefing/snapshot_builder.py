"""SnapshotBuilder: the owner of the semantic index snapshots (`opslore index snapshots`, one per machine).

Each tick visits the tenants whose vectors changed since the last (`opslore_vector_tenants_since`, migration 0029:
an idle system costs one index probe) and those a tick left behind, and, for the model its briefings serve
(`embedding_state`, else the configured one), compares the rows in `version_vectors` with the tenant's newest
snapshot (`snapshots`): `should_build` decides (a pure rule on counts and ages: a tenant without a snapshot gets
one once it has `BUILD_FROM` rows; one with a snapshot gets a new one when `REBUILD_ROWS` rows are newer, or any
newer row is older than `MAX_LAG_SECONDS`). A build is incremental when a snapshot exists (the previous graph
loaded, the newer rows added: seconds at 100k records) and full otherwise, or when `--full` asks. Every row is read
in a tenant transaction (RLS), so a snapshot holds exactly the rows its tenant's briefings could read.

Commit order: the snapshot's files are written and renamed into place, its description last; older snapshots
are pruned after. A crash at any point leaves either the previous snapshot or the new one published, never a
half one; the next tick carries on. Several builders on one machine would only duplicate work: run one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from prometheus_client import Counter, Gauge, Histogram

from services.briefing.snapshots import IndexSnapshot, SnapshotMeta, SnapshotStore, index_for, key_rows
from services.briefing.vectors import REREAD, VectorIndexes, read_rows
from services.common.db import Cursor, Database
from services.common.settings import Settings

log = logging.getLogger("opslore.snapshots")

BUILD_FROM = 256  # rows a tenant has before it gets a snapshot (below, briefings scan its rows exactly)
REBUILD_ROWS = 256  # rows newer than the snapshot that make a new one
MAX_LAG_SECONDS = 30.0  # or: the oldest newer row is this old

BUILDS = Counter("opslore_snapshot_builds_total", "semantic index snapshots published", ["kind"])
BUILD_SECONDS = Histogram("opslore_snapshot_build_seconds", "one snapshot build", buckets=(
    0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
LAG_ROWS = Gauge("opslore_snapshot_lag_rows", "rows newer than the newest snapshot, after the last tick (capped "
                 "at REBUILD_ROWS)", ["tenant"])


def memory_tenants(db: Database) -> list[str]:
    """Every tenant that holds memory (names only: `opslore_memory_tenants`)."""
    with db.transaction() as cur:
        cur.execute("SELECT opslore_memory_tenants() AS tenant")
        return [r["tenant"] for r in cur.fetchall()]


@dataclass(frozen=True)
class Pending:
    """What a tick sees of one tenant's model: rows newer than its snapshot (capped) and the oldest one's age."""

    has_snapshot: bool
    newer_rows: int
    oldest_newer_age_s: float
    total_rows: int | None = None  # known only without a snapshot


def should_build(p: Pending) -> bool:
    """Pure: whether a tick builds this tenant's snapshot now."""
    if not p.has_snapshot:
        return (p.total_rows or 0) >= BUILD_FROM
    return p.newer_rows >= REBUILD_ROWS or (p.newer_rows > 0 and p.oldest_newer_age_s >= MAX_LAG_SECONDS)


class SnapshotBuilder:
    def __init__(self, db: Database, store: SnapshotStore, default_model: str, dims: int,
                 on_changed: Callable[[str], None] | None = None) -> None:
        """`on_changed(tenant)`: called for each tenant a tick visits (its memory changed): the process's
        calibrations (`BriefingService.calibrate_stale`)."""
        self.on_changed = on_changed
        self.db = db
        self.store = store
        self.default_model = default_model
        self.dims = dims
        self.watermark = 0  # the highest version_vectors.seq `changed` has seen
        self.behind: set[str] = set()

    def tenants(self) -> list[str]:
        return memory_tenants(self.db)

    def model_of(self, cur: Cursor) -> str:
        cur.execute("SELECT active_model FROM embedding_state")
        row = cur.fetchone()
        return str(row["active_model"]) if row else self.default_model

    def pending(self, cur: Cursor, model: str, meta: SnapshotMeta | None) -> Pending:
        after = meta.seq if meta is not None else 0
        cur.execute("""SELECT count(*) AS n, coalesce(extract(epoch FROM now() - min(created_at)), 0) AS age
                       FROM (SELECT created_at FROM version_vectors WHERE model = %s AND seq > %s
                             ORDER BY seq LIMIT %s) newer""",
                    (model, after, max(REBUILD_ROWS, BUILD_FROM)))
        row = cur.fetchone()
        assert row is not None
        n = int(row["n"])
        return Pending(meta is not None, n, float(row["age"]), None if meta is not None else n)

    def changed(self) -> list[str]:
        """Tenants with vectors past the highest seq seen (all of them at the first call), and the tenants left
        behind by the last tick (rows below a build threshold, or a failed build); advances the watermark."""
        with self.db.transaction() as cur:
            cur.execute("SELECT tenant, top FROM opslore_vector_tenants_since(%s)", (self.watermark,))
            rows = cur.fetchall()
        self.watermark = max([self.watermark, *(int(r["top"]) for r in rows)])
        return sorted({*(r["tenant"] for r in rows), *self.behind})

    def tick(self, tenants: list[str] | None = None, full: bool = False) -> dict[str, int]:
        """One pass over the tenants whose vectors changed (or the given ones); returns counts (for logs and
        tests). An idle system costs one index probe."""
        counts = {"tenants": 0, "built": 0, "failed": 0}
        for tenant in self.changed() if tenants is None else tenants:
            counts["tenants"] += 1
            try:
                published = self.refresh(tenant, full=full)
                if published is not None:
                    counts["built"] += 1
            except Exception:  # one tenant's failure must not stop the others'
                counts["failed"] += 1
                self.behind.add(tenant)
                log.exception("snapshot of tenant %s failed", tenant)
            if self.on_changed is not None:
                try:
                    self.on_changed(tenant)
                except Exception:
                    log.exception("after the snapshot of tenant %s", tenant)
        return counts

    def refresh(self, tenant: str, full: bool = False, force: bool = False) -> SnapshotMeta | None:
        """Builds the tenant's snapshot if `should_build` (or `force`) says so; returns what was published."""
        with self.db.tenant_transaction(tenant) as cur:
            model = self.model_of(cur)
            meta = self.store.newest(tenant, model)
            pending = self.pending(cur, model, meta)
        LAG_ROWS.labels(tenant).set(pending.newer_rows)
        if not (force or should_build(pending)):
            if pending.has_snapshot and pending.newer_rows:  # newer rows wait for MAX_LAG_SECONDS: come back
                self.behind.add(tenant)
            else:  # nothing newer, or a small tenant: its next vector brings it back
                self.behind.discard(tenant)
            return None
        published = self.build(tenant, model, None if full else meta)
        self.behind.discard(tenant)
        return published

    def build(self, tenant: str, model: str, previous: SnapshotMeta | None) -> SnapshotMeta | None:
        """A snapshot of every row of the tenant's `model` vectors: the previous snapshot's graph and the rows newer
        than it, or all rows from PostgreSQL when `previous` is None (or cannot be opened)."""
        start = time.perf_counter()
        base: IndexSnapshot | None = None
        if previous is not None:
            try:
                base = self.store.open(previous)
            except (OSError, ValueError, RuntimeError):
                log.warning("snapshot %s of %s unreadable: full rebuild", previous.seq, tenant)
        with self.db.tenant_transaction(tenant) as cur:
            if base is not None:
                rows = read_rows(cur, model, max(base.meta.seq - REREAD, 0), list(base.meta.recent))
            else:
                rows = read_rows(cur, model, 0, [])
        if not rows and base is not None:
            return None
        if rows and any(len(r[3]) != self.dims for r in rows):
            raise ValueError(f"{model} vectors of {tenant} are not {self.dims}-dimensional")
        if base is not None:
            index = index_for(self.dims)
            index.load(str(self.store.directory(tenant, model) / f"{base.meta.seq:016d}.usearch"))
            old_keys = np.asarray(base.keys)
        else:
            index, old_keys = index_for(self.dims), key_rows([])
        new_keys = key_rows([(seq, family, version) for seq, family, version, _ in rows])
        if rows:
            vectors = np.stack([r[3] for r in rows]).astype(np.float32)
            index.add(np.arange(len(old_keys), len(old_keys) + len(rows), dtype=np.uint64), vectors)
        keys = np.concatenate([old_keys, new_keys])
        seqs = keys["seq"]
        top = int(seqs.max()) if len(seqs) else 0
        meta = SnapshotMeta(tenant=tenant, model=model, dims=self.dims, seq=top, count=len(keys),
                            recent=tuple(sorted(int(s) for s in seqs[seqs > top - REREAD])),
                            built_at=datetime.now(UTC).isoformat())
        self.store.publish(meta, index, keys)
        self.store.prune(tenant, model)
        kind = "incremental" if base is not None else "full"
        BUILDS.labels(kind).inc()
        BUILD_SECONDS.observe(time.perf_counter() - start)
        log.info("snapshot of %s (%s): %d vectors to seq %d, %s, %.1fs", tenant, model, meta.count, meta.seq, kind,
                 time.perf_counter() - start)
        return meta


TICK_JOB = "snapshot-tick"


def run(settings: Settings) -> None:
    """The `opslore index snapshots` process, the API's background owner: an APScheduler job ticking every
    OPSLORE_INDEX_INTERVAL_SECONDS that builds the snapshots of the tenants whose vectors changed and starts their
    stale calibrations (OPSLORE_CALIBRATION_RUNS_IN=worker; with the embedding off, a job visiting every tenant
    each minute does only that); /metrics, /healthz and /readyz (PostgreSQL answers, a tick finished recently) on
    OPSLORE_INDEX_METRICS_PORT."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    from services.briefing.semantic import SemanticIndex, make_embedder, model_key
    from services.briefing.service import BriefingService
    from services.common import logs
    from services.common.metrics_server import Readiness, database_check, serve_metrics

    logs.configure(settings.log_format)
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # a line per tick (or skipped tick) is noise
    embedder = make_embedder(settings.embedding)
    db = Database(settings.database_url, max_size=4)
    db.open()
    store = SnapshotStore(settings.index_dir)
    semantic = SemanticIndex(embedder, VectorIndexes(store)) if embedder is not None else None
    briefing = BriefingService(db, settings, semantic=semantic)
    calibrate = briefing.calibrate_stale if settings.calibration_runs_in == "worker" else None
    interval = settings.index_interval_seconds
    scheduler = BlockingScheduler(timezone="UTC")
    last: list[float] = []
    if embedder is not None:
        builder = SnapshotBuilder(db, store, model_key(embedder), embedder.dims, on_changed=calibrate)

        def tick() -> None:
            counts = builder.tick()
            last[:] = [time.monotonic()]
            if counts["built"] or counts["failed"]:
                log.info("snapshot tick: %s", counts)
    else:
        interval = max(interval, 60.0)

        def tick() -> None:
            for tenant in memory_tenants(db):
                try:
                    if calibrate is not None:
                        calibrate(tenant)
                except Exception:
                    log.exception("calibrations of tenant %s", tenant)
            last[:] = [time.monotonic()]

    scheduler.add_job(tick, "interval", seconds=interval, id=TICK_JOB, next_run_time=datetime.now(UTC),
                      max_instances=1, coalesce=True)

    def ready() -> Readiness:
        age = time.monotonic() - last[0] if last else None
        recent = {"ok": age is not None and age < max(60.0, 10 * interval),
                  "seconds_since_last_tick": None if age is None else round(age, 1)}
        return Readiness({"postgresql": database_check(db), "tick": recent})

    serve_metrics(settings.index_metrics_host, settings.index_metrics_port, ready)
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        briefing.close()
        db.close()
