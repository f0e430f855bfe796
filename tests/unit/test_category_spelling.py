"""One spelling per category and tenant (`memory.categories`), and the drafts and supersedes that use it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from schemas.memory import ApprovalEdits, CandidateDraft
from services.memory.categories import category_key, spelled
from services.memory.content import from_draft, revise, superseding

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = {"DB Connection Pool": 3, "dns": 1}


def draft(category: str | None) -> CandidateDraft:
    return CandidateDraft(summary="checkout errors", root_cause="pool exhausted by slow queries",
                          root_cause_category=category, services=["checkout-api"], confidence=0.8)


@pytest.mark.parametrize(("written", "key"), [
    ("DB Connection Pool", "db_connection_pool"), ("db-connection-pool", "db_connection_pool"),
    ("  db__connection  pool ", "db_connection_pool"), ("ＤＮＳ", "dns"), ("数据库 连接池", "数据库_连接池"),
    ("???", ""), ("Straße", "strasse"),
])
def test_the_key_folds_case_width_and_separators_only(written: str, key: str) -> None:
    assert category_key(written) == key


def test_a_known_spelling_wins_and_a_new_category_keeps_its_own() -> None:
    known = {"DB Connection Pool": 3, "dns": 1}
    assert spelled("db_connection_pool", known) == "DB Connection Pool"
    assert spelled("dns_failure", known) == "dns_failure"  # a different key: a different cause
    assert spelled("DNS", known) == "dns"
    assert spelled(None, known) is None
    assert spelled("???", {"!!!": 4}) == "???"  # no word character: only ever itself


def test_among_spellings_the_commonest_then_the_writers_then_code_point_order() -> None:
    known = {"Disk Full": 1, "disk_full": 5, "disk-full": 5}
    assert spelled("DISK FULL", known) == "disk-full"  # tie at 5: the first in code-point order
    assert spelled("disk_full", known) == "disk_full"  # tie at 5: the writer's own
    assert spelled("Disk Full", known) == "disk-full"  # the writer's is known but less used


def test_an_approval_writes_the_tenants_spelling_into_the_record_and_its_text() -> None:
    content = from_draft(draft("db-connection-pool"), None, T0, KNOWN)
    assert content.root_cause_category == "DB Connection Pool"
    assert "Category: DB Connection Pool" in content.canonical_content
    edited = from_draft(draft("dns"), ApprovalEdits(root_cause_category="DB-CONNECTION-POOL"), T0, KNOWN)
    assert edited.root_cause_category == "DB Connection Pool"  # the reviewer's edit, spelled the tenant's way
    assert from_draft(draft("db-connection-pool"), None, T0).root_cause_category == "db-connection-pool"
    assert revise(draft(None), None, KNOWN).root_cause_category is None


def test_a_supersede_spells_a_new_category_the_tenants_way() -> None:
    current = from_draft(draft("dns"), None, T0, KNOWN)
    new = superseding(current, {"root_cause": "pool too small", "root_cause_category": "DB_CONNECTION_POOL"}, T0,
                      KNOWN)
    assert new.root_cause_category == "DB Connection Pool"
    assert superseding(current, {"summary": "not a pool issue"}, T0, KNOWN).root_cause_category is None
