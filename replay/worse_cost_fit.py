"""Choose the shipped price of a longer investigation: the documented procedure behind
`services/briefing/data/worse_cost.json`.

What it is: `causes.choose_evidence` marks the causes whose checking first lowers the planner's expected checks plus
`worse_cost` times the probability that the marks make the question longer than the base-rate order would. With it
0 (the rule before), the marks paid on average by a few large wins and made 32-45% of the questions longer on three
fresh sets; an agent follows a lead, and #38 asks for at most 10% of the questions made worse. The price is a
decision about the answer, not a model parameter: the probabilities do not depend on it, so the procedure asks the
live stack once and replays the decision rule over the answers for every price of the grid.

1. The questions: the cross-organisation sets that are spent (asked once each, reported) and that the causes model was
   never fitted on (`SPLITS`, the symptom classifier's `PRICE_FOLDS`: fresh7-9, from 2026-12-04 fresh16-18, and from
   2026-12-05 fresh19-21, from the eighteenth session fresh30-32, from the nineteenth fresh33-35, and from the
   twentieth fresh36-38 (a sixth fold), from the twenty-first fresh39-41 (a seventh) and from the twenty-third
   fresh42-43 (an eighth) and fresh44-45 (a ninth), from the twenty-fourth fresh46 (a tenth) and fresh47 (an
   eleventh), their novel parts included), each in the four conditions of `replay realworld` (English and Chinese,
   with and without alert and signals), against a fresh tenant that learned the corpus's history through the live
   stack, as `replay realworld` does. The shipped symptom classifier learned these sets too (since the twentieth
   session), so each fold is answered in process (`cross_fitted`: the live stack's code, `BriefingService`, whose
   answers equal the API's to the last digit) by a service given a classifier fitted without that fold, with the
   tenant's causes model calibrated again through it.
2. Each answer with `explain`: every category's probability, `novelty` and the causes with records behind them; the
   base rates are the history's (`TenantHistory.priors`).
3. For each price of `GRID`, the planner's checks against the base-rate planner's and, per language, per question the
   share of its two conditions made longer and the one-sided 90% upper bound of the mean of that share over the
   questions (a question's conditions are one cluster: they are not independent draws).
4. The price shipped is the smallest of the grid whose upper bound is at most `TARGET_WORSE` in each language (#38
   asks for at most 10% of the questions made worse in English and in Chinese, not on their average) and that holds
   the contract's bound on every set of the pool in every condition (`PricePoint.holds_the_bound`): memory must not
   make the planner slower than the base rates, and #38 says so of every set, not of the pool's total. (With
   fresh33-34 added, 765 questions, the price stayed 5.0: 0.870x, 5.7% made worse, fresh32 in English still the
   binding set. Then fresh35's first run at 5.0 needed 247 checks against 246 in Chinese; with it in the pool, 799
   questions, the rule chooses 6.5: 0.889x, 4.4% made worse. Cross-fitted (fold classifiers) at 6.5: 0.888x, 3.7%
   made worse. Then fresh36-37's first runs at 6.5 held the bound, 0.95-0.995x; with them as a sixth fold, 867
   questions, the rule chooses 5.0: 0.882x, 6.1% made worse, fresh37 in English without alert and signals at 190
   against 190; at 8.0 fresh19 breaks it, 508 against 505. The bound is not monotone in the price on a set this
   small: at 8.0 fresh35 in English without alert and signals needs 247 against 246 again. Then fresh38's first
   run at 5.0 held it, 0.94-0.98x; with it in the sixth fold, 908 questions, fresh31 in Chinese needs 353 checks
   against 351 from 5.0 to 7.0 (its fold's classifier now learned fresh38), and the rule chooses 7.5: 0.902x, 3.4%
   made worse, fresh32 in Chinese without alert and signals at 336 against 336.) (Added on 2026-12-05 with
   fresh30-32 in the pool, after fresh32's first run needed 341 checks against 336 in English at 4.0; on the nine
   older sets alone the rule changes nothing, every set at most 0.95x.) (Until 2026-12-04 the bound pooled the
   languages, on fresh7-9 alone: 2.5, and the first runs of fresh16-18 then made 8-13% of the English questions
   worse, against 2-8% of the Chinese. On fresh7-9 and fresh16-18 the bound chose 3.0; the first runs of fresh19-21
   then made 12-16% of the English questions worse again, and the later sets are harder: at 3.0 their pooled checks
   were 0.95x against the older pool's 0.84x. From 2026-12-05 the pool holds all nine spent sets the fits never saw,
   518 questions.)
5. With the price, the most marks on one question (`CAPS`: 1, 2, 3 or none; `choose_cap`): each cap's price by the
   rule above, and of the caps whose price keeps both limits the one needing the fewest checks (a tie: fewer marks);
   when none does, one mark at the grid's highest price. Added in the twenty-first session: fresh39's first run at
   7.5 broke the bound in English by one check, one novel question marked four times at `novelty` 0.04, and with
   fresh39 in the pool (946 questions) no price of the uncapped rule up to 20 kept the bound on every set (at 8.0
   fresh37 in English without alert and signals needs 192 against 190; at 20, fresh34 in Chinese 297 against 295:
   the marks the price cannot refuse, a cause made more likely than not, remain). Capped at two the rule chooses 5.5:
   0.899x, 5.8% made worse (upper bound 8.4%), every set within the bound; capped at one, 7.5: 0.920x. Then fresh40's
   first run at 5.5 held it, 0.72-0.73x; with it in the seventh fold, 961 questions, capped at two the rule chooses
   5.0: 0.887x, 6.5% made worse (upper bound 9.1%), fresh31 in Chinese without alert and signals at 351 against 351;
   capped at three, 6.0: 0.892x; at one, 6.5: 0.912x; uncapped, no price of the grid (up to 8) holds.
   Then fresh41's first run at 5.0 broke the bound in all four conditions by 3-4 checks (wrong marks on recurrences,
   none on its novel questions); with it in the seventh fold, 1,003 questions, no cap at any price of the grid keeps
   fresh41 within it (in English without alert and signals 251-254 against 246: wrong marks at 0.5-0.9, which no price
   up to 8 outweighs), and the rule falls back to one mark at 8.0: 0.922x, 3.6% made worse (upper bound 6.3%).
   With fresh42-43 in an eighth fold (1,078 questions; both kept the bound in their first runs at 8.0, one mark),
   fresh41 still breaks every cap (252-260 against 246), and the rule again falls back to one mark at 8.0: 0.922x,
   3.5% made worse (upper bound 6.0%), 0.05 evidence causes per novel question. With fresh44-45 in a ninth fold
   (1,150 questions; fresh45's first run at 8.0 broke the bound in English by two checks), fresh41 still breaks every
   cap (250-253 against 246): one mark at 8.0 again, 0.920x, 3.5% made worse (upper bound 5.9%). With fresh46 in a
   tenth fold (1,189 questions; its first run at 8.0 kept the bound, 0.96x), fresh41 still breaks every cap (251-257
   against 246): one mark at 8.0 again, 0.926x, 3.2% made worse (upper bound 5.4%), 0.05 evidence causes per novel
   question. With fresh47 in an eleventh fold (1,244 questions; its first run at 8.0 kept the bound, 0.99x and 0.98x),
   fresh41 still breaks every cap (250-256 against 246): one mark at 8.0 again, 0.927x, 3.3% made worse (upper bound
   5.3%), 0.05 evidence causes per novel question.
Beside the grid, `forecast`: per condition, the answers' Brier skill against the base rates and novelty's AUC, at no
price (a second look on spent sets, for choosing between designs of the probabilities, never a held-out figure).
The tenant's guard (`causes.evidence_pays`) still judges its evidence: the expected-checks rule must show it carries
information, and the answer at the price in force must not lengthen the tenant's newest lived questions; a tenant
that fails either answers with its base rates whatever the price. A tenant too young to judge answers at the same
price (`CausesCalibrator.priced`).
"""

