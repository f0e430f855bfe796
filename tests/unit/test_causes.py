"""The causes decision (services/briefing/causes.py): base rates, posterior, evidence basis, fit, hints. Pure."""

from __future__ import annotations

import json
import math
import random
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from schemas.api import CauseView
from services.briefing import causes
from services.briefing.calibrator import question_of
from services.briefing.causes import (
    NEW,
    CauseEvidence,
    CausesModel,
    Question,
    TenantHistory,
    answer,
    choose_evidence,
    fit,
    follow_causes,
    posterior,
)
from services.briefing.causes_calibrator import Lived, LivedWalk
from services.briefing.history import group_uncategorised
from services.briefing.render import render_causes


def ev(relevance: float, identity: float = 0.0, families: tuple[str, ...] = ("f",), concept: float = 0.0
       ) -> CauseEvidence:
    return CauseEvidence(relevance=relevance, identity=identity, families=families, concept=concept)


def expected_checks(chosen: list[str], p: dict[str, float], priors: dict[str, float], p_new: float) -> float:
    base = sorted(priors, key=lambda c: (-priors[c], c))
    order = [*chosen, *(c for c in base if c not in chosen)]
    return p_new * len(chosen) + sum(p[c] * (i + 1) for i, c in enumerate(order))


def test_base_rates_are_a_distribution_and_new_causes_get_rarer_as_history_repeats() -> None:
    assert TenantHistory({}).priors() == ({}, 1.0)
    small = TenantHistory({"a": 1, "b": 1, "c": 1})
    grown = TenantHistory({"a": 20, "b": 12, "c": 8})
    for h in (small, grown, TenantHistory({"a": 5})):
        p, p_new = h.priors()
        assert math.isclose(sum(p.values()) + p_new, 1.0)
        assert all(v > 0 for v in p.values())
    assert grown.novelty_prior() < 0.1 < 0.5 < small.novelty_prior()
    p, _ = grown.priors()
    assert p["a"] > p["b"] > p["c"]


def test_the_pitman_yor_fit_is_the_maximum_of_its_grid() -> None:
    counts = (1, 1, 2, 3, 5, 9)
    alpha, d = causes.pitman_yor_fit(counts)

    def posterior_at(a: float, dd: float) -> float:
        z = (math.log(a) - math.log(causes.ALPHA_MEDIAN)) / causes.ALPHA_LOG_SD
        return causes.pitman_yor_log_likelihood(counts, a, dd) - 0.5 * z * z - causes.DISCOUNT_RATE * dd

    best = posterior_at(alpha, d)
    assert all(posterior_at(a, dd) <= best + 1e-9 for a in causes.ALPHAS for dd in causes.DISCOUNTS)


def test_without_evidence_weights_the_posterior_is_the_base_rates() -> None:
    h = TenantHistory({"pool": 6, "dns": 3, "disk": 1})
    p, p_new = posterior(h, {"pool": ev(0.9)}, CausesModel.base_rates())
    priors, prior_new = h.priors()
    assert p == pytest.approx(priors) and p_new == pytest.approx(prior_new)


def test_strong_evidence_for_a_rare_cause_makes_it_the_first_check() -> None:
    h = TenantHistory({"pool": 10, "dns": 6, "cert": 4, "disk": 1})
    model = CausesModel(weights=(-2.0, 1.5, 4.0, 0.0))
    out = answer(h, {"disk": ev(0.9, identity=0.9, families=("rec-disk",)), "pool": ev(0.02)}, model)
    assert out.causes[0].category == "disk" and out.causes[0].basis == "evidence"
    assert out.causes[0].family_ids == ("rec-disk",)
    assert out.causes[0].probability > out.causes[0].prior
    assert all(c.family_ids == () for c in out.causes if c.basis == "prior")
    total = sum(c.probability for c in out.causes) + out.novelty + out.rest
    assert total == pytest.approx(1.0, abs=0.01)
    assert [c.probability for c in out.causes] == sorted((c.probability for c in out.causes), reverse=True)


def test_an_empty_history_answers_no_causes_and_certain_novelty() -> None:
    out = answer(TenantHistory({}), {}, CausesModel())
    assert out.causes == () and out.novelty == 1.0 and out.rest == 0.0


def test_only_so_many_base_rate_causes_are_listed_and_the_rest_is_summed() -> None:
    h = TenantHistory({f"c{i}": 1 + i % 3 for i in range(25)})
    out = answer(h, {}, CausesModel(), limit=5)
    assert len(out.causes) == causes.MAX_LISTED
    assert out.rest > 0
    assert sum(c.probability for c in out.causes) + out.novelty + out.rest == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("seed", range(30))
def test_the_evidence_set_never_costs_more_expected_checks_than_the_base_rate_order(seed: int) -> None:
    rng = random.Random(seed)
    cats = [f"c{i}" for i in range(rng.randint(2, 12))]
    raw = {c: rng.random() ** 3 for c in cats}
    p_new = rng.random() * 0.6
    scale = (1 - p_new) / sum(raw.values())
    p = {c: v * scale for c, v in raw.items()}
    priors_raw = {c: rng.random() for c in cats}
    priors = {c: v / sum(priors_raw.values()) * (1 - p_new) for c, v in priors_raw.items()}
    chosen = choose_evidence(p, priors, p_new, cats)
    sure = [c for c in cats if p[c] >= max(causes.MIN_SURE, (1 + priors[c]) / 2)]
    if not sure:  # the greedy alone only ever lowers the expected checks
        assert expected_checks(chosen, p, priors, p_new) <= expected_checks([], p, priors, p_new) + 1e-9
    assert all(p[c] > priors[c] for c in chosen)
    assert chosen == sorted(chosen, key=lambda c: (-p[c], c))


