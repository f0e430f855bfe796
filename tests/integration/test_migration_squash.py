"""The squash of #31: migrations 0005-0023 no longer carry the function bodies that `schemas/sql` owns, and the
checksums of the texts they had are accepted (`schemas/migrations/accepted_checksums.txt`). A database migrated by
the checkout before the squash, wholly or part of the way, starts with the runner of now without re-running
anything and ends with the same functions and schema as a fresh one; a checksum that is not accepted still stops
the runner. The old texts come from git history (they are not kept as copies)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from services.common.migrate import accepted_checksums, apply_migrations, migration_files, repeatable_files, sha256
from services.common.settings import Settings
from tests.conftest import _with_db, scratch_databases
from tests.integration.schema_catalog import catalog, functions

PRE_SQUASH = "7303b0890140aec5e88793d9a11e3dd9ed6f394a"  # the last commit with the function bodies in 0005-0023
_ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str:
    """Git in this checkout. A clone without the pre-squash commit (a shallow CI checkout) skips the tests that
    need the old texts, saying why; any other git failure fails them."""
    has = subprocess.run(["git", "-C", str(_ROOT), "cat-file", "-e", f"{PRE_SQUASH}^{{commit}}"],
                         capture_output=True, text=True)
    if has.returncode != 0:
        pytest.skip(f"this checkout lacks commit {PRE_SQUASH[:7]} (shallow clone?): the pre-squash migrations "
                    "are read from it")
    done = subprocess.run(["git", "-C", str(_ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"git {' '.join(args)}: {done.stderr.strip()} (this test needs the checkout's history)")
    return done.stdout


def _files_at(commit: str, folder: str) -> list[tuple[str, str]]:
    """The .sql files of `folder` as they were at `commit`: (file name, text), in file-name order."""
    paths = sorted(p for p in _git("ls-tree", "--name-only", commit, f"{folder}/").split() if p.endswith(".sql"))
    return [(Path(p).name, _git("show", f"{commit}:{p}")) for p in paths]


@pytest.fixture(scope="module")
def database(settings: Settings) -> Iterator[Callable[[], str]]:
    """Factory: a new, empty database; returns its owner URL."""
    with scratch_databases(settings) as empty:
        yield lambda: _with_db(settings.owner_database_url, empty())


@pytest.fixture(scope="module")
def fresh(database: Callable[[], str]) -> str:
    url = database()
    apply_migrations(url)
    return url


def _recorded(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return {str(n): str(s) for n, s in conn.execute("SELECT name, sha256 FROM schema_migrations")}


def test_every_accepted_checksum_is_the_text_the_migration_had_before_the_squash() -> None:
    accepted = accepted_checksums()
    old = dict(_files_at(PRE_SQUASH, "schemas/migrations"))
    current = dict(migration_files())
    assert len(accepted) == 13
    for name, digests in accepted.items():
        assert sha256(old[name]) in digests, name
        assert sha256(current[name]) not in digests, name  # the current text needs no entry
    # the migrations the squash did not touch are as they were, byte for byte
    assert {n for n in old if old[n] != current[n]} == set(accepted)


def test_the_history_migrations_define_no_function_that_schemas_sql_owns_but_the_one_a_migration_calls() -> None:
    defining = {name for name, sql in migration_files()[4:23] if "CREATE FUNCTION" in sql or "OR REPLACE FUNC" in sql}
    assert defining == {"0015_briefing_text_search_per_tenant.sql"}  # opslore_search_terms, for its UPDATE
    assert all("opslore_briefing_candidates(" not in sql for name, sql in migration_files()[4:23])


def test_a_database_migrated_before_the_squash_starts_as_it_is_and_matches_a_fresh_one(
        database: Callable[[], str], fresh: str) -> None:
    url = database()
    old_forward = _files_at(PRE_SQUASH, "schemas/migrations")
    old_repeatable = _files_at(PRE_SQUASH, "schemas/sql")
    apply_migrations(url, repeatables=old_repeatable, migrations=old_forward)
    before = _recorded(url)
    assert before == {n: sha256(t) for n, t in old_forward}

    # nothing of the old re-runs; only what came after the squash is applied
    later = [name for name, _ in migration_files() if name >= "0027"]  # the forward ones after the squash
    assert later[:3] == ["0027_briefing_search_old_signatures.sql", "0028_causes_calibration.sql",
                         "0029_vector_watermarks.sql"]
    changed = [name for name, text in repeatable_files() if dict(old_repeatable).get(name) != text]
    assert "opslore_vector_tenants_since.sql" in changed
    assert apply_migrations(url) == [*later, *changed]
    after = _recorded(url)
    assert {n: after[n] for n in before} == before  # the record keeps the checksums of the texts that ran
    assert apply_migrations(url) == []
    assert functions(url) == functions(fresh)
    assert catalog(url) == catalog(fresh)


@pytest.mark.parametrize("upto", ["0014_briefing_search_cached_plan.sql", "0019_briefing_candidates_validity.sql"])
def test_a_database_migrated_part_of_the_way_before_the_squash_ends_like_a_fresh_one(
        database: Callable[[], str], fresh: str, upto: str) -> None:
    """An older signature of the search (0005's tsquery one, 0019's eight arguments) that the old 0015/0020 would
    have dropped goes in 0027; the rest comes from the squashed migrations and the repeatable files."""
    url = database()
    old_forward = [(n, t) for n, t in _files_at(PRE_SQUASH, "schemas/migrations") if n <= upto]
    apply_migrations(url, repeatables=[], migrations=old_forward)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'opslore_briefing_candidates'").fetchone() \
            == (1,)
    applied = apply_migrations(url)
    assert applied[0] > upto and "0027_briefing_search_old_signatures.sql" in applied
    assert functions(url) == functions(fresh)
    assert catalog(url) == catalog(fresh)


@pytest.mark.parametrize("name", ["0024_version_vectors_seq.sql", "0005_briefing_search_function.sql"])
def test_a_checksum_that_is_not_accepted_still_stops_the_runner(fresh: str, name: str) -> None:
    """0024 has no accepted checksum; 0005 has one, and this is not it."""
    with psycopg.connect(fresh, autocommit=True) as conn:
        (recorded,) = conn.execute("SELECT sha256 FROM schema_migrations WHERE name = %s", (name,)).fetchone() or ("",)
        conn.execute("UPDATE schema_migrations SET sha256 = %s WHERE name = %s", (sha256("edited"), name))
        try:
            with pytest.raises(RuntimeError, match=re.escape(f"migration {name} changed after it was applied")):
                apply_migrations(fresh, repeatables=[("opslore_zz_never.sql", "SELECT 1/0;")])
        finally:
            conn.execute("UPDATE schema_migrations SET sha256 = %s WHERE name = %s", (recorded, name))
    assert apply_migrations(fresh) == []
