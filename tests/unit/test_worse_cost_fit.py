"""The procedure behind the shipped price of a longer investigation (`replay/worse_cost_fit.py`), on answers made
up here: the planner's checks, the share of each question's conditions made worse, and the pick from the grid."""

from __future__ import annotations

import pytest

from replay.worse_cost_fit import Answered, PricePoint, choose, choose_cap, forecast, price_point
from services.briefing.causes import NEW

PRIORS = {c: 0.15 for c in "abcdef"}  # even base rates: the base-rate order is a, b, c, d, e, f


def answered(question: str, condition: str, truth: str, e: float) -> Answered:
    """A question whose evidence raised `e` to probability `e` (the rest shared evenly, novelty 0.05)."""
    rest = (0.95 - e) / 5
    return Answered(question, condition, truth, {**{c: rest for c in "abcdf"}, "e": e}, 0.05, ("e",))


def test_a_lead_that_pays_only_on_average_is_priced_out_and_a_likely_one_kept() -> None:
    # q1: e raised to 0.35 but the cause was a (checked first by the base rates): marking e makes it longer
    # q2: e raised to 0.55 and it was e: marking e saves four checks
    asked = [answered("q1", c, "a", 0.35) for c in ("en", "zh")] + [answered("q2", c, "e", 0.55) for c in ("en", "zh")]
    free = price_point(asked, PRIORS, 0.0)
    assert (free.checks_on, free.checks_off) == (2 * 2 + 2 * 1, 2 * 1 + 2 * 5)
    assert free.worse_share == pytest.approx(0.5) and free.recall == pytest.approx(0.5)
    priced = price_point(asked, PRIORS, 3.0)
    assert (priced.checks_on, priced.checks_off) == (2 * 1 + 2 * 1, 2 * 1 + 2 * 5)
    assert priced.worse_share == 0.0 and priced.worse_upper90 == 0.0


def test_a_novel_question_counts_each_mark_as_a_wasted_check() -> None:
    point = price_point([answered("q", "en", NEW, 0.55)], PRIORS, 0.0)
    assert (point.checks_on, point.checks_off, point.evidence_per_novel) == (1, 0, 1.0)


def test_the_pick_is_the_smallest_price_whose_upper_bound_clears_the_target() -> None:
    def point(cost: float, upper: float) -> PricePoint:
        return PricePoint(cost, 0, 1, upper / 2, upper, 0.0, 0.0)

    grid = [point(0.0, 0.4), point(1.0, 0.12), point(2.0, 0.09), point(3.0, 0.05)]
    assert choose(grid, 0.10).worse_cost == 2.0
    assert choose(grid, 0.01).worse_cost == 3.0  # none clears it: the most careful of the grid


def test_the_bound_the_pick_reads_is_the_worse_language_not_their_average() -> None:
    # ten questions; in English four of them are made worse by a lead on e, in Chinese none is (e not raised there)
    asked = [answered(f"q{i}", c, "a", 0.35) for i in range(4) for c in ("en", "en-text-only")]
    asked += [answered(f"q{i}", c, "a", 0.16) for i in range(4) for c in ("zh", "zh-text-only")]
    asked += [answered(f"q{i}", c, "a", 0.16) for i in range(4, 10)
              for c in ("en", "en-text-only", "zh", "zh-text-only")]
    point = price_point(asked, PRIORS, 0.0)
    languages = {lang: (share, upper) for lang, share, upper in point.by_language}
    assert languages["en"][0] == pytest.approx(0.4) and languages["zh"] == (0.0, 0.0)
    assert point.worse_share == pytest.approx(0.2)  # pooled over the four conditions
    assert point.worse_upper90 == pytest.approx(languages["en"][1]) and point.worse_upper90 > 0.4


def test_the_forecast_scores_the_probabilities_against_the_base_rates_and_novelty_s_ranking() -> None:
    """`forecast`, per condition: Brier skill above 0 when the raised cause was the truth, below when it was not;
    novelty's AUC 1 when every novel question had a higher novelty than every recurring one."""
    right = [answered("q1", "en", "e", 0.55), answered("q2", "en", "e", 0.6)]
    wrong = [answered("q1", "zh", "a", 0.55), answered("q2", "zh", "b", 0.6)]
    novel = [Answered("q3", c, NEW, {c2: 0.1 for c2 in "abcdef"}, 0.4, ()) for c in ("en", "zh")]
    got = forecast([*right, *wrong, *novel], PRIORS, 0.1)
    assert got["en"]["questions"] == 3 and got["en"]["brier_skill"] > 0 > got["zh"]["brier_skill"]
    assert got["en"]["novelty_auc"] == 1.0 == got["zh"]["novelty_auc"]
    assert got["en"]["brier_base_rates"] == got["zh"]["brier_base_rates"]


def test_the_worst_set_is_the_one_whose_marks_cost_checks() -> None:
    """Set s1: a likely, right lead on a cause the base rates check late; set s2: the same lead on a novel incident
    (a wasted check). The pool's total is below the base rates while s2 is above them: the price must not hold."""
    asked = [Answered(f"q{i}", "en", "e", {**{c: 0.02 for c in "abcdf"}, "e": 0.85}, 0.05, ("e",), "s1")
             for i in range(3)]
    asked.append(Answered("q9", "en", NEW, {**{c: 0.02 for c in "abcdf"}, "e": 0.85}, 0.05, ("e",), "s2"))
    point = price_point(asked, PRIORS, 0.0)
    assert point.checks_on < point.checks_off
    assert point.worst_set == ("s2", "en", 1, 0) and not point.holds_the_bound