from __future__ import annotations

import json
import math
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay import realworld as rw
from replay import symptom_fit
from replay.outcome import auc, planned
from schemas.api import BriefingRequest
from services.briefing import causes, symptoms
from services.briefing.causes import NEW, TenantHistory
from services.briefing.embedding import MultilingualE5Embedder
from services.briefing.semantic import SemanticIndex
from services.briefing.service import BriefingService
from services.cli.client import OpsloreClient
from services.common.auth import Principal
from services.common.db import Database
from services.common.settings import Settings

OUT = Path(__file__).resolve().parents[1] / "services" / "briefing" / "data" / "worse_cost.json"
SPLITS: tuple[rw.Split, ...] = tuple(split for fold in symptom_fit.PRICE_FOLDS for split in fold)
GRID = tuple(0.5 * i for i in range(17))  # 0, 0.5, ... 8 checks
CAPS: tuple[int | None, ...] = (1, 2, 3, None)  # the most marks on one question (`choose_evidence`'s max_evidence)
TARGET_WORSE = 0.10
Z90 = 1.2816  # one-sided 90% (the normal's: over a hundred questions)


@dataclass(frozen=True)
class Answered:
    """One question asked in one condition: its true class (NEW when the history lacks it) and what the causes
    model said (every category's probability, novelty, the categories that could be marked)."""

    question: str
    condition: str
    truth: str
    probabilities: Mapping[str, float]
    novelty: float
    supported: tuple[str, ...]
    split: str = ""  # the spent set it belongs to (`PricePoint.worst_set`)

    @property
    def language(self) -> str:
        """The question's language (`en`, `zh`): its condition without `-text-only`."""
        return self.condition.split("-", 1)[0]