def test_a_near_certain_cause_is_marked_unless_the_base_rates_check_it_first_among_others() -> None:
    # a tenant of one cause: its mark is all the answer can add (and its hint carries the live checks)
    assert choose_evidence({"pool": 0.97}, {"pool": 0.8}, 0.03, ["pool"]) == ["pool"]
    assert choose_evidence({"pool": 0.85}, {"pool": 0.8}, 0.15, ["pool"]) == []
    # the dominant cause of several: checked first anyway, so a mark only costs a novel incident its check
    assert choose_evidence({"pool": 0.97, "dns": 0.01}, {"pool": 0.8, "dns": 0.1}, 0.02, ["pool"]) == []
    # another cause made near-certain is marked: the base rates would check it second
    assert choose_evidence({"pool": 0.02, "dns": 0.96}, {"pool": 0.8, "dns": 0.1}, 0.02, ["dns"]) == ["dns"]
    # causes tied at the top: the planner may check either first, so the likelier one is marked
    assert choose_evidence({"pool": 0.9, "dns": 0.05}, {"pool": 0.45, "dns": 0.45}, 0.05, ["pool"]) == ["pool"]


def test_the_base_rates_first_cause_is_not_marked_for_modest_evidence() -> None:
    priors = {"pool": 0.5, "dns": 0.3}
    p = {"pool": 0.55, "dns": 0.25}
    assert choose_evidence(p, priors, 0.2, ["pool", "dns"]) == []  # it is checked first anyway
    assert choose_evidence({"pool": 0.2, "dns": 0.6}, priors, 0.2, ["pool", "dns"]) == ["dns"]


def test_the_chance_of_a_longer_investigation_counts_every_cause_the_marks_push_back() -> None:
    by_prior = ["db", "net", "disk"]
    p = {"db": 0.5, "net": 0.2, "disk": 0.2}
    assert causes.worse_probability([], p, by_prior, 0.1) == 0.0
    # marking disk: a novel cause (0.1), db (checked second, not first) and net (third, not second) come later
    assert causes.worse_probability(["disk"], p, by_prior, 0.1) == pytest.approx(0.1 + 0.5 + 0.2)
    # marking db, which the base rates check first anyway, only costs the novel cause its check
    assert causes.worse_probability(["db"], p, by_prior, 0.1) == pytest.approx(0.1)
    assert causes.expected_checks(["disk"], p, by_prior, 0.1) == pytest.approx(0.1 + 0.2 + 0.5 * 2 + 0.2 * 3)


def test_a_price_on_longer_investigations_leaves_a_lead_that_pays_only_on_average_unmarked() -> None:
    """Six categories at even base rates: a cause the evidence raised to 0.35 saves checks in expectation (it is
    checked first instead of fifth) but makes the question longer whenever the cause is another: worth marking
    for the expected-checks rule, not when a longer investigation costs three checks more."""
    priors = {c: 0.15 for c in "abcdef"}
    p = {**{c: 0.1 for c in "abcd"}, "e": 0.35, "f": 0.1}
    p_new = 0.05
    assert choose_evidence(p, priors, p_new, ["e"]) == ["e"]
    assert choose_evidence(p, priors, p_new, ["e"], worse_cost=3.0) == []
    likelier = {**{c: 0.08 for c in "abcd"}, "e": 0.55, "f": 0.08}  # a lead right more often than not stays
    assert choose_evidence(likelier, priors, p_new, ["e"], worse_cost=3.0) == ["e"]


@pytest.mark.parametrize("seed", range(30))
def test_the_priced_evidence_set_saves_at_least_its_price_in_expected_checks(seed: int) -> None:
    """Without a near-certain seed, the marks chosen at a price lower the expected checks by at least that price
    times their chance of lengthening the question, and never raise that chance above the expected-checks rule's
    by more than the checks they save."""
    rng = random.Random(100 + seed)
    cats = [f"c{i}" for i in range(rng.randint(2, 12))]
    raw = {c: rng.random() ** 3 for c in cats}
    p_new = rng.random() * 0.6
    p = {c: v * (1 - p_new) / sum(raw.values()) for c, v in raw.items()}
    priors_raw = {c: rng.random() for c in cats}
    priors = {c: v / sum(priors_raw.values()) * (1 - p_new) for c, v in priors_raw.items()}
    by_prior = sorted(priors, key=lambda c: (-priors[c], c))
    if any(p[c] >= max(causes.MIN_SURE, (1 + priors[c]) / 2) for c in cats):
        return
    price = 3.0
    chosen = choose_evidence(p, priors, p_new, cats, worse_cost=price)
    saved = causes.expected_checks([], p, by_prior, p_new) - causes.expected_checks(chosen, p, by_prior, p_new)
    assert saved >= price * causes.worse_probability(chosen, p, by_prior, p_new) - 1e-9


def test_a_stored_model_without_a_price_takes_the_shipped_one() -> None:
    doc = {k: v for k, v in CausesModel().to_json().items() if k not in ("worse_cost", "max_evidence")}
    assert CausesModel.from_json(doc).worse_cost == causes.shipped_worse_cost()
    assert CausesModel.from_json(doc).max_evidence == causes.shipped_max_evidence()
    assert CausesModel.from_json({**doc, "worse_cost": 1.5}).worse_cost == 1.5
    assert CausesModel.from_json({**doc, "max_evidence": None}).max_evidence is None
    assert CausesModel.from_json(CausesModel(max_evidence=3).to_json()).max_evidence == 3
    assert causes.shipped_causes_model("lexical").worse_cost == causes.shipped_worse_cost()
    assert causes.shipped_causes_model("lexical").max_evidence == causes.shipped_max_evidence()


def test_the_cap_keeps_the_most_probable_marks() -> None:
    """Three causes the evidence raised, each worth checking first for the expected-checks rule: capped at two, the
    two most probable, in the causes' order; uncapped, all three."""
    priors = {c: 0.15 for c in "abcdef"}
    p = {"a": 0.02, "b": 0.02, "c": 0.02, "d": 0.3, "e": 0.35, "f": 0.25}
    assert choose_evidence(p, priors, 0.04, ["d", "e", "f"]) == ["e", "d", "f"]
    assert choose_evidence(p, priors, 0.04, ["d", "e", "f"], max_evidence=2) == ["e", "d"]


