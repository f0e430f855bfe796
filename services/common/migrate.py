"""Forward-only SQL migrations from `schemas/migrations`, applied in file-name order, each once.

Runs as the owner role. A file is applied in one transaction together with its row in
`schema_migrations`, so a failed migration leaves nothing behind.
"""

from __future__ import annotations

import hashlib
from importlib import resources

import psycopg


def migration_files() -> list[tuple[str, str]]:
    folder = resources.files("schemas") / "migrations"
    files = sorted((p for p in folder.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    return [(p.name, p.read_text(encoding="utf-8")) for p in files]


def apply_migrations(owner_url: str) -> list[str]:
    """Apply what is missing; return the names applied now."""
    applied_now: list[str] = []
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, sha256 text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute("SELECT pg_advisory_lock(7253001)")
        try:
            done = {r[0]: r[1] for r in conn.execute("SELECT name, sha256 FROM schema_migrations")}
            for name, sql in migration_files():
                digest = hashlib.sha256(sql.encode()).hexdigest()
                if name in done:
                    if done[name] != digest:
                        raise RuntimeError(f"migration {name} changed after it was applied")
                    continue
                with conn.transaction():
                    conn.execute(sql.encode())
                    conn.execute(
                        "INSERT INTO schema_migrations (name, sha256) VALUES (%s, %s)", (name, digest)
                    )
                applied_now.append(name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(7253001)")
    return applied_now
