"""The repeatable definitions of `schemas/sql` (Flyway's repeatable migrations, applied by
`services.common.migrate` after the forward migrations): a fresh database and the long-lived one that the forward
migrations reached one by one hold the same functions, defined as the files say, and the same tables, indexes,
policies and grants; running again applies nothing;
a changed file is applied again, and only that file."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from services.common.migrate import apply_migrations, migration_files, repeatable_files, sha256
from services.common.settings import Settings
from tests.conftest import _drop_database, _with_db
from tests.integration.schema_catalog import catalog, functions


@dataclass(frozen=True)
class FreshDatabase:
    owner_url: str
    applied: list[str]


@pytest.fixture(scope="module")
def fresh(settings: Settings) -> Iterator[FreshDatabase]:
    name = f"opslore_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = _with_db(settings.owner_database_url, name)
        yield FreshDatabase(url, apply_migrations(url))
    finally:
        with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
            _drop_database(conn, name)


def _recorded(url: str) -> list[tuple[str, str, Any]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT name, sha256, applied_at FROM schema_repeatables ORDER BY name").fetchall()


def test_a_fresh_database_applies_forward_then_repeatable_in_file_name_order(fresh: FreshDatabase) -> None:
    forward = [n for n, _ in migration_files()]
    repeatable = [n for n, _ in repeatable_files()]
    assert fresh.applied == forward + repeatable
    assert repeatable == sorted(repeatable) and len(repeatable) >= 12
    assert [(n, s) for n, s, _ in _recorded(fresh.owner_url)] == [(n, sha256(t)) for n, t in repeatable_files()]


def test_every_function_has_one_file_and_a_fresh_database_matches_the_long_lived_one(
        fresh: FreshDatabase, settings: Settings) -> None:
    defined = {m.group(1) for _, sql in repeatable_files()
               for m in re.finditer(r"CREATE OR REPLACE FUNCTION (opslore_\w+)\(", sql)}
    assert {name for name, _ in repeatable_files()} == {f"{f}.sql" for f in defined}  # one file per function
    fresh_functions = functions(fresh.owner_url)
    assert {f["signature"].split("(")[0] for f in fresh_functions} == defined
    assert "opslore_briefing_candidates" not in {f["signature"].split("(")[0] for f in fresh_functions}
    search = next(f for f in fresh_functions if f["signature"].startswith("opslore_briefing_matches("))
    assert search["owner"] == "opslore_search" and "SECURITY DEFINER" in search["definition"]
    assert search["acl"] == "{opslore_search=X/opslore_search,opslore_app=X/opslore_search}"
    # the database the suite runs on reached the same state through every migration, one at a time (most of them
    # as they were before the squash of #31, which took the function bodies out of 0005-0023)
    assert functions(settings.owner_database_url) == fresh_functions


def test_a_fresh_database_has_the_long_lived_ones_tables_indexes_policies_and_grants(
        fresh: FreshDatabase, settings: Settings) -> None:
    """The squash took function bodies, their owners and grants out of history migrations and left the table
    grants, the role check and the index and data moves: everything but the functions is the same as well."""
    fresh_catalog = catalog(fresh.owner_url)
    assert len(fresh_catalog["relations"]) > 40 and len(fresh_catalog["policies"]) >= 15
    long_lived = catalog(settings.owner_database_url)
    assert long_lived == fresh_catalog


def test_running_again_applies_nothing(fresh: FreshDatabase) -> None:
    before = _recorded(fresh.owner_url)
    defined = functions(fresh.owner_url)
    assert apply_migrations(fresh.owner_url) == []
    assert _recorded(fresh.owner_url) == before  # not even applied_at moved
    assert functions(fresh.owner_url) == defined


def test_a_changed_file_is_applied_again_and_only_it(fresh: FreshDatabase) -> None:
    files = repeatable_files()
    original = dict(files)["opslore_search_terms.sql"]
    changed = original.replace("p_tenant || '/' || x", "p_tenant || ':' || x")
    assert changed != original
    edited = [(n, changed if n == "opslore_search_terms.sql" else t) for n, t in files]

    def terms() -> list[str]:
        with psycopg.connect(fresh.owner_url) as conn:
            row = conn.execute("SELECT opslore_search_terms('t-a', ARRAY['disk'])").fetchone()
            assert row is not None
            return list(row[0])

    assert terms() == ["t-a/disk"]
    assert apply_migrations(fresh.owner_url, edited) == ["opslore_search_terms.sql"]
    assert terms() == ["t-a:disk"]
    assert dict((n, s) for n, s, _ in _recorded(fresh.owner_url))["opslore_search_terms.sql"] == sha256(changed)
    assert apply_migrations(fresh.owner_url, edited) == []
    assert apply_migrations(fresh.owner_url) == ["opslore_search_terms.sql"]  # the file as it is, again
    assert terms() == ["t-a/disk"]
