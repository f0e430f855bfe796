"""Schema changes: forward-only migrations, then the repeatable definitions.

Runs as the owner role, under one advisory lock.

1. `schemas/migrations/NNNN_*.sql` (tables, indexes, constraints, data moves): applied in file-name order, each
   once, in one transaction together with its row in `schema_migrations`, so a failed migration leaves nothing
   behind. An applied migration never changes: its checksum is compared on every run, and a difference stops the
   runner, unless `schemas/migrations/accepted_checksums.txt` lists the recorded checksum as an accepted previous
   text of that file (Flyway's "repair", committed: a migration rewritten on purpose, e.g. the squash of #31 that
   took out the function bodies `schemas/sql` owns). Such a database starts as it is: nothing is re-run and its
   record keeps the checksum of the text that ran.
2. `schemas/sql/*.sql` (functions: one file per object, its one current definition): Flyway's repeatable
   migrations. After the forward migrations, each file whose checksum differs from the one recorded in
   `schema_repeatables` (or that has none) is applied, in file-name order, in one transaction with its row. A
   file must therefore be idempotent (`CREATE OR REPLACE`, grants); a change of a function's signature or
   result drops the old one in a forward migration first. Nothing changed: nothing is applied.
"""

from __future__ import annotations

import hashlib
from importlib import resources

import psycopg

_LOCK = 7253001


def _sql_files(folder_name: str) -> list[tuple[str, str]]:
    folder = resources.files("schemas") / folder_name
    files = sorted((p for p in folder.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    return [(p.name, p.read_text(encoding="utf-8")) for p in files]


def migration_files() -> list[tuple[str, str]]:
    """The forward migrations, (file name, text), in the order they apply."""
    return _sql_files("migrations")


def accepted_checksums() -> dict[str, frozenset[str]]:
    """Per migration file, the checksums of previous texts that a database may have recorded instead of the current
    one (`schemas/migrations/accepted_checksums.txt`: `name sha256 why...` a line, `#` comments)."""
    text = (resources.files("schemas") / "migrations" / "accepted_checksums.txt").read_text(encoding="utf-8")
    return parse_accepted(text, {name for name, _ in migration_files()})


def parse_accepted(text: str, migrations: set[str]) -> dict[str, frozenset[str]]:
    """The accepted checksums of `text`; a line that names no migration of `migrations` or has no SHA-256 is an
    error, so that a typo cannot accept anything."""
    accepted: dict[str, set[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) < 3 or fields[0] not in migrations or not _is_sha256(fields[1]):
            raise ValueError(f"accepted_checksums.txt line {number}: want 'migration sha256 why', got {line!r}")
        accepted.setdefault(fields[0], set()).add(fields[1])
    return {name: frozenset(digests) for name, digests in accepted.items()}


def _is_sha256(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def repeatable_files() -> list[tuple[str, str]]:
    """The repeatable definitions of `schemas/sql`, (file name, text), in the order they apply."""
    return _sql_files("sql")


def sha256(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()


def apply_migrations(
    owner_url: str,
    repeatables: list[tuple[str, str]] | None = None,
    migrations: list[tuple[str, str]] | None = None,
) -> list[str]:
    """Apply the missing forward migrations (`migrations`, by default `migration_files()`), then the new or changed
    repeatable files (`repeatables`, by default `repeatable_files()`); return the names applied now, in order.
    The two arguments are for tests that migrate a database as an older checkout would have."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, sha256 text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK,))
        try:
            applied_now = _apply_forward(conn, migration_files() if migrations is None else migrations)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_repeatables (name text PRIMARY KEY, sha256 text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied_now += _apply_repeatable(conn, repeatable_files() if repeatables is None else repeatables)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK,))
    return applied_now


def _apply_forward(conn: psycopg.Connection[tuple[object, ...]], files: list[tuple[str, str]]) -> list[str]:
    applied_now: list[str] = []
    accepted = accepted_checksums()
    done = {str(r[0]): str(r[1]) for r in conn.execute("SELECT name, sha256 FROM schema_migrations")}
    for name, sql in files:
        digest = sha256(sql)
        if name in done:
            if done[name] != digest and done[name] not in accepted.get(name, frozenset()):
                raise RuntimeError(
                    f"migration {name} changed after it was applied (recorded sha256 {done[name]}, file {digest});"
                    " a rewrite on purpose lists the recorded checksum in schemas/migrations/accepted_checksums.txt"
                )
            continue
        with conn.transaction():
            conn.execute(sql.encode())
            conn.execute("INSERT INTO schema_migrations (name, sha256) VALUES (%s, %s)", (name, digest))
        applied_now.append(name)
    return applied_now


def _apply_repeatable(conn: psycopg.Connection[tuple[object, ...]], files: list[tuple[str, str]]) -> list[str]:
    applied_now: list[str] = []
    done = {str(r[0]): str(r[1]) for r in conn.execute("SELECT name, sha256 FROM schema_repeatables")}
    for name, sql in sorted(files):
        digest = sha256(sql)
        if done.get(name) == digest:
            continue
        with conn.transaction():
            conn.execute(sql.encode())
            conn.execute(
                "INSERT INTO schema_repeatables (name, sha256) VALUES (%s, %s) ON CONFLICT (name)"
                " DO UPDATE SET sha256 = excluded.sha256, applied_at = now()",
                (name, digest),
            )
        applied_now.append(name)
    return applied_now
