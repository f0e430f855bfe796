"""A tenant's abstention point from its own leave-one-out questions: the planner's checks decide."""

from __future__ import annotations

from services.briefing.calibration import Asked, checks, choose, recurrence_rate


def _tenant(recurring_rel: float, novel_rel: float) -> list[Asked]:
    """Ten recurrences of five categories whose right hint comes first at `recurring_rel` (a wrong one after it
    at 0.1), and five records of categories nobody else has, whose best (wrong) hint scores `novel_rel`."""
    cats = ["a", "b", "c", "d", "e"]
    asked = [Asked(c, ((c, recurring_rel), ("x", 0.1)), recurrence=True) for c in cats * 2]
    asked += [Asked(f"n{i}", (("a", novel_rel),), recurrence=False) for i in range(5)]
    return asked


def test_a_tenant_whose_recurrences_score_high_abstains_between_them_and_its_new_kinds() -> None:
    result = choose(_tenant(0.8, 0.3), records=40, fallback=0.06, recurrence_rate=0.5)
    assert result.status == "calibrated" and (result.recurrences, result.novel) == (10, 5)
    assert 0.3 < result.min_relevance <= 0.8  # the novel ones' hints cost checks; the recurrences' are kept


def test_where_nothing_separates_them_the_lowest_cheapest_point_keeps_recall() -> None:
    result = choose(_tenant(0.3, 0.3), records=40, fallback=0.06, recurrence_rate=0.5)
    assert result.status == "calibrated"
    cheapest = min(c for _, c in result.curve)
    assert result.min_relevance == min(t for t, c in result.curve if c == cheapest)


def test_small_tenants_or_tenants_without_new_kinds_keep_the_shipped_point() -> None:
    assert choose(_tenant(0.8, 0.3), records=10, fallback=0.06, recurrence_rate=0.5).status == "insufficient"
    only_recurrences = [a for a in _tenant(0.8, 0.3) if a.recurrence]
    result = choose(only_recurrences, records=40, fallback=0.06, recurrence_rate=0.5)
    assert (result.status, result.min_relevance) == ("insufficient", 0.06)


def test_checks_follow_the_planner() -> None:
    order = ["b", "a", "c"]
    hit = Asked("a", (("a", 0.5), ("b", 0.4)), recurrence=True)
    assert checks(order, hit, 0.45) == 1 and checks(order, hit, 0.9) == 2  # memory-off: b first, then a
    new = Asked("z", (("a", 0.5), ("b", 0.4)), recurrence=False)
    assert checks(order, new, 0.3) == 2 and checks(order, new, 0.45) == 1 and checks(order, new, 0.6) == 0


def test_the_recurrence_rate_is_the_tenants_own_and_weighs_the_choice() -> None:
    assert recurrence_rate(["a", "b", "a", "a", "c"]) == 2 / 5
    assert recurrence_rate([]) == 0.0
    tenant = _tenant(0.3, 0.3)  # hints cost the new kinds as much as they help the recurrences
    mostly_new = choose(tenant, records=40, fallback=0.06, recurrence_rate=0.1)
    mostly_again = choose(tenant, records=40, fallback=0.06, recurrence_rate=0.9)
    assert mostly_new.min_relevance > 0.3 >= mostly_again.min_relevance  # abstain / answer
