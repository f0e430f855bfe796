"""One vocabulary: every state enum of the code lists exactly the values its SQL CHECK constraint allows.

Read from the migrated database (not the migration files), so a later migration that widens a
constraint without the enum, or an enum member the database would refuse, fails here.
"""

from __future__ import annotations

import re
from enum import StrEnum

import psycopg
import pytest

from schemas.memory import CandidateState, FamilyState, ProposalState, VersionState
from services.common.settings import Settings

COLUMNS: list[tuple[str, str, type[StrEnum], set[str]]] = [
    ("memory_families", "state", FamilyState, set()),
    ("memory_versions", "state", VersionState, set()),
    ("governance_proposals", "state", ProposalState, set()),
    # a candidate is pending until a review row exists: the column holds only the decisions
    ("candidate_reviews", "decision", CandidateState, {CandidateState.PENDING.value}),
]


def allowed_values(settings: Settings, table: str, column: str) -> set[str]:
    with psycopg.connect(settings.owner_database_url) as conn:
        rows = conn.execute(
            """SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
               WHERE c.contype = 'c' AND c.conrelid = %s::regclass AND a.attname = %s""",
            (table, column),
        ).fetchall()
    assert len(rows) == 1, f"expected one CHECK on {table}.{column}, found {len(rows)}"
    return set(re.findall(r"'([^']+)'::text", rows[0][0]))


@pytest.mark.parametrize(("table", "column", "enum", "derived"), COLUMNS, ids=[f"{t}.{c}" for t, c, _, _ in COLUMNS])
def test_state_enum_matches_check_constraint(settings: Settings, table: str, column: str, enum: type[StrEnum],
                                             derived: set[str]) -> None:
    assert {m.value for m in enum} - derived == allowed_values(settings, table, column)
