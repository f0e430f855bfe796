"""Which of a question's selective lexemes the briefing's text branch matches on (pure)."""

from __future__ import annotations

from services.briefing.retrieval import text_match_lexemes
from services.lexicon.index import CorpusStats


def stats(df: dict[str, int]) -> CorpusStats:
    return CorpusStats(docs=100_000, avg_length=50.0, df=df)


def test_a_small_tenant_matches_on_every_lexeme() -> None:
    s = stats({"payout": 3, "bank": 12, "timeout": 40})
    assert text_match_lexemes(s, ["payout", "bank", "timeout"]) == ["payout", "bank", "timeout"]


def test_the_rarest_lexemes_that_reach_the_budget_are_matched_and_no_more() -> None:
    s = stats({"payout": 150, "bank": 300, "timeout": 2_000, "error": 5_000})
    assert text_match_lexemes(s, ["payout", "bank", "timeout", "error"], budget=400) == ["payout", "bank"]
    assert text_match_lexemes(s, ["payout", "bank", "timeout", "error"], budget=450) == ["payout", "bank"]
    assert text_match_lexemes(s, ["payout", "bank", "timeout", "error"], budget=451) == \
        ["payout", "bank", "timeout"]


def test_the_rarest_lexeme_is_matched_even_when_it_alone_passes_the_budget() -> None:
    assert text_match_lexemes(stats({"timeout": 2_000, "error": 5_000}), ["timeout", "error"], budget=400) == \
        ["timeout"]
    assert text_match_lexemes(stats({}), []) == []
