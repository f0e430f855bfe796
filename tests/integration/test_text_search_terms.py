"""The full-text index holds tenant-qualified terms (migration 0015), against the real PostgreSQL.

`version_search.tsv` stores `<tenant>/<lexeme>` so that one GIN posting list is one tenant's; the candidate
function builds its query from bare lexemes and the transaction's tenant. These tests pin the three things
that could go wrong: quoting of odd lexemes, a tenant's query matching another tenant's terms, and the
briefing's text branch reaching across tenants.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from schemas.api import BriefingRequest, RecordSearchRequest
from services.lexicon.analyzer import analyze
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration

ODD_LEXEMES = ["it's", "back\\slash", "two words", "concept:db_pool_exhausted", "a|b&c", "引号'里", "''"]


@pytest.mark.parametrize("lexeme", ODD_LEXEMES)
def test_a_lexeme_matches_itself_verbatim_and_only_in_its_own_tenant(svc: GovernedServices, lexeme: str) -> None:
    with svc.db.transaction() as cur:
        cur.execute("""SELECT array_to_tsvector(opslore_search_terms('t-a', ARRAY[%(x)s, 'other']))
                                @@ opslore_search_query('t-a', ARRAY[%(x)s]) AS own,
                              array_to_tsvector(opslore_search_terms('t-a', ARRAY[%(x)s]))
                                @@ opslore_search_query('t-b', ARRAY[%(x)s]) AS foreign,
                              array_to_tsvector(opslore_search_terms('t-a', ARRAY['other']))
                                @@ opslore_search_query('t-a', ARRAY[%(x)s]) AS absent""", {"x": lexeme})
        assert cur.fetchone() == {"own": True, "foreign": False, "absent": False}


def test_no_lexemes_is_no_text_query(svc: GovernedServices) -> None:
    with svc.db.transaction() as cur:
        cur.execute("SELECT opslore_search_query('t-a', '{}'::text[]) IS NULL AS none")
        assert cur.fetchone() == {"none": True}


def test_stored_terms_carry_the_rows_tenant(svc: GovernedServices) -> None:
    tenant = f"ts-{uuid.uuid4().hex[:8]}"
    cid = seed_candidate(svc.db, tenant, draft("disk_full", "ledger-db", signal="disk_usage_high",
                                               summary="ledger volume filled with WAL segments"))
    svc.review.approve(reviewer(tenant), cid, note=None, edits=None)
    with svc.db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT lexemes, tsvector_to_array(tsv) AS terms FROM version_search")
        row = cur.fetchone()
    assert row is not None and row["lexemes"]
    assert sorted(row["terms"]) == sorted({f"{tenant}/{x}" for x in row["lexemes"]})


def test_the_text_branch_finds_only_the_callers_tenant(svc: GovernedServices) -> None:
    """Both tenants learned the same words; only text can match (no service, alert or signal in common)."""
    a, b = f"ts-a-{uuid.uuid4().hex[:6]}", f"ts-b-{uuid.uuid4().hex[:6]}"
    fams = {}
    for tenant in (a, b):
        d = draft("throttling", f"render-{tenant}", signal=f"sig_{tenant.replace('-', '_')}",
                  summary="render pods throttled by quuxfrobnication")
        fams[tenant] = str(svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d),
                                              note=None, edits=None).family_id)
    with svc.db.tenant_transaction(a) as cur:
        cur.execute("SELECT family_id::text AS f FROM opslore_briefing_matches("
                    "'{}', '{}', NULL, %s, NULL, 30, 200, now(), NULL)", (analyze("quuxfrobnication"),))
        assert [r["f"] for r in cur.fetchall()] == [fams[a]]
    found = svc.briefing.search(reviewer(a), RecordSearchRequest(query="render pods throttled by quuxfrobnication"))
    assert [str(h.family_id) for h in found] == [fams[a]]
    # the briefing reads the same branch: its causes raise the tenant's own record's cause, and a hint it sends is
    # that record (a one-record tenant, whose next incident may well be new, marks it only where a lead pays)
    answer = svc.briefing.brief(reviewer(a), BriefingRequest(text="render pods throttled by quuxfrobnication"))
    assert answer.causes[0].category == "throttling" and answer.causes[0].probability > answer.causes[0].prior
    assert {str(h.family_id) for h in answer.hints} <= {fams[a]}


def test_the_candidate_function_answers_nothing_without_a_tenant(svc: GovernedServices) -> None:
    tenant = f"ts-{uuid.uuid4().hex[:8]}"
    d = draft("throttling", "render", signal="cpu_throttled", summary="pods throttled by quuxfrobnication")
    svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d), note=None, edits=None)
    with psycopg.connect(svc.db.url) as conn:
        rows = conn.execute("SELECT * FROM opslore_briefing_matches('{render}', '{cpu_throttled}', NULL,"
                            " %s, NULL, 30, 200, now(), NULL)", (analyze("quuxfrobnication"),)).fetchall()
    assert rows == []


def test_the_text_branch_matches_on_the_rare_lexemes_and_ranks_on_all(svc: GovernedServices) -> None:
    """Matched on `zorblax` only (the caller's budget), ranked with `quuxfrob` too: the version with both
    words comes first (ahead of four with `zorblax` alone, whatever their ids), and a version with only the
    unmatched word is no candidate."""
    tenant = f"ts-{uuid.uuid4().hex[:8]}"
    fams = {}
    for name, summary in (*((f"rare{i}", f"pods throttled by zorblax {i}") for i in range(4)),
                          ("both", "pods throttled by zorblax quuxfrob"), ("common", "pods throttled by quuxfrob")):
        d = draft(f"cat_{name}", f"svc-{name}", signal=f"sig_{name}", summary=summary)
        fams[name] = str(svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d),
                                            note=None, edits=None).family_id)
    zorblax, quuxfrob = analyze("zorblax"), analyze("quuxfrob")
    with svc.db.tenant_transaction(tenant) as cur:
        def text_branch(limit: int) -> list[str]:
            cur.execute("SELECT family_id::text AS f FROM opslore_briefing_matches("
                        "'{}', '{}', NULL, %s, NULL, %s, 200, now(), %s)", (zorblax, limit, zorblax + quuxfrob))
            return [r["f"] for r in cur.fetchall()]
        assert sorted(text_branch(30)) == sorted(f for name, f in fams.items() if name != "common")
        assert text_branch(1) == [fams["both"]]
