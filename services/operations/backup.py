"""Backup and restore of a whole opslore installation (`opslore backup DIR`, `opslore restore DIR`).

What is written, and why it is enough:
- `ledger.ndjson`: every committed record of the ledger topic, with its partition, offset, key and value,
  read from the beginning to the end offsets taken at the start. The projection (episodes, candidates,
  misleading signals, feedback counters) is rebuilt from it, so it is not copied.
- `tables/<table>.copy`: the governed tables — what reviewers and the service decided and cannot be
  re-derived (families, versions, audit, reviews, lineage, briefings, alert intake, governance runs and
  proposals, API key hashes) — in PostgreSQL COPY text format, all read in ONE repeatable-read snapshot
  (the per-tenant row-level security is satisfied by switching `opslore.tenant` inside that snapshot).
- `manifest.json`: topic and partition count, migrations applied, the lexical analyzer, each tenant's
  embedding model, row counts and a checksum per governed table and tenant.
Derived indexes (lexical tables, embedding vectors) are rebuilt on restore with the analyzer and models
named in the manifest, which is what `opslore index reindex*` does after a model change anyway.

Restore needs an empty database and no ledger topic of that name: migrate, recreate the topic with the
same partition count and produce every record to its original partition in order, load the governed
tables, project the ledger from offset 0, reindex, then recompute every checksum and compare.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psycopg
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from psycopg import sql

from services.common.settings import Settings

FORMAT = 1
GOVERNED_TABLES = ("memory_families", "memory_versions", "memory_audit", "candidate_reviews", "lineage_edges",
                   "briefings", "alert_intake", "governance_runs", "governance_proposals", "postmortem_imports")
EMBEDDERS = {"hash-ngram": "hash-ngram", "multilingual-e5-small-q4": "e5-small"}  # model name -> setting
KEY_TABLE = "api_keys"  # no row-level security: hashes only, read by the owner role


class RestoreError(RuntimeError):
    """The target is not empty, or the restored data does not match the manifest."""


@dataclass(frozen=True)
class TableSum:
    rows: int
    md5: str


def _owner(settings: Settings) -> psycopg.Connection[Any]:
    return psycopg.connect(settings.owner_database_url)


# ---------------------------------------------------------------- ledger
def _ledger_consumer(settings: Settings) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False,
                         isolation_level="read_committed", consumer_timeout_ms=5000)


def read_ledger(settings: Settings) -> Iterator[dict[str, Any]]:
    """Every committed ledger record up to the end offsets seen at the start, partition by partition."""
    consumer = _ledger_consumer(settings)
    try:
        partitions = [TopicPartition(settings.topic, p) for p in sorted(consumer.partitions_for_topic(settings.topic)
                                                                        or [])]
        ends = consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            while consumer.position(tp) < ends[tp]:
                for rec in consumer.poll(timeout_ms=1000, max_records=1000).get(tp, []):
                    if rec.offset < ends[tp]:
                        yield {"partition": rec.partition, "offset": rec.offset,
                               "key": rec.key.decode() if rec.key else None, "value": rec.value.decode()}
    finally:
        consumer.close()


def write_ledger(settings: Settings, path: Path) -> int:
    """Produce the backed-up records to the (new, empty) topic, each to its original partition, in order."""
    producer = KafkaProducer(bootstrap_servers=settings.kafka_bootstrap, acks="all", enable_idempotence=True,
                             max_in_flight_requests_per_connection=1, linger_ms=5)
    n = 0
    try:
        with path.open("rb") as fh:
            for line in fh:
                rec = orjson.loads(line)
                producer.send(settings.topic, key=rec["key"].encode() if rec["key"] else None,
                              value=rec["value"].encode(), partition=rec["partition"])
                n += 1
        producer.flush(timeout=120)
    finally:
        producer.close()
    return n


# ---------------------------------------------------------------- governed tables
def tenants(conn: psycopg.Connection[Any], ledger_tenants: set[str]) -> list[str]:
    keys = {r[0] for r in conn.execute("SELECT DISTINCT tenant FROM api_keys")}
    return sorted(keys | ledger_tenants)


def _set_tenant(conn: psycopg.Connection[Any], tenant: str) -> None:
    conn.execute("SELECT set_config('opslore.tenant', %s, true)", (tenant,))


def table_sum(conn: psycopg.Connection[Any], table: str) -> TableSum:
    """Rows and an order-independent checksum of what the current tenant setting lets this role see."""
    row = conn.execute(sql.SQL("SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') "
                               "FROM {} t").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return TableSum(int(row[0]), str(row[1]))


def checksums(conn: psycopg.Connection[Any], all_tenants: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {KEY_TABLE: table_sum(conn, KEY_TABLE).__dict__}
    for table in GOVERNED_TABLES:
        per: dict[str, Any] = {}
        for tenant in all_tenants:
            _set_tenant(conn, tenant)
            s = table_sum(conn, table)
            if s.rows:
                per[tenant] = s.__dict__
        out[table] = per
    return out


def _copy_out(conn: psycopg.Connection[Any], table: str, fh: Any) -> None:
    with conn.cursor().copy(sql.SQL("COPY {} TO STDOUT").format(sql.Identifier(table))) as copy:
        for chunk in copy:
            fh.write(chunk)


def _copy_in(conn: psycopg.Connection[Any], table: str, path: Path) -> None:
    """COPY into a temporary table shaped like `table`, then INSERT the rows: PostgreSQL refuses COPY FROM
    into a table under row-level security, and the INSERT lets the policy check every row's tenant."""
    stage = sql.Identifier(f"restore_{table}")
    conn.execute(sql.SQL("CREATE TEMP TABLE {} (LIKE {}) ON COMMIT DROP").format(stage, sql.Identifier(table)))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(stage)) as copy, path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            copy.write(chunk)
    conn.execute(sql.SQL("INSERT INTO {} OVERRIDING SYSTEM VALUE SELECT * FROM {}").format(
        sql.Identifier(table), stage))
    conn.execute(sql.SQL("DROP TABLE {}").format(stage))