@dataclass(frozen=True)
class PricePoint:
    worse_cost: float
    checks_on: int
    checks_off: int
    worse_share: float
    worse_upper90: float  # the larger of the two languages' bounds (`by_language`): the one the choice reads
    evidence_per_novel: float
    recall: float  # recurrences whose true cause is marked (the hints' class recall)
    by_language: tuple[tuple[str, float, float], ...] = ()  # (language, share made worse, its upper bound)
    worst_set: tuple[str, str, int, int] = ("", "", 0, 0)  # (set, condition, checks on, off): the highest ratio

    @property
    def holds_the_bound(self) -> bool:
        """No spent set, in no condition, needs more checks than its base rates (the contract's bound, per set)."""
        return self.worst_set[2] <= self.worst_set[3]

    def to_json(self) -> dict[str, Any]:
        return {"worse_cost": self.worse_cost, "checks_on": self.checks_on, "checks_off": self.checks_off,
                "checks_ratio": round(self.checks_on / self.checks_off, 4) if self.checks_off else None,
                "worse_share": round(self.worse_share, 4), "worse_upper90": round(self.worse_upper90, 4),
                "evidence_per_novel": round(self.evidence_per_novel, 3), "recall": round(self.recall, 4),
                "by_language": {lang: {"worse_share": round(share, 4), "worse_upper90": round(upper, 4)}
                                for lang, share, upper in self.by_language},
                "worst_set": {"set": self.worst_set[0], "condition": self.worst_set[1],
                              "checks_on": self.worst_set[2], "checks_off": self.worst_set[3]}}


def upper_bound(shares: Sequence[float]) -> tuple[float, float]:
    """(the mean of per-question shares made worse, its one-sided 90% upper bound): a question's conditions are one
    cluster, not independent draws."""
    n = len(shares)
    if not n:
        return 0.0, 1.0
    mean = sum(shares) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in shares) / (n - 1)) if n > 1 else 0.0
    return mean, mean + Z90 * sd / math.sqrt(n)


def _ratio(on: int, off: int) -> float:
    """Checks on over off; a set of novel incidents alone (no check off) is infinitely worse for any mark."""
    return on / off if off else (math.inf if on else 0.0)


