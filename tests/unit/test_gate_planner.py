from __future__ import annotations

from replay.gate import CHECKLIST, base_order, harmful, plan, rank_and_checks


def hint(category: str, checks: int = 1, family: str = "f1") -> dict[str, object]:
    return {"root_cause_category": category, "verify_with": [{}] * checks, "family_id": family}


def test_without_hints_the_planner_follows_the_checklist() -> None:
    assert [c for c, _ in plan([])] == CHECKLIST
    assert rank_and_checks(plan([]), "dns") == (CHECKLIST.index("dns") + 1, CHECKLIST.index("dns") + 1)


def test_hinted_categories_come_first_and_cost_their_checks() -> None:
    order = plan([hint("cache", checks=2), hint("dns"), hint("cache")])
    assert order[:2] == [("cache", 2), ("dns", 1)] and len(order) == len(CHECKLIST)
    assert rank_and_checks(order, "dns") == (2, 3)
    assert rank_and_checks(order, "unknown-cause") == (len(CHECKLIST) + 1, len(CHECKLIST) + 3 + 1 - 2)


def test_harmful_hints() -> None:
    assert not harmful([], "dns", {"f1"})
    assert not harmful([hint("dns")], "dns", {"f1"})
    assert harmful([hint("cache"), hint("dns")], "dns", {"f1"})  # wrong above right
    assert harmful([hint("dns", family="retracted")], "dns", {"f1"})  # cites a record not active here


def test_memory_off_follows_the_base_rates_the_answer_states() -> None:
    answer = {"causes": [{"category": "dns", "prior": 0.1}, {"category": "cache", "prior": 0.4}]}
    base = base_order(answer)
    assert base == ["cache", "dns"]
    assert [c for c, _ in plan([], base)][:3] == ["cache", "dns", CHECKLIST[0]]
    assert [c for c, _ in plan([hint("dns")], base)][:2] == ["dns", "cache"]