def _index_metadata(conn: psycopg.Connection[Any], all_tenants: list[str]) -> dict[str, Any]:
    from services.lexicon.index import ANALYZER

    models: dict[str, str] = {}
    for tenant in all_tenants:
        _set_tenant(conn, tenant)
        row = conn.execute("SELECT active_model FROM embedding_state").fetchone()
        if row:
            models[tenant] = row[0]
    return {"lexical_analyzer": ANALYZER, "embedding_models": models}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- backup
def backup(settings: Settings, target: Path) -> dict[str, Any]:
    """Write a consistent backup into `target` (created; must not hold a backup already)."""
    if (target / "manifest.json").exists():
        raise RestoreError(f"{target} already holds a backup")
    (target / "tables").mkdir(parents=True, exist_ok=True)
    with _owner(settings) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.execute("SET LOCAL TIME ZONE 'UTC'")
        conn.execute("SELECT 1 FROM schema_migrations LIMIT 1")  # the snapshot starts here, before the ledger read
        ledger_tenants, records = _dump_ledger(settings, target / "ledger.ndjson")
        all_tenants = tenants(conn, ledger_tenants)
        files = _dump_tables(conn, target / "tables", all_tenants)
        manifest = {
            "format": FORMAT, "topic": settings.topic, "partitions": _partitions(settings),
            "ledger_records": records, "ledger_sha256": digest(target / "ledger.ndjson"), "tenants": all_tenants,
            "migrations": [list(r) for r in conn.execute("SELECT name, sha256 FROM schema_migrations ORDER BY 1")],
            "index": _index_metadata(conn, all_tenants), "files": files, "checksums": checksums(conn, all_tenants)}
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def _partitions(settings: Settings) -> int:
    consumer = _ledger_consumer(settings)
    try:
        return len(consumer.partitions_for_topic(settings.topic) or [])
    finally:
        consumer.close()


def _dump_ledger(settings: Settings, path: Path) -> tuple[set[str], int]:
    seen: set[str] = set()
    n = 0
    with path.open("wb") as fh:
        for rec in read_ledger(settings):
            fh.write(orjson.dumps(rec) + b"\n")
            seen.add(str(orjson.loads(rec["value"]).get("tenant")))
            n += 1
    return seen, n


