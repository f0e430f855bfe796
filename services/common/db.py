"""PostgreSQL access: a connection pool and the tenant-scoped transaction.

Every read or write of tenant data happens inside `tenant_transaction`, which sets the
transaction-local `opslore.tenant` that the row-level security policies compare against.
The function that opens the transaction owns it: helpers receive a cursor and never commit.
"""

from __future__ import annotations

import select
import time
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any

import orjson
import psycopg
from psycopg import pq
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import set_json_dumps, set_json_loads
from psycopg_pool import ConnectionPool

Cursor = psycopg.Cursor[DictRow]
Row = dict[str, Any]


# JSON columns (episodes, candidates, evidence) are on the projector's hot path: orjson, not json. psycopg sends
# the bytes orjson returns as they are (a str would be encoded again).
set_json_dumps(orjson.dumps)
set_json_loads(orjson.loads)


class IdleCheck:
    """The pool's check on checkout: a round trip (an empty query) before handing out a connection whose last
    transaction ended more than `after` seconds ago, or on which the server has said something since (its socket
    is readable: a backend ended by a restart or `pg_terminate_backend` sends its FATAL error and closes); none
    for one that has just served a transaction and heard nothing. Checking every checkout cost a round trip per
    transaction (two per HTTP briefing: the key lookup and the briefing); checking only by age handed out, for up
    to `after` seconds after a PostgreSQL restart, connections the restart had closed (a 503 each)."""

    def __init__(self, after: float = 1.0) -> None:
        self.after = after
        self._returned: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = weakref.WeakKeyDictionary()

    def used(self, conn: psycopg.Connection[Any]) -> None:
        """`conn` has just finished a transaction without error. (Not the pool's `reset` callback: with one set,
        psycopg_pool returns every connection through a worker thread, a hop per transaction, and a connection
        still queued for return when the pool closes is never closed.)"""
        self._returned[conn] = time.monotonic()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        last = self._returned.get(conn)
        if last is None or time.monotonic() - last > self.after or _server_spoke(conn):
            ConnectionPool.check_connection(conn)