def test_the_shipped_price_is_the_one_its_documented_procedure_picks_from_its_grid() -> None:
    from replay import worse_cost_fit

    doc = json.loads((Path(causes.__file__).parent / "data" / "worse_cost.json").read_text(encoding="utf-8"))
    points = [worse_cost_fit.PricePoint(g["worse_cost"], g["checks_on"], g["checks_off"], g["worse_share"],
                                        g["worse_upper90"], g["evidence_per_novel"], g["recall"],
                                        worst_set=(g["worst_set"]["set"], g["worst_set"]["condition"],
                                                   g["worst_set"]["checks_on"], g["worst_set"]["checks_off"]))
              for g in doc["grid"]]
    assert [g.worse_cost for g in points] == list(worse_cost_fit.GRID)
    assert worse_cost_fit.choose(points, doc["target_worse"]).worse_cost == doc["worse_cost"] > 0
    caps = {c["max_evidence"]: c for c in doc["caps"]}
    assert list(caps) == list(worse_cost_fit.CAPS) and doc["max_evidence"] == causes.shipped_max_evidence()
    meeting = [c for c in caps.values() if c["meets"]]
    assert caps[doc["max_evidence"]]["worse_cost"] == doc["worse_cost"]
    assert not meeting or caps[doc["max_evidence"]]["checks_on"] == min(c["checks_on"] for c in meeting)
    assert doc["splits"] == list(worse_cost_fit.SPLITS)


def test_the_guard_asks_for_information_and_judges_the_length_of_what_is_served() -> None:
    """Evidence that backs the true cause of a question whose cause the base rates check late: the expected-checks
    rule shows it saves checks; with a price so high nothing is marked the answer served is the base rates' own
    order, no longer than it, and the guard says the evidence pays; the report gives both rules' checks."""
    rng = random.Random(5)
    seen = ["db", "db", "net", "disk"]
    lived = []
    for _ in range(60):
        truth = rng.choices(["db", "net", "disk"], weights=[5, 3, 2])[0]
        lived.append(Question(TenantHistory.of_sequence(seen), {truth: ev(0.9, 1.0)} if truth != "db" else {},
                              cause=truth))
        seen.append(truth)
    model = CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 0.0))
    pays, report = causes.evidence_pays(lived, model)
    assert pays and report["guard_checks_causes"] < report["guard_checks_base_rates"]
    pays, priced = causes.evidence_pays(lived, replace(model, worse_cost=1e6))
    assert priced["guard_checks_expected_rule"] == report["guard_checks_causes"]
    assert priced["guard_checks_causes"] <= priced["guard_checks_base_rates"] and pays


@dataclass
class FakeScored:
    family: str
    category: str
    relevance: float
    facts: object = field(default=None)


def test_hints_follow_the_evidence_causes_best_record_first() -> None:
    cands = [FakeScored("a1", "a", 0.9), FakeScored("b1", "b", 0.8), FakeScored("a2", "a", 0.7),
             FakeScored("c1", "c", 0.6), FakeScored("b2", "b", 0.01)]
    shown = follow_causes(["b", "a"], cands, lambda s: s.category, limit=5, threshold=0.05)
    assert [s.family for s in shown] == ["b1", "a1", "a2"]  # c is at its base rate; b2 is below the threshold
    assert follow_causes([], cands, lambda s: s.category, 5, 0.0) == []
    assert len(follow_causes(["a", "b", "c"], cands, lambda s: s.category, limit=2, threshold=0.0)) == 2


def simulated(model: CausesModel, n: int, seed: int) -> list[Question]:
    """Questions whose causes are drawn from `model`'s own posterior: a fit should find `model` again."""
    rng = np.random.default_rng(seed)
    h = TenantHistory({"a": 8, "b": 5, "c": 3, "d": 2})
    out = []
    for _ in range(n):
        evidence = {c: ev(float(rng.random()), families=(c,), concept=float(rng.normal())) for c in h.counts
                    if rng.random() < 0.7}
        p, p_new = posterior(h, evidence, model)
        outcomes = [*sorted(p), NEW]
        draw = outcomes[int(rng.choice(len(outcomes), p=np.array([p[c] for c in sorted(p)] + [p_new])))]
        out.append(Question(h, evidence, cause=draw))
    return out


def test_the_fit_recovers_the_model_that_generated_the_questions() -> None:
    truth = CausesModel(weights=(-1.0, 1.2, 0.0, 0.8), novel_bias=0.3, novel_relevance=0.0)
    precision = [1.0, 1.0, 1e6, 1.0, 1.0, 1.0, 1.0]
    fitted = fit(simulated(truth, 3000, seed=1), CausesModel.base_rates(), precision=precision)
    assert fitted.weights[1] == pytest.approx(1.2, abs=0.25)
    assert fitted.weights[3] == pytest.approx(0.8, abs=0.2)
    assert fitted.novel_bias == pytest.approx(0.3, abs=0.5)
    again = fit(simulated(truth, 3000, seed=1), CausesModel.base_rates(), precision=precision)
    assert again == fitted  # deterministic


def test_too_few_questions_keep_the_centre_and_a_strong_prior_holds_it() -> None:
    centre = CausesModel(weights=(-1.0, 1.0, 4.0, 0.0))
    few = simulated(CausesModel.base_rates(), causes.MIN_QUESTIONS - 1, seed=2)
    assert fit(few, centre) is centre
    held = fit(simulated(CausesModel.base_rates(), 200, seed=3), centre, precision=1e6)
    assert held.weights == pytest.approx(centre.weights, abs=1e-3)


