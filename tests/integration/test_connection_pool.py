"""The pool checks a connection on checkout only when it sat idle (`IdleCheck`), against the real PostgreSQL.

A backend killed while its connection sits idle in the pool is found on the next checkout once the connection
has been idle longer than the threshold; within it, the next transaction fails once and the one after gets a
new connection. Either way nothing hangs and the pool heals by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

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


def test_a_just_used_connection_is_handed_out_without_a_round_trip(db: Database, url: str) -> None:
    pid = backend_pid(db)
    kill(url, pid)
    with pytest.raises(psycopg.OperationalError):  # not checked: it was returned a moment ago
        backend_pid(db)
    assert backend_pid(db) != pid  # the broken connection was discarded; the next checkout heals
