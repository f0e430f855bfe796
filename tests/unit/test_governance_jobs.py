"""The governance jobs are pure: same facts, same proposals; each rule proposes exactly what it says."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from services.governance import jobs as J

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def fam(**kw: object) -> J.Family:
    base: dict[str, object] = dict(
        family_id=uuid.uuid4(), version=1, project="default", created_at=NOW - timedelta(days=10),
        summary="checkout errors", root_cause="connection pool exhausted by slow queries",
        category="db_connection_pool", signals=frozenset({"db_pool_saturation"}), source_incidents=("INC-1",),
        valid_until=None, last_verified_at=NOW - timedelta(days=1), valid_from=NOW - timedelta(days=10),
        last_cited_at=NOW - timedelta(days=1))
    base.update(kw)
    return J.Family(**base)  # type: ignore[arg-type]


def cand(incident: str, category: str = "dns", signals: tuple[str, ...] = ("nxdomain",)) -> J.Candidate:
    return J.Candidate(uuid.uuid4(), "default", incident, category, frozenset(signals), 0.6)


def test_expire_only_past_windows_and_never_permanent() -> None:
    past, future = fam(valid_until=NOW - timedelta(hours=1)), fam(valid_until=NOW + timedelta(days=1))
    permanent = fam(valid_until=NOW - timedelta(hours=1), level="permanent")
    found = J.expire([past, future, permanent], J.Policy(now=NOW))
    assert [p.family_ids for p in found] == [(past.family_id,)]
    assert found[0].change == {"action": "expire"} and found[0].based_on == ((past.family_id, 1),)


def test_stale_asks_for_reverification_and_never_expires_by_age_alone() -> None:
    policy = J.Policy(now=NOW, stale_after_days=90)
    fresh = fam()
    old = fam(last_verified_at=NOW - timedelta(days=100))
    ancient = fam(last_verified_at=NOW - timedelta(days=200))
    actions = {p.family_ids[0]: p.change["action"] for p in J.stale([fresh, old, ancient], policy)}
    assert actions == {old.family_id: "reverify", ancient.family_id: "reverify"}


def test_never_hit_and_low_confidence() -> None:
    policy = J.Policy(now=NOW, never_hit_days=30, min_refutations=2)
    unused = fam(last_cited_at=None, created_at=NOW - timedelta(days=40))
    young = fam(last_cited_at=None, created_at=NOW - timedelta(days=5))
    assert [p.family_ids[0] for p in J.never_hit([unused, young, fam()], policy)] == [unused.family_id]
    thrice, mixed, once = fam(refuted=3), fam(refuted=3, adopted=4), fam(refuted=1)
    found = J.low_confidence([thrice, mixed, once], policy)
    assert [p.family_ids[0] for p in found] == [thrice.family_id] and found[0].change == {"action": "retract"}


def test_duplicates_cluster_and_keep_the_richest_family() -> None:
    a = fam(source_incidents=("INC-1",), created_at=NOW - timedelta(days=9))
    b = fam(source_incidents=("INC-2", "INC-3"), root_cause="the connection pool was exhausted by slow queries")
    c = fam(source_incidents=("INC-4",), category="dns")  # another category: never merged
    d = fam(source_incidents=("INC-5",), root_cause="certificate expired")  # another root cause
    found = J.duplicate([a, b, c, d], J.Policy(now=NOW))
    assert len(found) == 1
    p = found[0]
    assert p.family_ids == (b.family_id, a.family_id) and p.change["keeper"] == str(b.family_id)
    assert set(p.based_on) == {(a.family_id, 1), (b.family_id, 1)} and "INC-1, INC-2, INC-3" in p.reason


def test_records_without_a_category_are_duplicates_only_when_their_root_causes_are_near_identical() -> None:
    cause = "rm -rf ran on the primary's data directory and no backup method had ever been restored"
    wiki = fam(source_incidents=("pm-wiki",), category=None, signals=frozenset(), root_cause=cause)
    export = fam(source_incidents=("pm-export",), category=None, signals=frozenset(), root_cause=cause + " in time")
    ledger = fam(source_incidents=("INC-9",), category="operator_error", signals=frozenset(), root_cause=cause)
    loose = fam(source_incidents=("pm-other",), category=None, signals=frozenset(),
                root_cause="rm -rf ran on the primary's data directory")  # half the words: not the same
    blank = [fam(source_incidents=(f"pm-{i}",), category=None, signals=frozenset(), root_cause=None) for i in (1, 2)]
    found = J.duplicate([wiki, export, ledger, loose, *blank], J.Policy(now=NOW))
    assert len(found) == 1 and set(found[0].family_ids) == {wiki.family_id, export.family_id, ledger.family_id}
    assert "of category operator_error" in found[0].reason
    only_uncategorised = J.duplicate([wiki, export], J.Policy(now=NOW))
    assert "without a category" in only_uncategorised[0].reason
    strict = J.duplicate([wiki, export], J.Policy(now=NOW, uncategorised_similarity=0.99))
    assert strict == []


def test_promote_needs_two_incidents_overlapping_signals_and_no_family() -> None:
    one, two = cand("INC-A", signals=("nxdomain", "x")), cand("INC-B", signals=("nxdomain",))
    unrelated = cand("INC-C", signals=("other",))
    same_incident = cand("INC-A", signals=("nxdomain",))
    found = J.promote([one, two, unrelated], [], J.Policy(now=NOW))
    assert len(found) == 1 and set(found[0].candidate_ids) == {one.candidate_id, two.candidate_id}
    assert found[0].change["confidence"] == 0.65
    assert J.promote([one, same_incident], [], J.Policy(now=NOW)) == []
    covered = fam(category="dns")
    assert J.promote([one, two], [covered], J.Policy(now=NOW)) == []


families = st.lists(st.builds(
    fam, source_incidents=st.lists(st.sampled_from(["I1", "I2", "I3", "I4"]), min_size=1, max_size=3).map(tuple),
    category=st.sampled_from(["db", "dns", None]),
    root_cause=st.sampled_from(["pool exhausted by slow queries", "slow queries exhausted the pool", "cert expired"]),
    signals=st.sets(st.sampled_from(["a", "b", "c"]), max_size=3).map(frozenset),
    refuted=st.integers(0, 5), adopted=st.integers(0, 5),
    valid_until=st.one_of(st.none(), st.sampled_from([NOW - timedelta(days=1), NOW + timedelta(days=1)]))),
    max_size=12)


@settings(max_examples=200, deadline=None)
@given(families)
def test_jobs_are_deterministic_and_every_proposal_is_based_on_what_it_names(fs: list[J.Family]) -> None:
    policy = J.Policy(now=NOW)
    first = J.propose(J.JOBS, fs, [], policy)
    assert first == J.propose(J.JOBS, list(fs), [], policy)
    current = {(f.family_id, f.version) for f in fs}
    for p in first:
        assert set(p.based_on) <= current and {f for f, _ in p.based_on} == set(p.family_ids)
    fingerprints = [p.fingerprint for p in first]
    assert len(fingerprints) == len(set(fingerprints))
    merged = [f for p in first if p.kind == "duplicate" for f in p.family_ids]
    assert len(merged) == len(set(merged))  # a family is in at most one consolidation