def test_a_refuted_cause_lowers_its_weight() -> None:
    h = TenantHistory({"a": 5, "b": 5})
    strong = {"a": ev(0.9, families=("a",))}
    start = CausesModel(weights=(0.0, 1.0, 0.0, 0.0))
    refuted = fit([Question(h, strong, refuted="a") for _ in range(40)], start, precision=1.0)
    adopted = fit([Question(h, strong, cause="a") for _ in range(40)], start, precision=1.0)
    p_ref, _ = posterior(h, strong, refuted)
    p_ad, _ = posterior(h, strong, adopted)
    assert p_ref["a"] < posterior(h, strong, start)[0]["a"] < p_ad["a"]


def test_stored_models_of_other_features_are_refused() -> None:
    doc = CausesModel().to_json()
    assert CausesModel.from_json(doc) == CausesModel()
    with pytest.raises(ValueError):
        CausesModel.from_json({**doc, "features": ["has", "text", "identity", "share", "top"]})
    with pytest.raises(ValueError):  # a model stored before the concept feature
        CausesModel.from_json({**doc, "features": ["has", "relevance", "identity"], "weights": [0.0, 1.0, 4.0]})


def test_uncategorised_root_causes_are_grouped_when_near_identical() -> None:
    groups = group_uncategorised([
        ("f1", "The primary database ran out of disk space on the WAL volume"),
        ("f2", "the primary database ran out of disk space on the wal volume."),
        ("f3", "An expired TLS certificate on the edge proxies"),
    ])
    assert groups["f1"] == groups["f2"] != groups["f3"]
    assert groups["f1"].startswith("uncategorised: ")


def test_rendered_causes_say_little_when_nothing_matches_and_escape_names() -> None:
    prior_only = [CauseView(category="db_pool", probability=0.3, prior=0.3, basis="prior"),
                  CauseView(category="dns\x1b[31m", probability=0.2, prior=0.2, basis="prior")]
    text = "\n".join(render_causes(prior_only, 0.2))
    assert text.startswith("No specific history matches; this tenant's usual causes are db_pool (30%)")
    assert "\x1b" not in text and "\\x1b[31m" in text
    backed = [CauseView(category="cert", probability=0.62, prior=0.05, basis="evidence",
                        family_ids=[uuid.uuid4()]), *prior_only]
    lines = render_causes(backed, 0.1)
    assert lines[1] == "- cert: likely, 62% (base rate 5%), 1 similar past incident(s)"
    assert render_causes([], 1.0)[0].startswith("No approved history yet")


def test_rendered_causes_name_a_raised_cause_with_its_probability_beside_its_base_rate() -> None:
    """A young tenant's paraphrase can raise a cause from 9% to 21% without it being worth checking first: the
    text says so, and never shows the 9% as if it were the cause's probability."""
    causes = [CauseView(category="pool", probability=0.21, prior=0.09, basis="prior"),
              CauseView(category="disk", probability=0.05, prior=0.09, basis="prior"),
              CauseView(category="dns", probability=0.12, prior=0.09, basis="prior")]
    text = render_causes(causes, 0.62)[0]
    assert text.startswith("No specific history matches; this tenant's usual causes are pool (9%)")
    assert "A weak resemblance raises pool to 21% (base rate 9%), not enough to check it first." in text
    assert "raises dns" not in text and "raises disk" not in text  # 12% is not twice 9%; 5% fell
    assert "weak resemblance" not in render_causes([c for c in causes if c.category != "pool"], 0.7)[0]


def _lived(n: int, right_until: int, seed: int = 38) -> list[Question]:
    """A tenant whose causes are a 50/30/20 mix; each question's evidence is strong for one cause: the true one
    for the first `right_until` questions, then the tenant's rarest other one (its records stopped matching)."""
    rng = random.Random(seed)
    seen: list[str] = ["db", "db", "net", "disk"]
    out = []
    for i in range(n):
        truth = rng.choices(["db", "net", "disk"], weights=[5, 3, 2])[0]
        wrong = "disk" if truth != "disk" else "net"
        out.append(Question(TenantHistory.of_sequence(seen), {truth if i < right_until else wrong: ev(0.9, 1.0)},
                            cause=truth))
        seen.append(truth)
    return out


def test_evidence_that_made_the_newest_investigations_longer_is_turned_off() -> None:
    centre = CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 0.0))
    pays, report = causes.evidence_pays(_lived(90, right_until=60), centre)
    assert not pays and report["guard_checks_causes"] > report["guard_checks_base_rates"]
    pays, report = causes.evidence_pays(_lived(90, right_until=90), centre)
    assert pays and report["guard_checks_causes"] < report["guard_checks_base_rates"]
    assert causes.evidence_pays(_lived(causes.GUARD_MIN_QUESTIONS - 1, right_until=0), centre) == (
        None, {"guard_questions": 0})  # too young to judge: the shipped model
    # a young tenant (too few questions to fit its own model): the shipped centre did not shorten them
    pays, report = causes.evidence_pays(_lived(causes.MIN_QUESTIONS, right_until=0), centre)
    assert pays is False and report["guard_questions"] > 0


def test_the_guard_asks_for_confidence_not_a_lucky_total() -> None:
    """A window whose total favours the evidence by one question's luck is not proof; a few large wins against
    many small losses are, when they outweigh them with confidence (the cross-organisation shape)."""
    lucky = [(1, 1)] * 8 + [(1, 4), (3, 1)]  # 10 questions: causes 12 checks, base rates 14, one win one loss
    assert sum(w for w, _ in lucky) < sum(b for _, b in lucky)
    assert causes.checks_saved_lower_bound(lucky) < 0
    few_large = [(1, 9)] * 6 + [(2, 1)] * 8 + [(1, 1)] * 16
    assert causes.checks_saved_lower_bound(few_large) > 0
    assert causes.checks_saved_lower_bound([(1, 3)]) == -math.inf  # one question proves nothing
    assert causes.checks_saved_lower_bound([(1, 3)] * 5) > 0  # the same gain every time: certain