def price_point(answered: Sequence[Answered], priors: Mapping[str, float], worse_cost: float,
                max_evidence: int | None = None) -> PricePoint:
    """The planner's outcome over `answered` when the evidence is chosen at `worse_cost`, at most `max_evidence`
    marks a question."""
    order = sorted(priors, key=lambda c: (-priors[c], c))
    per_question: dict[tuple[str, str], list[bool]] = defaultdict(list)
    per_set: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    on = off = novel = novel_marks = recurrences = hit = 0
    for a in answered:
        chosen = causes.choose_evidence(a.probabilities, priors, a.novelty, a.supported, worse_cost, max_evidence)
        c_on, c_off = planned(chosen, a.truth, order), planned([], a.truth, order)
        on, off = on + c_on, off + c_off
        per_set[(a.split, a.condition)][0] += c_on
        per_set[(a.split, a.condition)][1] += c_off
        per_question[(a.language, a.question)].append(c_on > c_off)
        if a.truth == NEW:
            novel, novel_marks = novel + 1, novel_marks + len(chosen)
        else:
            recurrences, hit = recurrences + 1, hit + (a.truth in chosen[:rw.K])
    pooled: dict[str, list[bool]] = defaultdict(list)
    for (_, question), worse in per_question.items():
        pooled[question] += worse
    share, _ = upper_bound([sum(v) / len(v) for v in pooled.values()])
    by_language = tuple((lang, *upper_bound([sum(v) / len(v) for (lg, _), v in per_question.items() if lg == lang]))
                        for lang in sorted({lg for lg, _ in per_question}))
    worst = max(per_set.items(), key=lambda kv: (_ratio(*kv[1]), kv[0]), default=(("", ""), [0, 0]))
    return PricePoint(worse_cost, on, off, share, max((u for _, _, u in by_language), default=1.0),
                      novel_marks / novel if novel else 0.0, hit / recurrences if recurrences else 0.0, by_language,
                      (worst[0][0], worst[0][1], worst[1][0], worst[1][1]))


def forecast(answered: Sequence[Answered], priors: Mapping[str, float], p_new: float) -> dict[str, Any]:
    """What the answers say apart from any price, per condition: the mean Brier score of the causes' distribution
    (every category's probability and `novelty`) against the base-rate forecaster's, its skill, and how well
    `novelty` ranks the novel questions above the recurring ones (AUC). The pool is spent: a second look, for
    choosing between designs, not a held-out figure."""
    out: dict[str, Any] = {}
    for condition in sorted({a.condition for a in answered}):
        group = [a for a in answered if a.condition == condition]
        ours = sum(causes.brier(a.probabilities, a.novelty, a.truth) for a in group) / len(group)
        base = sum(causes.brier(priors, p_new, a.truth) for a in group) / len(group)
        score = auc([a.novelty for a in group if a.truth == NEW], [a.novelty for a in group if a.truth != NEW])
        out[condition] = {"questions": len(group), "brier": round(ours, 4), "brier_base_rates": round(base, 4),
                          "brier_skill": round(1.0 - ours / base, 4) if base else None,
                          "novelty_auc": None if score is None else round(score, 3)}
    return out


def choose(points: Sequence[PricePoint], target: float = TARGET_WORSE) -> PricePoint:
    """The smallest price whose upper bound of questions made worse is at most `target` and that holds the bound on
    every spent set in every condition (the largest of the grid when none does)."""
    ordered = sorted(points, key=lambda p: p.worse_cost)
    return next((p for p in ordered if meets(p, target)), ordered[-1])


def picks(grids: Mapping[int | None, Sequence[PricePoint]],
          target: float = TARGET_WORSE) -> dict[int | None, PricePoint]:
    """Each cap's price point by `choose`."""
    return {cap: choose(points, target) for cap, points in grids.items()}


def meets(point: PricePoint, target: float = TARGET_WORSE) -> bool:
    """The point keeps both of #38's limits on the pool: questions made worse, and the bound on every set."""
    return point.worse_upper90 <= target and point.holds_the_bound


def choose_cap(grids: Mapping[int | None, Sequence[PricePoint]],
               target: float = TARGET_WORSE) -> tuple[int | None, PricePoint]:
    """(the cap, its price point): each cap's price by `choose`; of the caps whose price meets both limits, the one
    needing the fewest checks (a tie: the fewer marks); when none does, the fewest marks at its highest price (the
    answer that says least)."""
    chosen = picks(grids, target)
    meeting = [(p.checks_on, math.inf if cap is None else cap, cap) for cap, p in chosen.items() if meets(p, target)]
    if meeting:
        cap = min(meeting, key=lambda m: (m[0], m[1]))[2]
        return cap, chosen[cap]
    cap = min(grids, key=lambda c: math.inf if c is None else c)
    return cap, max(grids[cap], key=lambda p: p.worse_cost)


