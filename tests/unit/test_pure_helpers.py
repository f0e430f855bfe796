"""The small pure functions the larger paths rely on: series trends and threshold crossings, live-check
verdicts, the rendered briefing, token estimates, version-content construction and review proposals."""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from schemas.api import CheckView, Hint, Warning_
from schemas.memory import ApprovalEdits, CandidateDraft, EvidenceRef, VersionContent
from schemas.views import Proposal
from services.briefing.render import HEADER, render
from services.briefing.service import token_estimate
from services.collectors.signals import SignalRule, signals_for, summarize, trend
from services.collectors.verify import combine, judge
from services.memory.content import apply_edits, cap_authority, consolidate, merge_into
from services.memory.records import FamilyMatch
from services.review.service import pick_match, proposal_for

NOW = datetime(2026, 11, 30, tzinfo=UTC)
POOL = SignalRule("db_pool_saturation", "pool_pending", ">", 10)


def content(**kw: object) -> VersionContent:
    base: dict[str, object] = dict(memory_type="semantic", summary="pool exhausted", canonical_content="x",
                                   root_cause="slow queries", confidence=0.6, valid_from=NOW)
    base.update(kw)
    return VersionContent(**base)


def test_trend_is_relative_to_the_series_magnitude() -> None:
    assert trend([5.0]) == "flat" and trend([]) == "flat"
    assert trend([100, 101, 100, 102]) == "flat"  # under 5% of the mean
    assert trend([1, 2, 4, 8]) == "rising" and trend([8, 4, 2, 1]) == "falling"


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=2, max_size=30))
def test_trend_is_antisymmetric(values: list[float]) -> None:
    flipped = {"rising": "falling", "falling": "rising", "flat": "flat"}
    assert trend([-v for v in values]) == flipped[trend(values)]


def test_summaries_name_where_a_threshold_was_crossed_and_which_signals_fire() -> None:
    s = summarize({"service": "checkout"}, [2, 3, 15, 30], [POOL])
    assert (s.last, s.minimum, s.maximum, s.trend) == (30, 2, 30, "rising")
    assert s.crossings == ["crossed >10 at point 3/4"] and "service=checkout" in s.describe()
    calm = summarize({}, [1, 2, 1], [POOL])
    assert calm.crossings == [] and signals_for("max(pool_pending)", [calm], [POOL]) == []
    assert signals_for("max(pool_pending)", [calm, s], [POOL]) == ["db_pool_saturation"]
    assert signals_for("rate(http_errors[5m])", [s], [POOL]) == []  # the rule is about another metric


def test_live_check_verdicts() -> None:
    assert judge(["a"], ["a", "b"], had_data=True) == "supported"
    assert judge(["a"], ["b"], had_data=True) == "refuted"
    assert judge(["a"], ["a"], had_data=False) == "inconclusive" and judge([], ["a"], True) == "inconclusive"
    assert combine([]) == "inconclusive"


def hint(**kw: object) -> Hint:
    base: dict[str, object] = dict(
        family_id=uuid.uuid4(), version=1, memory_type="semantic", summary="pool exhausted", root_cause=None,
        confidence=0.7, score=0.9, source_incidents=["INC-1"], evidence=[], valid_until=None, last_verified_at=None,
        warnings=[Warning_(code="history_is_hypothesis", message="a clue"),
                  Warning_(code="stale", message="old")],
        verify_with=[CheckView(source="prometheus", query="max(pool_pending)", expect="db_pool_saturation")])
    base.update(kw)
    return Hint(**base)


def test_render_states_the_principle_once_and_each_hint_compactly() -> None:
    assert render([]).startswith("No relevant past incidents")
    text = render([hint(), hint(summary="cert expired", root_cause="expired certificate")])
    lines = text.splitlines()
    assert lines[0] == HEADER and lines[1].startswith("1. pool exhausted | cause: ? | from INC-1")
    assert "stale: old" in text and "history_is_hypothesis" not in text  # said once, in the header
    assert "check prometheus: max(pool_pending) -> db_pool_saturation" in text and "2. cert expired" in text


def test_token_estimate_counts_cjk_characters_and_words() -> None:
    assert token_estimate("") == 0
    assert token_estimate("数据库连接池耗尽") == 8
    assert token_estimate("pool exhausted by slow queries") == 7  # 5 words x 1.3, rounded up
    assert token_estimate({"a": "b"}) > token_estimate("b")  # JSON punctuation counts
    assert token_estimate("㐀 䶿 一 龥 鿿 ㏿ ꀀ") == 5  # U+3400..U+9FFF only; no words