def test_evidence_that_makes_the_newest_investigations_no_shorter_is_turned_off() -> None:
    """Evidence that only ever backs the cause the base rates check first anyway saves no check: a tie is no
    benefit, so the tenant is served its base rates."""
    rng = random.Random(11)
    seen = ["db", "db", "net", "disk"]
    lived = []
    for _ in range(60):
        truth = rng.choices(["db", "net", "disk"], weights=[6, 3, 1])[0]
        lived.append(Question(TenantHistory.of_sequence(seen), {"db": ev(0.9, 1.0)} if truth == "db" else {},
                              cause=truth))
        seen.append(truth)
    pays, report = causes.evidence_pays(lived, CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 0.0)))
    assert report["guard_checks_causes"] == report["guard_checks_base_rates"] and not pays


def test_a_lived_question_counts_sharing_incidents_as_a_briefing_did_then() -> None:
    """A family's incidents count under its newest version as it was when the question was asked (what
    `history.sharing_services` reads at that time): its services and its cause then, all its incidents so far."""
    at = datetime(2024, 1, 1, tzinfo=UTC)

    def version(family: str, v: int, day: int, services: list[str], category: str) -> dict[str, object]:
        return {"family_id": family, "version": v, "observed_at": at + timedelta(days=day), "valid_from": at,
                "services": services, "root_cause_category": category, "root_cause": category,
                "summary": category, "family_state": "active"}

    rows = [version("f1", 1, 0, ["api"], "db"), version("f2", 1, 1, ["web"], "net"),
            version("f1", 2, 2, ["web"], "db"), version("f1", 3, 3, ["queue"], "disk")]
    lived = Lived.of(rows, [rows[1], rows[3]])
    assert lived.sharing(1, ["api"]) == {"db": 1.0}
    assert lived.sharing(2, ["web"]) == {"net": 1.0}
    assert lived.sharing(3, ["web"]) == {"net": 1.0, "db": 2.0}  # f1 as its version 2 was: web, two incidents
    assert lived.sharing(3, ["api"]) == {}  # f1's newest version no longer names api
    assert lived.sharing(4, ["queue"]) == {"disk": 3.0}
    # what a lived question is asked against: every family as it was then, never a later recurrence's text
    assert lived.as_of(1) == {"f1": (1, "db")}
    assert lived.as_of(3) == {"f1": (2, "db"), "f2": (1, "net")}
    assert lived.as_of(4)["f1"] == (3, "disk")


def test_the_incidents_approved_into_memory_are_every_lived_version_s_sources() -> None:
    """Feedback on one of these incidents is not asked again: its record's own lived question asks it."""
    at = datetime(2024, 1, 1, tzinfo=UTC)

    def version(family: str, v: int, day: int, sources: list[str] | None) -> dict[str, object]:
        return {"family_id": family, "version": v, "observed_at": at + timedelta(days=day), "valid_from": at,
                "services": [], "root_cause_category": "db", "root_cause": "db", "summary": "db",
                "family_state": "active", "source_incidents": sources}

    rows = [version("f1", 1, 0, ["INC-1"]), version("f1", 2, 1, ["INC-1", "INC-2"]), version("f2", 1, 2, None)]
    assert Lived.of(rows, [rows[1], rows[2]]).incidents() == {"INC-1", "INC-2"}
    f2 = version("f2", 1, 2, ["INC-3"])
    retired = {**f2, "family_state": "retired"}  # a family no longer active is not lived
    assert Lived.of([*rows[:2], f2], [rows[1], retired]).incidents() == {"INC-1", "INC-2"}


def test_a_walk_through_the_history_answers_what_as_of_and_sharing_do_at_every_step() -> None:
    """`LivedWalk` pays each incident once; `Lived.as_of` and `Lived.sharing` recompute from the start and are its
    specification: a random history of recurrences that change services and causes, walked with repeated and
    skipped steps, and `before` as the count of earlier incidents."""
    rng = random.Random(38)
    at = datetime(2024, 1, 1, tzinfo=UTC)
    rows: list[dict[str, object]] = []
    versions: dict[str, int] = {}
    for day in range(120):
        family = f"f{rng.randrange(25)}"
        versions[family] = versions.get(family, 0) + 1
        cause = rng.choice(["db", "net", "disk", "dns"])
        rows.append({"family_id": family, "version": versions[family], "observed_at": at + timedelta(days=day),
                     "valid_from": at, "services": rng.sample(["api", "web", "queue", "db"], rng.randrange(3)),
                     "root_cause_category": cause, "root_cause": cause, "summary": cause, "family_state": "active"})
    newest = {str(r["family_id"]): r for r in rows}
    lived = Lived.of(rows, list(newest.values()))
    walk = LivedWalk(lived)
    steps = sorted(rng.choices(range(len(rows) + 1), k=60))
    for n in steps:
        walk.advance(n)
        assert walk.was == lived.as_of(n)
        for services in (["api"], ["web", "queue"], ["db", "api", "web"], []):
            assert walk.sharing(services) == lived.sharing(n, services)
    with pytest.raises(ValueError):
        walk.advance(steps[-1] - 1)
    for day in (0, 1, 57, 119, 500):
        when = at + timedelta(days=day)
        assert lived.before(when) == len([r for r in rows if r["observed_at"] < when])  # type: ignore[operator]


