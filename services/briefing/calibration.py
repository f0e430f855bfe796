"""The abstention point of one tenant, calibrated from the tenant's own approved history.

Why: how high the relevance of a real recurrence runs, and how high that of an unrelated record, depends on
the tenant (one organisation naming its alerts and signals the same way each time scores its recurrences far
above a corpus of many organisations' incidents), so one threshold fitted on a corpus cannot serve every tenant.

How (`choose`, pure): every sampled approved record is asked as a briefing with its own symptoms, alert,
services and signals, ranked with no threshold, twice (`calibrator`): against the others with its own family
removed (a recurrence, when another record has its root-cause category), and against the others with every
record of its category removed (a new kind of incident, whose right answer is no hint). For each threshold of a
grid, the planner of `replay/realworld.py` counts the checks: memory-off checks the tenant's categories most
frequent first, memory-on the hinted categories first; a recurrence costs the position of its category, a new
kind of incident one check per hinted category. The two means are weighted by the tenant's own recurrence rate
(`recurrence_rate`: how often its past incidents were of a kind it had seen before); the threshold with the
fewest expected checks wins (ties: the lowest, which keeps the most recall). A tenant with fewer than
`MIN_RECORDS` records, fewer than `MIN_NOVEL` new-kind questions or no recurrence is `insufficient` and keeps
the shipped model's point. The hints' order is taken from one ranking at threshold 0 (the category shares among
the kept hints move slightly with the threshold; the approximation is the calibration's, not the briefing's).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

GRID = tuple(round(0.02 * i, 2) for i in range(1, 50))
MIN_RECORDS = 20
MIN_NOVEL = 3
SAMPLE = 200  # records asked per calibration (in family id order): ~45 ms each with the embedding
LIMIT = 5


@dataclass(frozen=True)
class Asked:
    """One leave-one-out question: the held-out record's category and the ranked hints' (category, relevance)."""

    category: str
    hints: tuple[tuple[str | None, float], ...]
    recurrence: bool  # another record has its category


@dataclass(frozen=True)
class Calibration:
    min_relevance: float
    status: Literal["calibrated", "insufficient"]
    records: int  # the tenant's indexed versions when computed
    questions: int
    recurrences: int
    novel: int
    curve: tuple[tuple[float, float], ...]  # (threshold, expected checks per incident)


def recurrence_rate(categories_in_time_order: list[str]) -> float:
    """How often the tenant's incidents were of a kind it had already seen: the share of its records whose
    category an earlier record had (the first of each category was new when it happened)."""
    seen: set[str] = set()
    again = 0
    for c in categories_in_time_order:
        again += c in seen
        seen.add(c)
    return again / len(categories_in_time_order) if categories_in_time_order else 0.0


def checks(order: list[str], asked: Asked, threshold: float) -> int:
    hinted = list(dict.fromkeys(c for c, rel in asked.hints[:LIMIT] if c and rel >= threshold))
    if not asked.recurrence:
        return len(hinted)
    plan = hinted + [c for c in order if c not in hinted]
    return plan.index(asked.category) + 1 if asked.category in plan else len(plan) + 1


def choose(asked: list[Asked], records: int, fallback: float, recurrence_rate: float) -> Calibration:
    """The threshold with the fewest expected planner checks over the tenant's leave-one-out questions (see the
    module): a recurrence's mean checks weighted by `recurrence_rate`, a new kind's by the rest."""
    counts = Counter(a.category for a in asked)
    order = sorted(counts, key=lambda c: (-counts[c], c))
    recurrences = sum(1 for a in asked if a.recurrence)
    novel = len(asked) - recurrences
    if records < MIN_RECORDS or novel < MIN_NOVEL or recurrences == 0:
        return Calibration(fallback, "insufficient", records, len(asked), recurrences, novel, ())

    def expected(t: float) -> float:
        rec = sum(checks(order, a, t) for a in asked if a.recurrence) / recurrences
        new = sum(checks(order, a, t) for a in asked if not a.recurrence) / novel
        return round(recurrence_rate * rec + (1.0 - recurrence_rate) * new, 4)

    curve = tuple((t, expected(t)) for t in GRID)
    best = min(curve, key=lambda point: (point[1], point[0]))
    return Calibration(best[0], "calibrated", records, len(asked), recurrences, novel, curve)