def _dump_tables(conn: psycopg.Connection[Any], folder: Path, all_tenants: list[str]) -> dict[str, Any]:
    """One file per table and tenant (row-level security checks each row against the tenant on restore)."""
    files: dict[str, Any] = {KEY_TABLE: f"{KEY_TABLE}.copy"}
    with (folder / files[KEY_TABLE]).open("wb") as fh:
        _copy_out(conn, KEY_TABLE, fh)
    for table in GOVERNED_TABLES:
        files[table] = {}
        for i, tenant in enumerate(all_tenants):
            _set_tenant(conn, tenant)
            name = f"{table}.{i:05d}.copy"
            with (folder / name).open("wb") as fh:
                _copy_out(conn, table, fh)
            if (folder / name).stat().st_size:
                files[table][tenant] = name
            else:
                (folder / name).unlink()
    return files


# ---------------------------------------------------------------- restore
def restore(settings: Settings, source: Path, *, project: Any = None) -> dict[str, Any]:
    """Restore `source` into the empty database and topic that `settings` name; returns a report. `project`
    runs the projector until it has caught up with the restored ledger (the CLI passes one)."""
    from services.common.kafka import ensure_topics
    from services.common.migrate import apply_migrations

    manifest = json.loads((source / "manifest.json").read_text())
    if digest(source / "ledger.ndjson") != manifest["ledger_sha256"]:
        raise RestoreError("ledger.ndjson does not match the manifest's digest")
    apply_migrations(settings.owner_database_url)
    target = settings.model_copy(update={"topic_partitions": manifest["partitions"]})
    with _owner(target) as conn:
        _require_empty(conn, manifest["tenants"])
    if _partitions(target) and any(True for _ in read_ledger(target)):
        raise RestoreError(f"topic {target.topic} is not empty")
    ensure_topics(target)
    produced = write_ledger(target, source / "ledger.ndjson")
    with _owner(target) as conn:
        _load_tables(conn, source / "tables", manifest)
    if project is not None:
        project(target)
    _reindex(target, manifest)
    with _owner(target) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        now = checksums(conn, manifest["tenants"])
    bad = [t for t in manifest["checksums"] if now.get(t) != manifest["checksums"][t]]
    if bad:
        raise RestoreError(f"restored tables differ from the backup: {', '.join(bad)}")
    return {"ledger_records": produced, "tenants": len(manifest["tenants"]), "tables_verified": len(now)}


def _require_empty(conn: psycopg.Connection[Any], all_tenants: list[str]) -> None:
    if table_sum(conn, KEY_TABLE).rows:
        raise RestoreError("the target database already has API keys; restore needs an empty database")
    for tenant in all_tenants:
        _set_tenant(conn, tenant)
        if table_sum(conn, "memory_families").rows or table_sum(conn, "ledger_events").rows:
            raise RestoreError(f"the target database already holds tenant {tenant}")


def _load_tables(conn: psycopg.Connection[Any], folder: Path, manifest: dict[str, Any]) -> None:
    files = manifest["files"]
    _copy_in(conn, KEY_TABLE, folder / files[KEY_TABLE])
    top = 0
    for table in GOVERNED_TABLES:
        for tenant, name in files[table].items():
            _set_tenant(conn, tenant)
            _copy_in(conn, table, folder / name)
            if table == "memory_audit":
                row = conn.execute("SELECT coalesce(max(audit_id), 0) FROM memory_audit").fetchone()
                top = max(top, int(row[0]) if row else 0)
    if top:
        conn.execute("SELECT setval(pg_get_serial_sequence('memory_audit', 'audit_id'), %s)", (top,))
    conn.commit()


def _reindex(settings: Settings, manifest: dict[str, Any]) -> None:
    from services.briefing.semantic import SemanticIndex, make_embedder, reindex
    from services.common.db import Database
    from services.memory.service import reindex_lexical

    db = Database(settings.database_url, max_size=2)
    db.open()
    try:
        for tenant in manifest["tenants"]:
            reindex_lexical(db, tenant)
        for tenant, model in manifest["index"]["embedding_models"].items():  # "name/version/dims"
            embedder = make_embedder(EMBEDDERS.get(model.split("/")[0], "off"), threads=os.cpu_count() or 1)
            if embedder is None:
                raise RestoreError(f"tenant {tenant} served embedding model {model}, which this build cannot load")
            reindex(db, SemanticIndex(embedder), tenant, activate=True)
    finally:
        db.close()
