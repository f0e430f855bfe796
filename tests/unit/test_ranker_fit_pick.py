"""The abstention point's choice (`replay.ranker_fit.pick`): checks first, recall where checks cannot tell apart."""

from __future__ import annotations

from replay.ranker_fit import pick


def _outcomes(checks: list[int], found: list[int]) -> dict[str, tuple[int, int]]:
    return {f"Q{i:02d}": (c, f) for i, (c, f) in enumerate(zip(checks, found, strict=True))}


def test_a_checks_saving_within_noise_does_not_buy_recall_away() -> None:
    n = 40
    cheapest = _outcomes([3] * n, [0] * n)  # 120 checks, finds nothing
    close = _outcomes([3] * (n - 2) + [4, 5], [1] * 20 + [0] * 20)  # 3 more checks on 2 questions, finds 20
    assert pick([cheapest, close]) == 1


def test_a_significant_checks_saving_wins_over_recall() -> None:
    n = 40
    cheapest = _outcomes([2] * n, [0] * n)
    costly = _outcomes([4] * n, [1] * n)  # 2 more checks on every question: outside any noise
    assert pick([cheapest, costly]) == 0


def test_ties_go_to_fewer_checks_then_to_the_grid_order() -> None:
    a = _outcomes([3, 3, 3, 3], [1, 1, 0, 0])
    b = _outcomes([3, 3, 3, 4], [1, 1, 0, 0])
    assert pick([b, a]) == 1
    assert pick([a, dict(a)]) == 0
