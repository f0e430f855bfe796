"""Foreign keys on the governed tables (migration 0013): a pointer, version, audit row or review that names
a row which does not exist is refused by the database, whatever code path writes it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from services.common.settings import Settings


@pytest.fixture
def conn(settings: Settings) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(settings.database_url) as c:  # the application role: RLS applies
        c.execute("SELECT set_config('opslore.tenant', 'fk-test', false)")
        yield c


def _family(conn: psycopg.Connection[tuple[object, ...]], current: int) -> uuid.UUID:
    family = uuid.uuid4()
    conn.execute("""INSERT INTO memory_families (tenant, family_id, project, memory_type, state, current_version)
                    VALUES ('fk-test', %s, 'default', 'episodic', 'active', %s)""", (family, current))
    return family


def test_a_current_pointer_to_a_missing_version_fails_at_commit(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    _family(conn, current=1)  # deferred: accepted until commit, as the approval writes family then version
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.commit()


def test_audit_and_review_rows_must_name_existing_rows(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("""INSERT INTO memory_audit (tenant, family_id, action, actor)
                        VALUES ('fk-test', %s, 'approve', 'test')""", (uuid.uuid4(),))
    conn.rollback()
    conn.execute("SELECT set_config('opslore.tenant', 'fk-test', false)")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("""INSERT INTO candidate_reviews (tenant, candidate_id, decision, reviewer, family_id, version)
                        VALUES ('fk-test', %s, 'approved', 'test', %s, 1)""", (uuid.uuid4(), uuid.uuid4()))
