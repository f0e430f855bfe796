"""The pool checks a connection on checkout only when it sat idle (`IdleCheck`), against the real PostgreSQL.

A backend killed while its connection sits idle in the pool is found on the next checkout: once the connection
has been idle longer than the threshold, by a round trip; within it, because the server's goodbye made the socket
readable. A connection that breaks during a transaction fails that transaction, and the next one gets a new
connection. Either way nothing hangs and the pool heals by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from services.common.db import Database

pytestmark = pytest.mark.integration


@pytest.fixture()
def url(fresh_database: Callable[[], str]) -> str:
    return fresh_database()


@pytest.fixture()
def db(url: str) -> Iterator[Database]:
    database = Database(url, min_size=1, max_size=1, check_idle_after=0.3)
    database.open()
    yield database
    database.close()


def backend_pid(db: Database) -> int:
    with db.transaction() as cur:
        cur.execute("SELECT pg_backend_pid() AS pid")
        row = cur.fetchone()
    assert row is not None
    return int(row["pid"])


def kill(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:  # the same role may signal its own backends
        conn.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))


def test_an_idle_connection_is_checked_and_replaced_before_use(db: Database, url: str) -> None:
    pid = backend_pid(db)
    kill(url, pid)
    time.sleep(0.5)  # longer than check_idle_after
    assert backend_pid(db) != pid  # no error: the check found the dead connection and the pool replaced it


def test_a_just_used_connection_is_handed_out_without_a_round_trip(db: Database,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    checks: list[object] = []
    real_check = ConnectionPool.check_connection

    def counted(conn: psycopg.Connection[Any]) -> None:
        checks.append(conn)
        real_check(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    pid = backend_pid(db)  # a new connection: checked
    time.sleep(0.5)
    checks.clear()
    assert backend_pid(db) == pid and len(checks) == 1  # idle longer than the threshold: checked
    for _ in range(3):
        assert backend_pid(db) == pid
    assert len(checks) == 1  # just used, and the server said nothing since: no round trip


def test_a_just_used_connection_the_server_ended_is_replaced_before_use(db: Database, url: str) -> None:
    """A restart or pg_terminate_backend ends a backend with a FATAL message and closes its socket: the socket
    is readable, so the connection is checked (and replaced) however recently it was used: no 503."""
    pid = backend_pid(db)
    kill(url, pid)
    assert backend_pid(db) != pid  # no error


def test_a_transaction_on_a_connection_that_breaks_during_it_fails_and_the_pool_heals(db: Database,
                                                                                     url: str) -> None:
    pid = backend_pid(db)
    with pytest.raises(psycopg.OperationalError), db.transaction() as cur:
        kill(url, pid)
        cur.execute("SELECT 1")
    assert backend_pid(db) != pid


def settings_in(cur: Any) -> tuple[str, str, str]:
    cur.execute("SELECT current_setting('opslore.tenant', true) AS tenant, current_setting('plan_cache_mode') AS plans,"
                " current_setting('synchronous_commit') AS sync")
    row = cur.fetchone()
    assert row is not None
    return row["tenant"], row["plans"], row["sync"]


def test_an_open_tenant_transaction_sets_its_settings_for_itself_only(db: Database) -> None:
    tx = db.open_tenant_transaction("t-plans", durable=False, generic_plans=True)
    assert settings_in(tx.cursor) == ("t-plans", "force_generic_plan", "off")
    tx.send_commit()
    tx.settle()
    with db.transaction() as cur:  # the same (only) connection of the pool, after the commit: all back
        assert settings_in(cur) == ("", "auto", "on")
    tx = db.open_tenant_transaction("t-plans")
    assert settings_in(tx.cursor) == ("t-plans", "auto", "on")
    tx.abandon()