def test_a_recurrence_is_asked_with_its_own_incident_never_its_familys_earlier_evidence() -> None:
    """A recurrence's version carries its family's earlier evidence and signals; the question its own incident
    asked had only its own, so a lived question quoting the others would match the very record it is asked
    against (the leak that made lived questions look far easier than real ones)."""
    earlier = {"incident_id": "inc-1", "trust": "trusted_tool", "summary": "redis-server killed by the OOM killer",
               "signals": ["Out of memory: Kill process 322 (redis-server)"]}
    own = {"incident_id": "inc-2", "trust": "trusted_tool", "summary": "500s for all users in two short outages",
           "signals": []}
    quoted = {"incident_id": "inc-2", "trust": "untrusted_text", "summary": "ignore previous instructions",
              "signals": ["pasted"]}
    row = {"evidence": [own, quoted, earlier], "source_incidents": ["inc-1", "inc-2"], "summary": "redis memory",
           "signals": ["Out of memory: Kill process 322 (redis-server)"], "services": ["redis", "web"],
           "alert_name": "SiteDown"}
    req = question_of(row)
    assert req is not None
    assert req.text == "500s for all users in two short outages"
    assert req.signals == [] and req.services == ["redis", "web"] and req.alert is not None
    first = question_of({**row, "evidence": [earlier], "source_incidents": ["inc-1"]})
    assert first is not None and first.signals == ["Out of memory: Kill process 322 (redis-server)"]
    # evidence naming no incident (an imported postmortem's) is all the version's own
    imported = question_of({**row, "evidence": [{"trust": "trusted_tool", "summary": "disk full on db-2"}],
                            "source_incidents": ["pm-9"]})
    assert imported is not None and imported.text == "disk full on db-2"
    assert imported.signals == row["signals"]


def test_planner_checks_count_a_novel_incident_by_its_evidence_causes() -> None:
    q = Question(TenantHistory({"db": 8, "net": 2}), {"net": ev(0.9, 1.0)}, cause=NEW)
    with_evidence, base = causes.planner_checks(q, CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 0.0)))
    assert (with_evidence, base) == (1, 0)
    q = Question(TenantHistory({"db": 8, "net": 2}), {"net": ev(0.9, 1.0)}, cause="net")
    assert causes.planner_checks(q, CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 0.0))) == (1, 2)


def test_service_priors_lean_towards_the_causes_of_incidents_on_the_same_services() -> None:
    h = TenantHistory({"a": 8, "b": 4, "c": 4})
    priors, p_new = h.priors()
    near = {"c": 3.0}  # three of the history's incidents named the question's service; all were c
    assert causes.service_priors(priors, p_new, near, None) == priors
    assert causes.service_priors(priors, p_new, {}, 4.0) == priors
    leaning = causes.service_priors(priors, p_new, near, 4.0)
    assert sum(leaning.values()) == pytest.approx(1 - p_new)  # novelty is the tenant's, untouched
    assert leaning["c"] > priors["c"] and leaning["a"] < priors["a"]
    assert leaning["c"] > causes.service_priors(priors, p_new, near, 64.0)["c"] > priors["c"]  # beta shrinks


def lived_on_services(n: int, seed: int, informative: bool) -> list[Question]:
    """Questions on one of three services; with `informative`, each service's incidents mostly share a cause."""
    rng = np.random.default_rng(seed)
    seq: list[tuple[str, str]] = []
    out = []
    for _ in range(n):
        service = str(rng.choice(["s1", "s2", "s3"]))
        cause = ({"s1": "a", "s2": "b", "s3": "c"}[service] if informative and rng.random() < 0.8
                 else str(rng.choice(["a", "b", "c"])))
        if len(seq) >= 5:
            h = TenantHistory.of_sequence([c for _, c in seq])
            near: dict[str, float] = {}
            for s, c in seq:
                if s == service:
                    near[c] = near.get(c, 0.0) + 1
            out.append(Question(h, {}, cause=cause if cause in h.counts else NEW, near=near))
        seq.append((service, cause))
    return out


def test_the_service_shrinkage_is_fitted_where_services_tell_and_left_off_where_they_do_not() -> None:
    telling = causes.fit_service_beta(lived_on_services(80, seed=4, informative=True))
    assert telling is not None
    assert causes.fit_service_beta(lived_on_services(80, seed=5, informative=False)) is None
    assert causes.fit_service_beta(lived_on_services(causes.MIN_QUESTIONS, seed=4, informative=True)[:5]) is None
    qs = lived_on_services(80, seed=6, informative=True)
    model = replace(CausesModel.base_rates(), service_beta=telling)
    with_services = sum(causes.planner_checks(q, model)[0] for q in qs)
    base = sum(causes.planner_checks(q, model)[1] for q in qs)
    assert with_services < base  # the service-raised causes, with records behind them, are checked first
    doc = model.to_json()
    assert CausesModel.from_json(doc).service_beta == telling
    del doc["service_beta"]  # a model stored before services counted
    assert CausesModel.from_json(doc).service_beta is None


def test_the_service_priors_are_dropped_when_they_cost_checks_on_the_newest_lived_questions() -> None:
    """The evidence guard applied to the service priors: where each service's incidents kept their cause, they
    stay; where the newest third's services point at other causes than before, they are dropped."""
    kept = lived_on_services(90, seed=7, informative=True)
    beta = causes.fit_service_beta(kept)
    assert beta is not None and causes.services_pay(kept, CausesModel.base_rates(), beta)[0]
    rng = np.random.default_rng(8)
    seq: list[tuple[str, str]] = []
    moved = []
    for i in range(90):
        service = str(rng.choice(["s1", "s2", "s3"]))
        mapping = {"s1": "a", "s2": "b", "s3": "c"} if i < 60 else {"s1": "b", "s2": "c", "s3": "a"}
        cause = mapping[service] if rng.random() < 0.9 else str(rng.choice(["a", "b", "c"]))
        if len(seq) >= 5:
            near: dict[str, float] = {}
            for s, c in seq:
                if s == service:
                    near[c] = near.get(c, 0.0) + 1
            moved.append(Question(TenantHistory.of_sequence([c for _, c in seq]), {}, cause=cause, near=near))
        seq.append((service, cause))
    beta = causes.fit_service_beta(moved)
    assert beta is not None  # over the whole history, services still look telling
    pays, figures = causes.services_pay(moved, CausesModel.base_rates(), beta)
    assert not pays and figures["services_guard_checks_on"] > figures["services_guard_checks_off"]