def _reference_estimate(text: str) -> int:
    """The estimate's definition, as regular expressions over the text."""
    raw = text.encode()
    cjk = len(re.findall(r"[\u3400-\u9fff]", text))
    return math.ceil(cjk + len(re.findall(rb"[A-Za-z0-9_]+", raw)) * 1.3 + raw.count(b'"') / 4)


@given(st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from("a_Z9 \"㐀㏿䶿一鿿ꀀé-"))))
def test_token_estimate_counts_bytes_as_its_regular_expression_definition_does(text: str) -> None:
    assert token_estimate(text) == _reference_estimate(text)


def test_authority_is_capped_by_untrusted_evidence_and_edits_apply() -> None:
    assert cap_authority(content(authority="rule", trust_mix={"untrusted_text": 1})).authority == "clue"
    assert cap_authority(content(authority="background", trust_mix={"untrusted_text": 1})).authority == "background"
    assert cap_authority(content(authority="suggestion", trust_mix={"trusted_tool": 2})).authority == "suggestion"
    edited = apply_edits(content(), ApprovalEdits(summary="reviewer's words", valid_until=NOW))
    assert (edited.summary, edited.valid_until) == ("reviewer's words", NOW)
    assert apply_edits(content(), None) == content()


def test_merging_and_consolidating_keep_every_source() -> None:
    e1 = EvidenceRef(event_id=uuid.uuid4(), incident_id="INC-1", source="prometheus", summary="a", trust="trusted_tool")
    e2 = EvidenceRef(event_id=uuid.uuid4(), incident_id="INC-2", source="logs", summary="b", trust="untrusted_text")
    old = content(source_incidents=["INC-1"], evidence=[e1], signals=["s1"], trust_mix={"trusted_tool": 1})
    new = content(source_incidents=["INC-2"], evidence=[e2], signals=["s2"], trust_mix={"untrusted_text": 1},
                  authority="suggestion")
    merged = merge_into(old, new)
    assert merged.source_incidents == ["INC-1", "INC-2"] and set(merged.signals) == {"s1", "s2"}
    assert merged.trust_mix == {"trusted_tool": 1, "untrusted_text": 1} and merged.authority == "clue"
    both = consolidate(old, [new, old], NOW, confidence=0.9)
    assert both.summary == old.summary and both.source_incidents == ["INC-1", "INC-2"]
    assert [e.event_id for e in both.evidence] == [e1.event_id, e2.event_id] and both.confidence == 0.9


def test_review_proposals() -> None:
    draft = CandidateDraft(summary="s", root_cause="r", root_cause_category="db", services=["a"],
                           signals=["pool"], misleading_signals=["cpu"], source_incidents=["INC-9"],
                           confidence=0.6)
    assert proposal_for(None, draft) == Proposal(kind="new_family")
    family = uuid.uuid4()
    match = FamilyMatch(family_id=family, current_version=3, category="db", services=frozenset({"a"}), summary="old",
                        signals=("pool",), misleading_signals=())
    assert proposal_for(match, draft).kind == "new_version"
    contradicting = replace(match, signals=("cpu",))  # the family relies on a signal this incident found misleading
    out = proposal_for(contradicting, draft)
    assert out.kind == "conflict" and out.contradicting_signals == ["cpu"] and out.current_version == 3


def test_review_matches_the_oldest_family_with_the_category_and_a_shared_service() -> None:
    draft = CandidateDraft(summary="s", root_cause="r", root_cause_category="db", services=["a", "b"],
                           confidence=0.6)
    def fam(category: str, services: set[str]) -> FamilyMatch:
        return FamilyMatch(family_id=uuid.uuid4(), current_version=1, category=category,
                           services=frozenset(services), summary="", signals=(), misleading_signals=())
    other_category, no_shared_service, first, second = fam("dns", {"a"}), fam("db", {"c"}), fam("db", {"b"}), \
        fam("db", {"a"})
    assert pick_match([other_category, no_shared_service, first, second], draft) == first
    assert pick_match([other_category, no_shared_service], draft) is None
    assert pick_match([first], draft.model_copy(update={"root_cause_category": None})) is None
