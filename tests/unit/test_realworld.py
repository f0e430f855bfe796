"""The real-postmortem corpus keeps its shape and its frozen split, and its scoring counts what it claims to."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from replay import realworld as rw
from replay.baselines import Corpus


def test_the_corpus_is_real_sourced_bilingual_and_split_by_time() -> None:
    pms = rw.load()
    roles = Counter(pm.role for pm in pms)
    assert len(pms) >= 190 and roles["test"] >= 40 and roles["dev"] >= 30
    assert roles["dev_novel"] >= 8 and roles["test_novel"] >= 8
    assert len({pm.cls for pm in pms if pm.role == "history"}) >= 20
    assert sum(1 for pm in pms if pm.lang == "zh") >= 40
    assert all(pm.source.startswith(("http://", "https://")) for pm in pms)
    assert all(pm.symptoms_other.strip() and pm.symptoms_other != pm.symptoms for pm in pms)
    history_classes = {pm.cls for pm in pms if pm.role == "history"}
    for pm in pms:
        if pm.role in ("dev", "test"):
            older = [h.date for h in pms if h.role == "history" and h.cls == pm.cls]
            assert older and max(older) <= pm.date, pm.id  # history is older than every question
        if pm.role == "test":
            assert all(d.date <= pm.date for d in pms if d.role == "dev" and d.cls == pm.cls), pm.id
        if pm.role in ("dev_novel", "test_novel"):
            assert pm.cls not in history_classes, pm.id


def test_the_split_is_frozen_and_reproduces_its_rule() -> None:
    pms = rw.load(excluded=frozenset())  # the rule ran before the excluded organisations left the sets
    split = yaml.safe_load(rw.SPLIT.read_text(encoding="utf-8"))
    first = [pm for pm in pms if pm.id in split["roles"]]
    assert {pm.id: pm.role for pm in first} == rw.make_split(first)
    assert len(rw.load(split=None, excluded=frozenset())) == len(pms)  # every incident has its role in the file


def test_each_fresh_set_reproduces_its_rule_and_never_grows_history() -> None:
    pms = rw.load(excluded=frozenset())
    split = yaml.safe_load(rw.SPLIT.read_text(encoding="utf-8"))
    frozen: dict[str, rw.Role] = dict(split["roles"])
    sets = [(name, (split.get(name) or {}).get("roles") or {}) for name in rw.FRESH_SETS]
    for i, (name, roles) in enumerate(sets):
        later = {pid for _, r in sets[i + 1:] for pid in r}  # a set is what was outside every earlier one then
        assert rw.fresh_roles([pm for pm in pms if pm.id not in later], frozen, name) == roles
        assert not set(roles) & set(frozen)
        frozen |= roles
    history = {pm.cls: pm.date for pm in sorted(rw.history(pms), key=lambda pm: pm.date)}
    for pm in pms:
        if pm.role in rw.FRESH_SETS:
            assert pm.date > history[pm.cls], pm.id
        if pm.role in [f"{name}_novel" for name in rw.FRESH_SETS]:
            assert pm.cls not in history or pm.cls.startswith("other:"), pm.id


def test_fresh_roles_follow_the_history_and_refuse_an_older_question() -> None:
    frozen: dict[str, rw.Role] = {"H1": "history", "Q1": "dev"}
    base = [_pm("H1", "2020-01-01", "a", "history"), _pm("Q1", "2021-01-01", "a", "dev")]
    new = [_pm("F1", "2022-01-01", "a", "history"), _pm("F2", "2019-06-01", "z", "history")]
    assert rw.fresh_roles(base + new, frozen) == {"F1": "fresh", "F2": "fresh_novel"}
    with pytest.raises(ValueError, match="F3"):
        rw.fresh_roles([*base, _pm("F3", "2019-01-01", "a", "history")], frozen)
    later = {**frozen, "F1": "fresh", "F2": "fresh_novel"}  # the second set: only what the first did not take
    newer = [_pm("G1", "2023-01-01", "a", "history"), _pm("G2", "2023-01-01", "y", "history")]
    assert rw.fresh_roles(base + new + newer, later, "fresh2") == {"G1": "fresh2", "G2": "fresh2_novel"}


def test_questions_send_no_root_cause_and_no_class_in_either_language() -> None:
    for pm in rw.load():
        for lang in ("en", "zh"):
            body = str(pm.request(lang))
            assert pm.root_cause not in body and pm.cls not in body
        assert "alert" not in pm.request(text_only=True)


def _pm(i: str, d: str, c: str, r: str) -> rw.Postmortem:
    return rw.Postmortem.model_validate({"id": i, "org": "o", "date": d, "source": "https://x", "class": c,
                                         "role": r, "lang": "en", "alert": "A", "services": [], "signals": [],
                                         "symptoms": "s", "symptoms_other": "症状", "root_cause": "rc"})


def test_scores_and_the_planner_count_what_they_claim() -> None:
    pms = [_pm("H1", "2020-01-01", "a", "history"), _pm("H2", "2020-01-02", "b", "history"),
           _pm("H3", "2020-01-03", "b", "history"),
           _pm("Q1", "2021-01-01", "a", "dev"), _pm("Q2", "2021-01-01", "b", "dev"),
           _pm("N1", "2021-01-01", "z", "dev_novel"), _pm("N2", "2021-01-01", "y", "dev_novel")]
    rankings = {"Q1": rw.Ranking("Q1", [["H1"], ["H2"]], ["a", "b"]),
                "Q2": rw.Ranking("Q2", [["H1"], ["H2"]], ["a", "b"]),
                "N1": rw.Ranking("N1", [], []), "N2": rw.Ranking("N2", [["H2"]], ["b"])}
    asked = rw.questions(pms, "dev")
    sc = rw.score("x", pms, asked, rankings)
    assert (sc.recall_at_1, sc.recall_at_5, sc.mrr, sc.false_hint_rate) == (0.5, 1.0, 0.75, 0.5)
    # memory-off order: b (2 in history), then a; Q1 (a): on 1, off 2; Q2 (b): on 2, off 1; N2: one hinted class
    assert (sc.checks_on, sc.checks_off, sc.worse) == (1 + 2 + 0 + 1, 2 + 1, 2)
    assert rw.plan(["b", "a"], ["a", "a", None], "a") == rw.Plan(checks_on=1, checks_off=2)
    assert rw.plan(["b", "a"], ["a", "b"], None) == rw.Plan(checks_on=2, checks_off=0)


def test_reciprocal_rank_fusion_rewards_agreement() -> None:
    corpus = Corpus(["d1", "d2", "d3"], ["", "", ""])
    fused = rw.rrf(lambda c, r: ["d1", "d2", "d3"], lambda c, r: ["d3", "d2", "d1"])(corpus, {})
    assert fused[0] == "d2" or set(fused[:3]) == {"d1", "d2", "d3"}
    assert rw.rrf(lambda c, r: ["d1"], lambda c, r: ["d1", "d2"])(corpus, {})[0] == "d1"


def test_the_paired_interval_brackets_the_difference_and_narrows_with_more_questions() -> None:
    def system(hits: list[bool]) -> rw.SystemScore:
        ranks = {f"Q{i}": (1 if h else None) for i, h in enumerate(hits)}
        return rw.SystemScore("s", 0, 0, 0, 0, len(hits), 0, 0, 0, 0, per_question=ranks)

    a, b = system([True] * 6 + [False] * 4), system([True] * 4 + [False] * 6)
    iv = rw.paired_interval(a, b)
    assert iv.difference == pytest.approx(0.2) and iv.low < 0.2 < iv.high and iv.low >= -0.2
    assert rw.paired_interval(a, a) == rw.Interval(0.0, 0.0, 0.0)  # the same answers never differ
    wide = rw.paired_interval(system([True, False] * 10), system([False, True] * 10))
    narrow = rw.paired_interval(system([True, False] * 100), system([False, True] * 100))
    assert narrow.high - narrow.low < wide.high - wide.low


def test_fresh_sets_are_appended_in_order_and_earlier_bytes_never_change(tmp_path: Path) -> None:
    split = tmp_path / "split.yaml"
    base = [_pm("H1", "2020-01-01", "a", "history"), _pm("Q1", "2021-01-01", "a", "dev")]
    split.write_text(yaml.safe_dump({"roles": {"H1": "history", "Q1": "dev"}}), encoding="utf-8")
    first = [_pm("F1", "2022-01-01", "a", "history")]
    assert rw.write_fresh(base + first, "c1", split) == {"fresh": 1}
    frozen = split.read_bytes()
    second = [_pm("G1", "2023-01-01", "a", "history"), _pm("G2", "2023-02-01", "z", "history")]
    assert rw.write_fresh(base + first + second, "c2", split) == {"fresh2": 1, "fresh2_novel": 1}
    assert split.read_bytes().startswith(frozen)
    assert rw.frozen_roles(split) == {"H1": "history", "Q1": "dev", "F1": "fresh", "G1": "fresh2",
                                      "G2": "fresh2_novel"}
    with pytest.raises(ValueError, match="nothing to freeze"):
        rw.write_fresh(base + first + second, "c3", split)
    written = base + first + second
    for n, name in enumerate(rw.FRESH_SETS[2:], start=3):  # every later set, once each
        written = [*written, _pm(f"N{n}", f"{2021 + n}-06-01", "a", "history")]
        assert rw.write_fresh(written, f"c{n}", split) == {name: 1}
    with pytest.raises(FileExistsError, match="every fresh set"):
        rw.write_fresh([*written, _pm("X1", "2030-01-01", "a", "history")], "cx", split)


def test_the_outside_checkers_organisations_are_in_no_set() -> None:
    pms = rw.load()
    assert pms and not {pm.org for pm in pms} & rw.EXCLUDED_ORGS
    assert len(rw.load(excluded=frozenset())) - len(pms) == 35


def test_an_event_written_again_under_another_id_or_name_is_caught_before_it_is_frozen() -> None:
    def pm(i: str, d: str, org: str, source: str) -> rw.Postmortem:
        return _pm(i, d, "a", "history").model_copy(update={"org": org, "source": source, "role": None})

    frozen = [pm("OLD-AIRPORT", "2024-06-23", "Airport Authority Hong Kong (AAHK)", "https://news.example/a/1"),
              pm("OLD-PAGE", "2025-04-22", "Actionstep", "https://status.example.com/incidents/9q7"),
              pm("OLD-OTHER", "2026-02-04", "Spare Labs", "https://spare.example/x")]
    roles: dict[str, rw.Role] = {p.id: "fresh" for p in frozen}
    new = [pm("NEW-AIRPORT", "2024-06-23", "Hong Kong Airport Authority", "https://mirror.example/sc/123"),
           pm("NEW-PAGE", "2025-04-23", "Actionstep Pty", "HTTP://WWW.status.example.com/incidents/9q7/"),
           pm("NEW-LATER", "2025-06-01", "Actionstep", "https://status.example.com/incidents/9q7"),
           pm("NEW-UNRELATED", "2026-02-04", "dbt Labs (dbt Cloud)", "https://dbt.example/y")]
    assert rw.likely_duplicates(frozen + new, roles) == [("NEW-AIRPORT", "OLD-AIRPORT"), ("NEW-PAGE", "OLD-PAGE")]
    assert rw.likely_duplicates(frozen, roles) == []  # frozen sets are never judged again