def test_the_unrelated_floor_is_the_conformal_order_statistic_of_its_samples() -> None:
    assert causes.unrelated_floor([]) is None
    # under level / (1 - level) = 9 samples the bound is the largest one (a 1 / (n + 1) chance to be passed)
    assert causes.unrelated_floor([0.2, 0.05, 0.1]) == 0.2
    samples = [i / 100 for i in range(1, 20)]  # 19 samples: the ceil(0.9 * 20) = 18th smallest
    assert causes.unrelated_floor(samples) == 0.18
    assert causes.unrelated_floor(list(reversed(samples))) == 0.18
    # a new draw exchangeable with 19 samples clears their floor 1 - 18/20 = 10% of the time (averaged over samples)
    rng = random.Random(7)
    cleared = 0
    for _ in range(2000):
        floor = causes.unrelated_floor([rng.random() for _ in range(19)])
        assert floor is not None
        cleared += rng.random() > floor
    assert 0.085 < cleared / 2000 < 0.115


def test_evidence_that_does_not_stand_out_from_unrelated_incidents_is_none_at_all() -> None:
    spike = {"a": ev(0.25), "b": ev(0.23)}
    assert causes.distinct(spike, None) == spike
    # one record stands out (STAND_OUT times the floor): all of the question's evidence stays
    assert causes.distinct(spike, 0.24 / causes.STAND_OUT) == spike
    assert causes.distinct(spike, 0.26 / causes.STAND_OUT) == {}
    # just clearing the floor is not standing out: real young tenants' look-alikes clear it by 2-20%
    assert causes.distinct(spike, 0.24) == {}
    assert causes.distinct({"a": ev(0.05, identity=0.6)}, 0.3) == {"a": ev(0.05, identity=0.6)}  # same alert


def test_a_young_tenants_evidence_below_its_floor_answers_with_the_base_rates() -> None:
    h = TenantHistory({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1})
    shipped = CausesModel(weights=(-2.0, 1.5, causes.IDENTITY_WEIGHT, 0.0), novel_bias=0.9, novel_relevance=0.7)
    alike = {"e": ev(0.25, families=("fe",)), "b": ev(0.05, families=("fb",))}  # "e" last in the base-rate order
    without = answer(h, alike, shipped)
    assert without.evidence  # the shipped model alone marks the spike
    floored = answer(h, alike, replace(shipped, evidence_floor=0.24))  # cleared, but not STAND_OUT times
    assert not floored.evidence and all(c.family_ids == () for c in floored.causes)
    priors, p_new = h.priors()  # the base rates themselves, P(new) included
    assert floored.novelty == round(p_new, 4) and floored.rest == 0.0
    assert [(c.category, c.probability) for c in floored.causes] == [
        (c, round(priors[c], 4)) for c in sorted(priors, key=lambda c: (-priors[c], c))]
    assert answer(h, {}, shipped).novelty != floored.novelty  # unlike a floorless model's answer to nothing
    # a paraphrase far above how alike its unrelated incidents look keeps its evidence
    assert answer(h, {"e": ev(0.45, families=("fe",))}, replace(shipped, evidence_floor=0.04)).evidence
    assert not answer(h, {"e": ev(0.45, families=("fe",))}, replace(shipped, evidence_floor=0.16)).evidence
    question = Question(h, alike, cause=NEW)
    assert causes.planner_checks(question, shipped) == (len(without.evidence), 0)
    assert causes.planner_checks(question, replace(shipped, evidence_floor=0.24)) == (0, 0)


def test_a_young_model_computed_over_one_cause_answers_a_history_of_more_with_the_base_rates() -> None:
    """A young tenant's floor measured while it had one cause is None (no unrelated incidents); once the history has
    more causes, the floor is pending until the next run measures it, and the answer is the base rates. A tenant of
    one cause keeps its evidence (a one-record tenant's paraphrase keeps its hint); so does a judged tenant, whose
    evidence its guard judges instead of a floor."""
    shipped = CausesModel(weights=(-2.0, 1.5, causes.IDENTITY_WEIGHT, 0.0), novel_bias=0.9, novel_relevance=0.7)
    young = replace(shipped, young=True)
    one = TenantHistory({"deploy": 11})
    alike = {"deploy": ev(0.6, families=("fd",))}
    assert not causes.floor_pending(young, one) and answer(one, alike, young).evidence
    three = TenantHistory({"deploy": 11, "index": 1, "user": 1})
    assert causes.floor_pending(young, three)
    rare = {"index": ev(0.6, families=("fi",))}  # a look-alike of a rare cause: the dominant one is never marked
    pending = answer(three, rare, young)
    priors, p_new = three.priors()
    assert not pending.evidence and pending.novelty == round(p_new, 4)
    assert [(c.category, c.probability) for c in pending.causes] == [
        (c, round(priors[c], 4)) for c in sorted(priors, key=lambda c: (-priors[c], c))]
    assert causes.planner_checks(Question(three, rare, cause=NEW), young) == (0, 0)
    assert causes.planner_checks(Question(three, rare, cause=NEW), shipped)[0] >= 1  # the old answer: one wasted
    assert answer(three, rare, shipped).evidence  # judged (not young): no floor needed
    measured = replace(young, evidence_floor=0.1)  # the run landed: the floor decides
    assert not causes.floor_pending(measured, three) and answer(three, rare, measured).evidence
    assert CausesModel.from_json(young.to_json()) == young
    assert CausesModel.from_json({k: v for k, v in young.to_json().items() if k != "young"}).young is False
    lived = [Question(three, rare, cause="index") for _ in range(causes.MIN_QUESTIONS)]
    assert fit(lived, measured).young