def ask(service: BriefingService, principal: Principal, pms: list[rw.Postmortem], history: TenantHistory,
        splits: Sequence[rw.Split], progress: Callable[[str], None] = lambda _: None) -> list[Answered]:
    """Every question of `splits` in the four conditions, answered by `service` (in process: the live stack's code,
    with the classifier the service was given) with `explain`."""
    out = []
    for split in splits:
        for pm in rw.questions(pms, split):
            truth = pm.cls if pm.cls in history.counts else NEW
            for lang in ("en", "zh"):
                for text_only in (False, True):
                    req = BriefingRequest.model_validate(pm.request(lang, text_only) | {"explain": True})
                    answer = service.brief(principal, req)
                    why = answer.causes_explain or {}
                    out.append(Answered(pm.id, f"{lang}{'-text-only' if text_only else ''}", truth,
                                        {c: float(p) for c, p in why["probabilities"].items()},
                                        float(answer.novelty), tuple(why["supported"]), split))
            progress(pm.id)
    return out


def cross_fitted(settings: Settings, tenant: str, pms: list[rw.Postmortem], history: TenantHistory,
                 progress: Callable[[str], None] = lambda _: None) -> tuple[list[Answered], list[dict[str, Any]]]:
    """Each fold of the pool (`symptom_fit.PRICE_FOLDS`) asked of the tenant by a briefing service whose symptom
    classifier was fitted as the shipped one is, without that fold: the shipped classifier learned every fold, so its
    concepts would be in sample on them. Per fold, the tenant's causes model is calibrated again with that
    classifier (its lived questions read their concepts through it), as the live stack would with it. Returns the
    answers and, per fold, the tenant's calibration report."""
    embedder = MultilingualE5Embedder()
    semantic = SemanticIndex(embedder)
    data = symptom_fit.embedded(pms, embedder)
    progress("embedded the classifier's rows")
    reviewer = Principal(key_id=uuid.uuid4(), tenant=tenant, project="default", role="reviewer")
    db = Database(settings.database_url, max_size=4)
    db.open()
    answered: list[Answered] = []
    reports: list[dict[str, Any]] = []
    try:
        for fold in symptom_fit.PRICE_FOLDS:
            classifier = symptoms.of_json(symptom_fit.fit(data, semantic.model, symptom_fit.roles_of(fold)))
            service = BriefingService(db, settings, None, semantic)
            service.classifier = classifier  # before its first answer or calibration: nothing cached reads it yet
            try:
                calibrated = service.calibrate_causes(reviewer)
                reports.append({"fold": list(fold), "questions": calibrated.questions})
                answered += ask(service, reviewer, pms, history, fold, progress)
            finally:
                service.close()
            progress(f"fold {'+'.join(fold)}")
    finally:
        db.close()
    return answered, reports


def main(settings: Settings, progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    pms = rw.load()
    admin = OpsloreClient(settings.api_url, settings.admin_token)
    tenant = f"worse-cost-{uuid.uuid4().hex[:10]}"
    client = OpsloreClient(settings.api_url, admin.create_key(tenant, "reviewer", "default"))
    rw.learn_history(client, pms, progress)
    calibration = client.calibrate_causes()
    history = TenantHistory.of_sequence([pm.cls for pm in sorted(rw.history(pms), key=lambda p: (p.date, p.id))])
    priors, p_new = history.priors()
    answered, folds = cross_fitted(settings, tenant, pms, history, progress)
    grids = {cap: [price_point(answered, priors, w, cap) for w in GRID] for cap in CAPS}
    cap, chosen = choose_cap(grids)
    doc = {"about": "the price, in checks, causes.choose_evidence puts on a question its marks make longer; chosen "
                    "by replay/worse_cost_fit.py (see its docstring): the smallest of the grid whose one-sided 90% "
                    f"upper bound of the share of questions made worse is at most {TARGET_WORSE} in each language and "
                    "that needs no more checks than the base rates on any spent set in any condition, on the spent "
                    "sets the causes model was never fitted on, each answered with a symptom classifier fitted "
                    "without its fold",
           "worse_cost": chosen.worse_cost, "max_evidence": cap, "fitted_at": datetime.now(UTC).date().isoformat(),
           "splits": list(SPLITS), "folds": folds, "answers": len(answered),
           "questions": len({a.question for a in answered}),
           "target_worse": TARGET_WORSE, "guard": calibration.get("report", {}),
           "forecast": forecast(answered, priors, p_new),
           "caps": [{"max_evidence": c, **p.to_json(), "meets": meets(p)} for c, p in picks(grids).items()],
           "grid": [p.to_json() for p in grids[cap]]}
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc
