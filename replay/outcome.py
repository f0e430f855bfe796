"""What the briefing's `causes` are worth to an agent: the planner's checks, Brier skill, top cause, novelty AUC.

The planner (the checkers' and `replay gate`'s): it checks the `basis: evidence` causes in the answer's order, then
the tenant's remaining categories by base rate (most frequent first); a recurrence costs the position of its
class, a novel incident one check per evidence cause. The base-rate planner is the same with no evidence causes.
Brier scores are multi-class over the tenant's categories and the novel outcome: the answer's listed probabilities,
its `rest` spread over the unlisted categories by their base rates, its `novelty`; the base-rate forecaster is
`TenantHistory.priors` of the same history (what the answer's `prior` fields show).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.briefing.causes import NEW, TenantHistory, brier


@dataclass(frozen=True)
class Asked:
    """One question's answer: its true class (NEW: a class the history had not), the answer's causes as
    (category, probability, basis), `novelty`, `rest`, and the classes the hints name in order."""

    question: str
    truth: str
    causes: tuple[tuple[str, float, str], ...]
    novelty: float
    rest: float
    hint_classes: tuple[str | None, ...] = ()
    condition: str = ""

    @classmethod
    def of_answer(cls, question: str, answer: Mapping[str, Any], truth: str, condition: str) -> Asked:
        """From a briefing answer (its `causes`, `novelty`, `rest` and hints)."""
        return cls(question=question, truth=truth,
                   causes=tuple((c["category"], float(c["probability"]), c["basis"]) for c in answer["causes"]),
                   novelty=float(answer["novelty"]), rest=float(answer["rest"]),
                   hint_classes=tuple(h.get("root_cause_category") for h in answer["hints"]), condition=condition)


def evidence_order(a: Asked) -> list[str]:
    return [c for c, _, basis in a.causes if basis == "evidence"]


def checks(a: Asked, base_order: Sequence[str], use_evidence: bool = True) -> int:
    return planned(evidence_order(a) if use_evidence else [], a.truth, base_order)


def top_causes(a: Asked, m: int) -> list[str]:
    """The answer's m most probable causes, whatever their basis (a point of the trade-off curve)."""
    return [c for c, _, _ in sorted(a.causes, key=lambda c: -c[1])[:m]]


def planned(first: Sequence[str], truth: str, base_order: Sequence[str]) -> int:
    """The checkers' planner: `first`, then the base-rate order; a new cause costs one check per `first`."""
    if truth == NEW:
        return len(first)
    order = [*first, *(c for c in base_order if c not in first)]
    return order.index(truth) + 1 if truth in order else len(order)


@dataclass(frozen=True)
class TradeoffPoint:
    """Marking the m most probable causes as evidence, whatever the answer chose: checks against the base rates,
    questions made worse, recurrences whose true cause is marked (the hints' recall, were each marked cause to send
    its best record) and wasted checks on novel questions. `ceiling`: the checks of an oracle that marks the m most
    probable causes, down to the true one, only on the questions where that shortens the investigation, and marks
    nothing elsewhere: the fewest checks any abstention rule over this ranking reaches with no question made worse
    (what bounds the checks is then the ranking, not the rule that picks the marks)."""

    m: int
    checks_on: int
    checks_off: int
    worse: int
    recall: int
    recurrences: int
    novel_checks: int
    ceiling: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"m": self.m, "checks_on": self.checks_on, "checks_off": self.checks_off,
                "checks_ratio": round(self.checks_on / self.checks_off, 3) if self.checks_off else None,
                "worse": self.worse, "recall": self.recall, "recurrences": self.recurrences,
                "novel_checks": self.novel_checks, "ceiling": self.ceiling,
                "ceiling_ratio": round(self.ceiling / self.checks_off, 3) if self.checks_off else None}


def tradeoff(asked: Sequence[Asked], history: TenantHistory, most: int = 5) -> list[TradeoffPoint]:
    """The curve the answer's `basis` picks one point of: m = 0 (the base rates) to `most` causes marked."""
    priors, _ = history.priors()
    order = sorted(priors, key=lambda c: (-priors[c], c))
    points = []
    for m in range(most + 1):
        on = off = worse = recall = novel = ceiling = 0
        for a in asked:
            first = top_causes(a, m)
            c_on, c_off = planned(first, a.truth, order), planned([], a.truth, order)
            on, off, worse = on + c_on, off + c_off, worse + (c_on > c_off)
            recall += a.truth != NEW and a.truth in first
            novel += c_on if a.truth == NEW else 0
            prefix = first[:first.index(a.truth) + 1] if a.truth in first else []
            ceiling += min(c_off, planned(prefix, a.truth, order))
        points.append(TradeoffPoint(m, on, off, worse, recall, sum(a.truth != NEW for a in asked), novel, ceiling))
    return points


def forecast(a: Asked, priors: Mapping[str, float]) -> dict[str, float]:
    """The answer's probability of every category (unlisted ones share `rest` by their base rates)."""
    listed = {c: p for c, p, _ in a.causes}
    unlisted = {c: priors[c] for c in priors if c not in listed}
    mass = sum(unlisted.values())
    return {**listed, **{c: a.rest * v / mass if mass else 0.0 for c, v in unlisted.items()}}


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties half (Mann-Whitney)."""
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


@dataclass
class OutcomeScore:
    name: str
    questions: int
    novel: int
    checks_on: int
    checks_off: int
    worse: int
    better: int
    brier: float
    brier_base: float
    top1: int
    top1_base: int
    in5_base: int
    evidence_on_novel: float
    novelty_auc: float | None
    reliability: list[tuple[float, int]] = field(default_factory=list)  # (probability, happened) per listed cause

    @property
    def checks_ratio(self) -> float:
        return self.checks_on / self.checks_off if self.checks_off else math.inf

    @property
    def brier_skill(self) -> float:
        return 1.0 - self.brier / self.brier_base if self.brier_base else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "questions": self.questions, "novel": self.novel, "checks_on": self.checks_on,
                "checks_off": self.checks_off, "checks_ratio": round(self.checks_ratio, 3), "worse": self.worse,
                "better": self.better, "brier": round(self.brier, 4), "brier_base_rates": round(self.brier_base, 4),
                "brier_skill": round(self.brier_skill, 4), "top1": self.top1, "top1_base_rates": self.top1_base,
                "top5_base_rates": self.in5_base, "evidence_causes_on_novel": round(self.evidence_on_novel, 3),
                "novelty_auc": None if self.novelty_auc is None else round(self.novelty_auc, 3)}


def score(name: str, asked: Sequence[Asked], history: TenantHistory) -> OutcomeScore:
    """Every outcome figure of one system's answers to questions asked against one fixed history."""
    return score_each(name, [(a, history) for a in asked])


def score_each(name: str, asked: Sequence[tuple[Asked, TenantHistory]]) -> OutcomeScore:
    """As `score`, each question against the history it was asked against (a time-ordered replay)."""
    on = off = worse = better = top1 = top1_base = in5 = 0
    b = bb = 0.0
    novel_evidence: list[int] = []
    novelty_pos: list[float] = []
    novelty_neg: list[float] = []
    reliability: list[tuple[float, int]] = []
    for a, history in asked:
        priors, p_new = history.priors()
        order = sorted(priors, key=lambda c: (-priors[c], c))
        c_on, c_off = checks(a, order), checks(a, order, use_evidence=False)
        on, off = on + c_on, off + c_off
        worse += c_on > c_off
        better += c_on < c_off
        p = forecast(a, priors)
        b += brier(p, a.novelty, a.truth)
        bb += brier(priors, p_new, a.truth)
        top = max(p, key=lambda c: (p[c], -order.index(c) if c in order else 0)) if p else None
        top1 += top == a.truth
        top1_base += bool(order) and order[0] == a.truth
        in5 += a.truth in order[:5]
        if a.truth == NEW:
            novel_evidence.append(len(evidence_order(a)))
            novelty_pos.append(a.novelty)
        else:
            novelty_neg.append(a.novelty)
        reliability += [(prob, int(c == a.truth)) for c, prob, _ in a.causes]
        reliability.append((a.novelty, int(a.truth == NEW)))
    n = max(len(asked), 1)
    return OutcomeScore(name=name, questions=len(asked), novel=len(novel_evidence), checks_on=on, checks_off=off,
                        worse=worse, better=better, brier=b / n, brier_base=bb / n, top1=top1, top1_base=top1_base,
                        in5_base=in5,
                        evidence_on_novel=sum(novel_evidence) / len(novel_evidence) if novel_evidence else 0.0,
                        novelty_auc=auc(novelty_pos, novelty_neg), reliability=reliability)


def reliability_bins(pairs: Sequence[tuple[float, int]], bins: int = 10) -> list[dict[str, float]]:
    out = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = [(p, y) for p, y in pairs if lo <= p < hi or (i == bins - 1 and p == 1.0)]
        if inside:
            out.append({"low": lo, "high": hi, "n": len(inside), "mean_probability": sum(p for p, _ in inside) /
                        len(inside), "observed": sum(y for _, y in inside) / len(inside)})
    return out


def reliability_png(series: Mapping[str, Sequence[tuple[float, int]]], path: Path, title: str) -> Path | None:
    """A reliability diagram (one line per series, the diagonal for perfect calibration) as a PNG; None without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated")
    for label, pairs in series.items():
        bins = reliability_bins(pairs)
        ax.plot([b["mean_probability"] for b in bins], [b["observed"] for b in bins], marker="o", label=label)
        for b in bins:
            ax.annotate(str(int(b["n"])), (b["mean_probability"], b["observed"]), fontsize=6,
                        textcoords="offset points", xytext=(3, 3))
    ax.set_xlabel("stated probability")
    ax.set_ylabel("observed frequency")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