def _server_spoke(conn: psycopg.Connection[Any]) -> bool:
    """Bytes (or end of file) wait on an idle connection's socket: a poll that does not block, no round trip."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True  # closed: let the check find out
    return bool(readable)


class Database:
    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10, check_idle_after: float = 1.0) -> None:
        self.url = url
        self._idle = idle = IdleCheck(check_idle_after)
        self.pool: ConnectionPool[psycopg.Connection[DictRow]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": dict_row, "autocommit": False},
            connection_class=psycopg.Connection[DictRow],
            open=False,
            # a connection broken by a PostgreSQL restart while idle is found and replaced before it is handed out
            check=idle.check,
            timeout=5.0,  # waiting for a connection: fail (503) rather than hang when the database is gone
            reconnect_timeout=0,  # keep trying to reconnect for as long as the database is away
        )

    def open(self) -> None:
        self.pool.open(wait=True, timeout=30)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def transaction(self, pipeline: bool = False) -> Iterator[Cursor]:
        """A transaction without tenant scope (system tables only). `pipeline`: in psycopg's pipeline mode,
        where a statement is sent without waiting for the one before and the client waits only when it reads
        a result (BEGIN goes out with the first statement; a write goes out with COMMIT). An error still aborts
        the transaction; it is raised at the next read or at the commit."""
        with self.pool.connection() as conn:
            with ExitStack() as stack:
                if pipeline:
                    stack.enter_context(conn.pipeline())
                stack.enter_context(conn.transaction())
                yield stack.enter_context(conn.cursor())
            self._idle.used(conn)

    @contextmanager
    def tenant_transaction(self, tenant: str, durable: bool = True, pipeline: bool = False) -> Iterator[Cursor]:
        """One transaction in which RLS shows and accepts only `tenant`'s rows. `durable=False` commits
        without waiting for the WAL flush (`synchronous_commit = off` for this transaction only): still
        atomic, and the commit is visible to every later transaction at once, but a crash of the database
        server within about 3 x `wal_writer_delay` (600 ms by default) can lose it. `pipeline`: as in
        `transaction`."""
        with self.transaction(pipeline) as cur:
            set_tenant(cur, tenant, durable)
            yield cur

    def open_tenant_transaction(self, tenant: str, durable: bool = True,
                                generic_plans: bool = False) -> OpenTransaction:
        """`tenant_transaction`, in pipeline mode, for a caller that settles it later (`OpenTransaction`);
        `generic_plans`: see `set_tenant`."""
        return OpenTransaction(self, tenant, durable, generic_plans)


class OpenTransaction:
    """A tenant transaction in pipeline mode whose outcome is read later, possibly on another thread.

    For a caller whose answer must not wait for its commit (the briefing, which records what it answered):
    `send_commit` puts COMMIT on the wire after the transaction's statements and returns without waiting;
    `settle` then reads every result, raises the first error (the transaction is then rolled back) and returns
    the connection to the pool. The server executes COMMIT as it receives it, so once `send_commit` returned,
    the end of the client process does not undo the transaction. Without `send_commit`, `settle` rolls back.
    One thread at a time uses it: the caller until it hands it over, then the settling thread."""

    def __init__(self, db: Database, tenant: str, durable: bool = True, generic_plans: bool = False) -> None:
        self._db = db
        self.conn = db.pool.getconn()
        try:
            self._pipeline = self.conn.pipeline()
            self._pipeline.__enter__()
        except BaseException:
            db.pool.putconn(self.conn)  # broken: the pool discards it
            raise
        self.cursor = self.conn.cursor()
        self._committing = False
        try:
            set_tenant(self.cursor, tenant, durable, generic_plans)  # psycopg sends BEGIN before it (not autocommit)
        except BaseException:
            self.abandon()
            raise

    def send_commit(self) -> None:
        self.cursor.execute("COMMIT")
        self._committing = True

    def settle(self) -> None:
        ok = False
        try:
            self._pipeline.__exit__(None, None, None)  # Sync, then every pending result; raises the first error
            ok = self._committing and self.conn.info.transaction_status == pq.TransactionStatus.IDLE
        finally:
            self._release(ok)

    def abandon(self) -> None:
        """After an error before `send_commit`: roll back and return the connection."""
        try:
            with suppress(psycopg.Error):  # the caller is already raising the error that made it give up
                self._pipeline.__exit__(None, None, None)
        finally:
            self._release(False)

    def _release(self, committed: bool) -> None:
        if not committed and not self.conn.closed:
            with suppress(psycopg.Error):  # broken: the pool discards it
                self.conn.rollback()
        if committed:
            self._db._idle.used(self.conn)
        self._db.pool.putconn(self.conn)


def set_tenant(cur: Cursor, tenant: str, durable: bool = True, generic_plans: bool = False) -> None:
    """The transaction's tenant, and its settings, in one statement. `durable`: see `tenant_transaction`.
    `generic_plans`: `plan_cache_mode = force_generic_plan` for this transaction only, so that its prepared
    statements are planned once per connection rather than at every execution: for a read whose statements are
    few and whose plans do not depend on their arguments (the briefing's; PostgreSQL planned the corpus statistics'
    `lexeme = ANY($1)` again at every bind, 0.37 ms)."""
    settings = ["set_config('opslore.tenant', %s, true)"]
    if not durable:
        settings.append("set_config('synchronous_commit', 'off', true)")
    if generic_plans:
        settings.append("set_config('plan_cache_mode', 'force_generic_plan', true)")
    cur.execute(f"SELECT {', '.join(settings)}", (tenant,))


def connect(url: str) -> psycopg.Connection[DictRow]:
    return psycopg.connect(url, row_factory=dict_row)