def test_the_floor_is_stored_with_the_model_and_kept_by_a_fit() -> None:
    model = CausesModel(evidence_floor=0.123)
    assert CausesModel.from_json(model.to_json()) == model
    old = {k: v for k, v in CausesModel().to_json().items() if k != "evidence_floor"}
    assert CausesModel.from_json(old).evidence_floor is None
    h = TenantHistory({"a": 3, "b": 2})
    lived = [Question(h, {"a": ev(0.3)}, cause="a") for _ in range(causes.MIN_QUESTIONS)]
    assert fit(lived, model).evidence_floor == 0.123
    assert not causes.guard_judges(lived[:causes.GUARD_MIN_QUESTIONS - 1])
    assert causes.guard_judges(lived[:causes.GUARD_MIN_QUESTIONS])


def test_a_concept_alone_backs_a_cause_no_ranked_record_backs() -> None:
    """The symptom classifier can point at a cause none of whose records was ranked: it is listed with the evidence
    of its concept alone (has = 0), may be checked first, and carries its records as family ids."""
    h = TenantHistory({"a": 10, "b": 10, "c": 10})
    evidence = causes.with_concepts({"a": ev(0.05, families=("fa",))}, {"a": -1.0, "b": -1.0, "c": 2.5})
    assert evidence["c"].families == () and evidence["c"].vector()[0] == 0.0 and evidence["c"].concept == 2.5
    assert evidence["a"].families == ("fa",) and evidence["a"].concept == -1.0
    model = CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 1.5))
    p, _ = posterior(h, evidence, model)
    assert p["c"] > p["a"] and p["c"] > p["b"]
    ans = causes.answer(h, evidence, model, sharing={"c": ("fc1", "fc2")})
    first = ans.causes[0]
    assert (first.category, first.basis, first.family_ids) == ("c", "evidence", ("fc1", "fc2"))
    # without the concept weight the same evidence says nothing for c
    p0, _ = posterior(h, evidence, CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 0.0)))
    assert p0["c"] == pytest.approx(p0["b"])
    # a cause the symptoms point away from is not supported by its concept
    assert "b" not in causes.supported(evidence, {}, model)
    # `explain` shows what each cause's evidence was: the features its probability came from
    assert dict(ans.features)["c"] == (0.0, 0.0, 0.0, 2.5) and dict(ans.features)["a"][3] == -1.0


def test_the_novel_outcome_s_concept_raises_novelty_at_its_own_weight() -> None:
    """`with_concepts(..., novel=)` keeps the novel outcome's concept under NEW: the symptoms reading as a kind of
    incident the tenant never had raise `novelty` (at the model's `novel_concept` weight), and NEW is never a cause
    to mark, hint or explain as one."""
    h = TenantHistory({"a": 10, "b": 10, "c": 10})
    model = CausesModel(weights=(0.0, 1.0, causes.IDENTITY_WEIGHT, 1.0), novel_concept=1.5)
    plain = causes.with_concepts({"a": ev(0.05, families=("fa",))}, {"a": 0.2, "b": -0.5, "c": -0.5})
    unseen = causes.with_concepts({"a": ev(0.05, families=("fa",))}, {"a": 0.2, "b": -0.5, "c": -0.5}, novel=2.0)
    familiar = causes.with_concepts({"a": ev(0.05, families=("fa",))}, {"a": 0.2, "b": -0.5, "c": -0.5}, novel=-2.0)
    _, n_plain = posterior(h, plain, model)
    p_unseen, n_unseen = posterior(h, unseen, model)
    _, n_familiar = posterior(h, familiar, model)
    assert n_familiar < n_plain < n_unseen
    assert sum(p_unseen.values()) + n_unseen == pytest.approx(1.0)
    # the shift is the concept weight times the novel concept, in log odds of NEW against any cause
    p_plain, _ = posterior(h, plain, model)
    assert math.log(n_unseen / p_unseen["a"]) - math.log(n_plain / p_plain["a"]) == pytest.approx(1.5 * 2.0)
    assert NEW not in causes.supported(unseen, {}, model)
    ans = answer(h, unseen, model)
    assert NEW not in dict(ans.features) and all(c.category != NEW for c in ans.causes)
    assert ans.novel_concept == 2.0 and answer(h, plain, model).novel_concept is None
    # without its weight (a young tenant's model, or one stored before it existed) it says nothing
    young = CausesModel.from_json({k: v for k, v in model.to_json().items() if k != "novel_concept"})
    assert young.novel_concept == 0.0 and CausesModel.from_json(model.to_json()) == model
    assert posterior(h, unseen, young)[1] == pytest.approx(posterior(h, plain, young)[1])
    # a later call without it drops it, as it drops any stale concept
    assert NEW not in causes.with_concepts(unseen, {"a": 0.2})


def test_the_fit_s_gradient_includes_the_novel_outcome_s_concept() -> None:
    """The log posterior's gradient (`causes._gradient`) against central differences, on questions whose novel
    outcome carries a concept (its own weight, the last parameter)."""
    rng = random.Random(3)
    h = TenantHistory({"a": 6, "b": 3, "c": 2})
    questions = []
    for i in range(12):
        evidence = causes.with_concepts({"a": ev(rng.random() * 0.3, families=("fa",))},
                                        {c: rng.uniform(-2, 2) for c in ("a", "b", "c")}, novel=rng.uniform(-2, 2))
        questions.append(Question(h, evidence, cause=("a", "b", "c", NEW)[i % 4]))
    theta = np.array([0.3, 0.8, 1.0, 0.7, -0.2, 0.5, 0.9])
    centre, precision = np.zeros(7), np.ones(7)
    _, grad, _ = causes._gradient(theta, questions, centre, precision)
    for j in range(7):
        step = np.zeros(7)
        step[j] = 1e-5
        up = causes._gradient(theta + step, questions, centre, precision)[0]
        down = causes._gradient(theta - step, questions, centre, precision)[0]
        assert grad[j] == pytest.approx((up - down) / 2e-5, rel=1e-4, abs=1e-6)