def test_the_pick_skips_a_price_that_lengthens_any_set() -> None:
    def point(cost: float, upper: float, on: int, off: int) -> PricePoint:
        return PricePoint(cost, 90, 100, upper, upper, 0.0, 0.0, (), ("s", "en", on, off))

    grid = [point(1.0, 0.05, 11, 10), point(2.0, 0.12, 9, 10), point(3.0, 0.08, 10, 10), point(4.0, 0.05, 8, 10)]
    assert choose(grid, 0.10).worse_cost == 3.0  # 1.0 lengthens a set, 2.0 makes too many worse; 3.0 holds both
    assert choose([point(1.0, 0.2, 11, 10)], 0.10).worse_cost == 1.0  # none does: the largest of the grid


def test_a_cap_on_the_marks_spares_a_novel_question_the_marks_its_novelty_priced_as_cheap() -> None:
    """Two causes raised on a novel question whose `novelty` says it is not (0.05): the expected-checks rule marks
    both, two wasted checks; capped at one, the more probable alone."""
    p = {**{c: 0.05 for c in "abcd"}, "e": 0.45, "f": 0.3}
    novel = Answered("q", "en", NEW, p, 0.05, ("e", "f"), "s")
    assert price_point([novel], PRIORS, 0.0).checks_on == 2
    assert price_point([novel], PRIORS, 0.0, max_evidence=1).checks_on == 1


def test_the_cap_is_the_one_whose_price_keeps_both_limits_with_the_fewest_checks() -> None:
    def point(cost: float, upper: float, on: int, set_on: int) -> PricePoint:
        return PricePoint(cost, on, 100, upper, upper, 0.0, 0.0, (), ("s", "en", set_on, 10))

    grids = {1: [point(1.0, 0.05, 95, 10), point(2.0, 0.04, 97, 9)],
             2: [point(1.0, 0.05, 92, 10), point(2.0, 0.04, 94, 10)],
             None: [point(1.0, 0.05, 85, 11), point(2.0, 0.04, 88, 11)]}  # never within the bound on set s
    cap, chosen = choose_cap(grids, 0.10)
    assert (cap, chosen.worse_cost, chosen.checks_on) == (2, 1.0, 92)
    assert choose_cap({1: grids[1], 2: grids[2]}, 0.10)[0] == 2
    cap, chosen = choose_cap({None: grids[None], 3: [point(1.0, 0.2, 80, 12), point(2.0, 0.2, 82, 12)]}, 0.10)
    assert (cap, chosen.worse_cost) == (3, 2.0)  # none keeps both: the fewest marks at its highest price


def test_the_price_is_chosen_on_the_folds_the_shipped_classifier_learned_each_out_of_its_own_fold() -> None:
    """The pool is the classifier's price folds, each set once; the shipped classifier learned every fold (its
    document counts the documented training incidents), so the fit must ask each fold of one fitted without it."""
    import json
    from pathlib import Path

    from replay import realworld as rw
    from replay import symptom_fit
    from replay.worse_cost_fit import SPLITS

    flat = [s for fold in symptom_fit.PRICE_FOLDS for s in fold]
    assert list(SPLITS) == flat and len(set(flat)) == len(flat)
    assert all(role in symptom_fit.ROLES for role in symptom_fit.roles_of(tuple(flat)))
    shipped = json.loads(Path(symptom_fit.OUT).read_text(encoding="utf-8"))
    assert shipped["incidents"] == len(symptom_fit.training(rw.load())) and shipped["excluded"] == []


def test_a_fold_classifier_never_sees_the_rows_of_its_fold() -> None:
    import numpy as np

    from replay import realworld as rw
    from replay import symptom_fit

    rng = np.random.default_rng(3)
    words = {"disk": "disk full volume write error", "cert": "certificate expired handshake tls error"}
    real = rw.load()[0]
    incidents, x, y, roles, texts = [], [], [], [], []
    for i in range(40):
        cls = "disk" if i % 2 else "cert"
        role = "fresh7" if i < 10 else "dev"
        incidents.append(real.model_copy(update={"id": f"PM-{i}", "cls": cls, "role": role}))
        x.append(rng.normal(size=8) + (3.0 if cls == "disk" else -3.0))
        y.append(cls)
        roles.append(role)
        texts.append(words[cls])
    data = symptom_fit.Embedded(incidents, np.stack(x), y, roles, texts)
    whole = symptom_fit.fit(data, "test-model")
    fold = symptom_fit.fit(data, "test-model", symptom_fit.roles_of(("fresh7",)))
    assert (whole["incidents"], whole["rows"]) == (40, 40)
    assert (fold["incidents"], fold["rows"]) == (30, 30) and fold["excluded"] == ["fresh7", "fresh7_novel"]
    assert fold["coef"] != whole["coef"]
