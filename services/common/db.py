"""PostgreSQL access: a connection pool and the tenant-scoped transaction.

Every read or write of tenant data happens inside `tenant_transaction`, which sets the
transaction-local `opslore.tenant` that the row-level security policies compare against.
The function that opens the transaction owns it: helpers receive a cursor and never commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import set_json_dumps, set_json_loads
from psycopg_pool import ConnectionPool

Cursor = psycopg.Cursor[DictRow]
Row = dict[str, Any]


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


# JSON columns (episodes, candidates, evidence) are on the projector's hot path: orjson, not json.
set_json_dumps(_dumps)
set_json_loads(orjson.loads)


class Database:
    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.pool: ConnectionPool[psycopg.Connection[DictRow]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": dict_row, "autocommit": False},
            connection_class=psycopg.Connection[DictRow],
            open=False,
            # a connection broken by a PostgreSQL restart is found and replaced before it is handed out
            check=ConnectionPool.check_connection,
            timeout=5.0,  # waiting for a connection: fail (503) rather than hang when the database is gone
            reconnect_timeout=0,  # keep trying to reconnect for as long as the database is away
        )

    def open(self) -> None:
        self.pool.open(wait=True, timeout=30)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        """A transaction without tenant scope (system tables only)."""
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def tenant_transaction(self, tenant: str) -> Iterator[Cursor]:
        """One transaction in which RLS shows and accepts only `tenant`'s rows."""
        with self.transaction() as cur:
            set_tenant(cur, tenant)
            yield cur


def set_tenant(cur: Cursor, tenant: str) -> None:
    cur.execute("SELECT set_config('opslore.tenant', %s, true)", (tenant,))


def connect(url: str) -> psycopg.Connection[DictRow]:
    return psycopg.connect(url, row_factory=dict_row)
