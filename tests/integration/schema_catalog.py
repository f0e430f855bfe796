"""What a migrated database holds, read from PostgreSQL's catalog, to compare two databases that reached their
schema by different paths (a fresh one, the long-lived one, one migrated by an older checkout first)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

# every function of ours: signature, owner, grants and the definition PostgreSQL holds
FUNCTIONS = """
SELECT p.oid::regprocedure::text AS signature, pg_get_userbyid(p.proowner) AS owner, p.proacl::text AS acl,
       pg_get_functiondef(p.oid) AS definition
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'public' AND p.proname LIKE 'opslore\\_%'
ORDER BY 1
"""

# everything else the migrations make: relations with their owner, grants, options and row-level security; columns;
# constraints; indexes; policies; triggers (not the public schema's own grants: they are the database's, set by
# whoever created it, deploy/local/postgres.sh or a test)
_CATALOG = {
    "relations": """
        SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner), c.relacl::text, c.reloptions::text,
               c.relrowsecurity, c.relforcerowsecurity
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' ORDER BY 1""",
    "columns": """
        SELECT table_name, ordinal_position, column_name, data_type, is_nullable, column_default, is_identity
        FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2""",
    "constraints": """
        SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid), c.condeferrable, c.condeferred
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = 'public' ORDER BY 1, 2""",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2",
    "policies": """
        SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check
        FROM pg_policies WHERE schemaname = 'public' ORDER BY 1, 2""",
    "triggers": """
        SELECT t.tgrelid::regclass::text, t.tgname, pg_get_triggerdef(t.oid)
        FROM pg_trigger t WHERE NOT t.tgisinternal ORDER BY 1, 2""",
    "extensions": "SELECT extname FROM pg_extension ORDER BY 1",
}


def functions(url: str) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute(FUNCTIONS).fetchall()


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """The schema objects of `url` other than functions (see `functions`), by kind."""
    with psycopg.connect(url) as conn:
        return {kind: conn.execute(sql).fetchall() for kind, sql in _CATALOG.items()}
