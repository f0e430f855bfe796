"""The trade-off curve the causes' basis picks one point of: the m most probable causes as the planner's evidence."""

from __future__ import annotations

from replay.outcome import Asked, checks, tradeoff
from services.briefing.causes import NEW, TenantHistory

# base rates: a (3), b (2), c (1): the base-rate planner checks a, b, c
HISTORY = TenantHistory.of_sequence(["a", "a", "b", "a", "b", "c"])


def _asked(truth: str, causes: list[tuple[str, float, str]]) -> Asked:
    return Asked(question=truth, truth=truth, causes=tuple(causes), novelty=0.1, rest=0.0)


def test_each_point_marks_the_m_most_probable_causes_whatever_their_basis() -> None:
    asked = [
        _asked("c", [("c", 0.5, "evidence"), ("a", 0.3, "prior"), ("b", 0.1, "prior")]),  # c first: 1 check, not 3
        _asked("a", [("b", 0.4, "prior"), ("a", 0.35, "prior"), ("c", 0.15, "prior")]),  # b first: a costs 2, not 1
        _asked(NEW, [("a", 0.5, "prior"), ("b", 0.3, "prior"), ("c", 0.1, "prior")]),  # each marked cause is wasted
    ]
    points = {p.m: p for p in tradeoff(asked, HISTORY, most=3)}
    assert (points[0].checks_on, points[0].checks_off, points[0].worse) == (4, 4, 0)  # the base rates themselves
    assert (points[1].checks_on, points[1].worse, points[1].recall, points[1].novel_checks) == (4, 2, 1, 1)
    assert (points[2].checks_on, points[2].recall, points[2].novel_checks) == (5, 2, 2)
    assert (points[3].checks_on, points[3].recall, points[3].recurrences) == (6, 2, 2)
    # the answer's own point (basis evidence: c alone) is on the curve's m = 1 for the first question
    assert checks(asked[0], ["a", "b", "c"]) == 1


def test_the_ceiling_marks_down_to_the_true_cause_only_where_that_shortens_the_investigation() -> None:
    asked = [
        _asked("c", [("b", 0.4, "prior"), ("c", 0.3, "prior"), ("a", 0.2, "prior")]),  # b, c: 2 checks, not 3
        _asked("a", [("b", 0.4, "prior"), ("a", 0.35, "prior"), ("c", 0.15, "prior")]),  # b, a: 2, not 1: no marks
        _asked("b", [("c", 0.6, "prior"), ("a", 0.3, "prior"), ("b", 0.1, "prior")]),  # b third of the ranking
        _asked(NEW, [("a", 0.5, "prior"), ("b", 0.3, "prior"), ("c", 0.1, "prior")]),  # nothing to mark: 0 checks
    ]
    points = {p.m: p for p in tradeoff(asked, HISTORY, most=3)}
    assert points[0].checks_off == 3 + 1 + 2 + 0
    assert [points[m].ceiling for m in range(4)] == [6, 6, 5, 5]  # b then c (2) beats c's base rank (3) from m = 2
    assert all(p.ceiling <= p.checks_off and p.ceiling <= p.checks_on for p in points.values())
    assert points[2].to_json()["ceiling_ratio"] == round(5 / 6, 3)
