"""The price's procedure (`replay/worse_cost_fit.py`): the bound on questions made worse, and the contract's bound
held on every spent set in every condition, not only on the pool's total."""

from __future__ import annotations

from replay.worse_cost_fit import Answered, PricePoint, choose, price_point
from services.briefing.causes import NEW

PRIORS = {"disk": 0.5, "cert": 0.3, "dns": 0.2}


def answer(question: str, truth: str, split: str, probabilities: dict[str, float]) -> Answered:
    return Answered(question, "en", truth, probabilities, novelty=0.05, supported=tuple(probabilities), split=split)


def test_the_worst_set_is_the_one_whose_marks_cost_checks() -> None:
    """Set a: a confident, right mark on a cause the base rates check last; set b: the same confidence on a novel
    incident (a wasted check). The pool's total can be below the base rates while set b is above them."""
    right = {"disk": 0.02, "cert": 0.03, "dns": 0.9}
    answered = [answer(f"a{i}", "dns", "a", right) for i in range(3)] + [answer("b0", NEW, "b", right)]
    point = price_point(answered, PRIORS, 0.0)
    assert point.checks_on < point.checks_off
    assert point.worst_set[:2] == ("b", "en") and point.worst_set[2] > point.worst_set[3]
    assert not point.holds_the_bound


def test_choose_skips_a_price_that_lengthens_any_set() -> None:
    def point(price: float, upper: float, on: int, off: int) -> PricePoint:
        return PricePoint(price, 90, 100, upper, upper, 0.0, 0.0, (), ("s", "en", on, off))

    grid = [point(1.0, 0.05, 11, 10), point(2.0, 0.12, 9, 10), point(3.0, 0.08, 10, 10), point(4.0, 0.05, 8, 10)]
    assert choose(grid).worse_cost == 3.0  # 1.0 lengthens a set, 2.0 makes too many worse; 3.0 holds both bounds
    assert choose([point(1.0, 0.2, 11, 10)]).worse_cost == 1.0  # none does: the largest of the grid
