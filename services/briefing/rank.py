"""The briefing's ranking: pure, explainable scoring of retrieved record versions against a question.

Two decisions, two models (see README "Recall on real incidents" and `replay/ranker_fit.py`):

Ranking. The text evidence that a record is the same kind of incident is a logistic model over features of
the question and the record, fitted on the training part of the real-incident corpus (each history incident
asked with its own symptoms against the others: same root-cause class or not) and shipped as data
(`data/ranker.json`, per embedding model, with a lexical-only variant for when the embedding is off or down):

  semantic       cosine of the question's and the record's embeddings (symptoms and lesson)
  semantic_gap   that cosine minus the best cosine among this question's candidates (<= 0)
  semantic_rank  1 / the record's rank by cosine among the question's candidates
  lexical        log(1 + BM25 mass): the question's words the record has, each weighted by the tenant's idf
                 relative to that of a word only one version has (generic SRE words count a quarter), times
                 the BM25 length norm of the record
  lexical_share  that mass over the best mass among this question's candidates
  concept        log(1 + the same mass over alias concepts, `concept:*`, which bridge both languages)

The model's probability is then combined by a noisy-OR with the structured channels, identity evidence that
a tenant's own history has and a corpus of many organisations cannot (an organisation names its alerts and
signals the same way each time): exact alert name, share of requested signals, entities, same service, and
a requested signal that the record marked misleading. Their weights are documented priors, not fitted.

Abstention (the rule `explain` reports): a hint needs relevance >= the model's `min_relevance` (chosen on the
tuning questions by the outcome, checks sent against recurrences found: `replay/ranker_fit.py`) AND a match
beyond "same service". Ranking multiplies relevance by quality (confidence adjusted by feedback, time decay,
environment fit) and by the share of the evidence that points at the record's root-cause category among
everything kept for this question (`infer_categories`), so several similar past incidents reinforce their
common lesson; the hints then show the best record of each category first (`distinct_causes_first`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, cached_property
from importlib import resources
from typing import Any

from services.briefing.facts import RecordFacts
from services.lexicon.analyzer import CONCEPT_PREFIX, GENERIC_TERMS
from services.lexicon.index import CorpusStats

K1, B = 1.2, 0.75  # Okapi BM25's usual values
GENERIC_WEIGHT = 0.25
STRUCTURED = {"alert": 0.45, "signal": 0.6, "entity": 0.3, "service": 0.2, "misleading": 0.5}
TEXT_FEATURES = ("semantic", "semantic_gap", "semantic_rank", "lexical", "lexical_share", "concept")


@dataclass(frozen=True)
class TextModel:
    """A fitted logistic model of "same kind of incident" over `features`, and where it abstains."""

    name: str
    features: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    min_relevance: float
    category_weight: float

    def probability(self, x: dict[str, float]) -> float:
        z = self.intercept
        for name, w in zip(self.features, self.coefficients, strict=True):
            z += w * x.get(name, 0.0)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    @classmethod
    def of(cls, name: str, doc: dict[str, Any]) -> TextModel:
        return cls(name=name, features=tuple(doc["features"]),
                   coefficients=tuple(float(c) for c in doc["coefficients"]),
                   intercept=float(doc["intercept"]), min_relevance=float(doc["min_relevance"]),
                   category_weight=float(doc["category_weight"]))


@cache
def shipped_models() -> dict[str, TextModel]:
    """The fitted models shipped with the package (`data/ranker.json`): one per embedding model key, and
    `lexical` for a question answered without an embedding."""
    doc = json.loads((resources.files("services.briefing") / "data" / "ranker.json").read_text(encoding="utf-8"))
    return {name: TextModel.of(name, m) for name, m in doc["models"].items()}


def text_model(embedding_model: str | None) -> TextModel:
    """The shipped model for an embedding model key (None: the lexical one). An embedding model nobody fitted
    falls back to the lexical model, whose answer does not depend on the cosines' scale."""
    models = shipped_models()
    return models.get(embedding_model or "lexical", models["lexical"])


@dataclass(frozen=True)
class RankQuery:
    alert: str | None
    services: frozenset[str]
    signals: frozenset[str]
    entities: frozenset[str]
    tokens: frozenset[str]
    environment: str | None = None
    cluster: str | None = None
    service_version: str | None = None  # the deployed software's, not a record's version
    topology: str | None = None

    @cached_property
    def concepts(self) -> frozenset[str]:
        return frozenset(t for t in self.tokens if t.startswith(CONCEPT_PREFIX))

    @cached_property
    def words(self) -> frozenset[str]:
        return self.tokens - self.concepts

    @cached_property
    def scoped(self) -> bool:
        """The question names an environment, cluster, version or topology."""
        return bool(self.environment or self.cluster or self.service_version or self.topology)


@dataclass(frozen=True)
class RankPolicy:
    half_life_days: float = 30.0
    now: datetime | None = None
    model: TextModel = field(default_factory=lambda: text_model(None))
    min_relevance: float | None = None  # the tenant's calibrated point, or an operator's override
    source: str = "shipped"  # where the abstention point comes from (shown in `explain`)

    @property
    def threshold(self) -> float:
        return self.model.min_relevance if self.min_relevance is None else self.min_relevance


@dataclass(slots=True)
class Scored:
    facts: RecordFacts
    score: float
    relevance: float
    confidence: float
    channels: dict[str, float] = field(default_factory=dict)
    decay: float = 1.0
    environment_fit: float = 1.0
    category_share: float = 0.0
    rule: str = ""

    @property
    def parts(self) -> dict[str, float | str]:
        """The `explain` of a hint: every channel, the fused relevance, the quality factors and the rule
        (built only for the hints that are shown)."""
        return {**{f"match_{k}": round(v, 3) for k, v in self.channels.items()},
                "relevance": round(self.relevance, 4), "confidence": self.confidence, "decay": round(self.decay, 4),
                "environment_fit": round(self.environment_fit, 3), "category_share": self.category_share,
                "abstain_rule": self.rule}


def stats_from_rows(rows: Iterable[RecordFacts]) -> CorpusStats:
    """Statistics of the retrieved rows themselves, for callers without the tenant's index (tests)."""
    df: dict[str, int] = {}
    total = docs = 0
    for row in rows:
        lex = row.lexemes
        docs += 1
        total += len(lex)
        for t in lex:
            df[t] = df.get(t, 0) + 1
    return CorpusStats(docs=docs, avg_length=max(total / docs, 1.0) if docs else 1.0, df=df)


def _weight(t: str, stats: CorpusStats) -> float:
    """idf relative to that of a word only one version has: 1 for the rarest word, at any corpus size."""
    rarest = math.log(1.0 + (stats.docs - 0.5) / 1.5)
    w = min(stats.idf(t) / rarest, 1.0) if rarest > 0 else 0.0
    return w * GENERIC_WEIGHT if t in GENERIC_TERMS else w


def _bm25_norm(row: RecordFacts, stats: CorpusStats) -> float:
    return (K1 + 1) / (1 + K1 * (1 - B + B * float(row.doc_length) / stats.avg_length))


def _mass(weights: tuple[tuple[str, float], ...], lexemes: frozenset[str]) -> float:
    """Sum of the weights of the question's terms that the record has, in the terms' sorted order (a float sum
    depends on its order, and a frozenset's order on the process's string hash seed)."""
    mass = 0.0
    for t, w in weights:
        if t in lexemes:
            mass += w
    return mass


@dataclass(frozen=True)
class TermWeights:
    """The question's words and concepts with their weights, computed once per briefing."""

    words: tuple[tuple[str, float], ...]  # (term, weight), sorted by term
    concepts: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, q: RankQuery, stats: CorpusStats) -> TermWeights:
        if stats.docs == 0:
            return cls((), ())
        return cls(tuple((t, _weight(t, stats)) for t in sorted(q.words)),
                   tuple((t, _weight(t, stats)) for t in sorted(q.concepts)))


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one record shares with the question before any comparison with the other candidates."""

    words: float  # BM25 mass of the question's words in the record
    concepts: float
    cosine: float | None  # None: no embedding for this record or question

    @classmethod
    def of(cls, row: RecordFacts, stats: CorpusStats, weights: TermWeights, cosine: float | None) -> Evidence:
        words, concepts = _mass(weights.words, row.lexemes), _mass(weights.concepts, row.lexemes)
        if words or concepts:  # the length normalisation, once for both
            norm = _bm25_norm(row, stats)
            words, concepts = words * norm, concepts * norm
        return cls(words, concepts, cosine)


def text_features(e: Evidence, best_words: float, best_cosine: float | None, cosine_rank: int = 0) -> dict[str, float]:
    """The text model's inputs for one record, given the best mass and cosine among the question's candidates and
    the record's rank by cosine (1 = nearest; 0: no cosine)."""
    cos = e.cosine if e.cosine is not None else 0.0
    return {
        "semantic": cos,
        "semantic_rank": 1.0 / cosine_rank if cosine_rank else 0.0,
        "semantic_gap": cos - best_cosine if e.cosine is not None and best_cosine is not None else 0.0,
        "lexical": math.log1p(e.words),
        "lexical_share": e.words / best_words if best_words > 0 else 0.0,
        "concept": math.log1p(e.concepts),
    }


def cosine_ranks(evidence: list[Evidence]) -> list[int]:
    """Each record's rank by cosine among the candidates (1 = nearest; ties by position; 0 without a cosine)."""
    order = sorted((i for i, e in enumerate(evidence) if e.cosine is not None),
                   key=lambda i: (-(evidence[i].cosine or 0.0), i))
    ranks = [0] * len(evidence)
    for r, i in enumerate(order, start=1):
        ranks[i] = r
    return ranks


def structured(q: RankQuery, row: RecordFacts) -> dict[str, float]:
    """The identity channels, each a strength in [0, 1]."""
    return {
        "alert": 1.0 if q.alert and q.alert == row.alert_name else 0.0,
        "signal": len(q.signals & row.signals) / len(q.signals) if q.signals else 0.0,
        "entity": len(q.entities & row.entities.union(row.services)) / len(q.entities) if q.entities else 0.0,
        "service": 1.0 if not q.services.isdisjoint(row.services) else 0.0,
        "misleading": 1.0 if not q.signals.isdisjoint(row.misleading_signals) else 0.0,
    }


def fuse(text: float, parts: dict[str, float]) -> float:
    """Noisy-OR of the text model's probability and the structured channels at their weights (a channel at 0
    multiplies by 1: what the question cannot use, or memory has no name for, neither adds nor dilutes)."""
    miss = 1.0 - text
    for name, strength in parts.items():
        if strength:
            miss *= 1.0 - STRUCTURED[name] * strength
    return 1.0 - miss


def is_specific(text: float, parts: dict[str, float], threshold: float) -> bool:
    """Something beyond 'same service' must match: the text on its own, or an identity channel but the service."""
    return text >= threshold or any(v > 0 for k, v in parts.items() if k != "service")


def adjusted_confidence(row: RecordFacts) -> float:
    value = row.confidence + 0.05 * row.adopted - 0.15 * row.refuted
    return round(min(max(value, 0.05), 0.99), 3)


def decay(row: RecordFacts, policy: RankPolicy) -> float:
    if row.memory_type == "procedural" or policy.now is None or policy.half_life_days <= 0:
        return 1.0
    seen = row.last_verified_at or row.observed_at
    if seen is None:
        return 1.0
    age_days = max((policy.now - seen).total_seconds() / 86400.0, 0.0)
    return math.pow(0.5, age_days / policy.half_life_days)


def _scope_pairs(q: RankQuery, row: RecordFacts) -> tuple[tuple[str | None, str | None], ...]:
    """(asked, learned) for environment, cluster, version and topology."""
    return ((q.environment, row.environment), (q.cluster, row.cluster), (q.service_version, row.version_range),
            (q.topology, row.topology_fingerprint))


def environment_fit(q: RankQuery, row: RecordFacts) -> float:
    if not q.scoped:
        return 1.0
    pairs = _scope_pairs(q, row)
    mismatches = sum(1 for asked, have in pairs if asked and have and asked != have)
    return 0.85 ** mismatches


def applicable(q: RankQuery, row: RecordFacts) -> bool:
    """Hard filter: a reviewer-restricted record is dropped when the request is outside its scope."""
    if not row.applicability_restricted:
        return True
    return all(not (asked and have) or asked == have for asked, have in _scope_pairs(q, row))


def infer_categories(kept: list[Scored]) -> dict[str, float]:
    """Likely root-cause categories of the question: each retrieved record votes for its category with
    its relevance; shares sum to 1. Learned from the tenant's own approved records, nothing else."""
    votes: dict[str, float] = {}
    for s in kept:
        cat = s.facts.root_cause_category
        if cat:
            votes[cat] = votes.get(cat, 0.0) + s.relevance
    total = sum(votes.values())
    return {c: round(v / total, 4) for c, v in sorted(votes.items(), key=lambda kv: -kv[1])} if total else {}


def _scored(q: RankQuery, row: RecordFacts, policy: RankPolicy, parts: dict[str, float], rel: float) -> Scored:
    conf = adjusted_confidence(row)
    dec = decay(row, policy)
    env = environment_fit(q, row)
    quality = (0.5 + 0.5 * conf) * (0.8 + 0.2 * dec) * env
    return Scored(facts=row, score=round(rel * quality, 4), relevance=rel, confidence=conf, channels=parts,
                  decay=dec, environment_fit=env)


@dataclass(frozen=True)
class Ranked:
    """The hints to show, and the question's likely root-cause categories (shares summing to 1)."""

    hints: list[Scored]
    categories: dict[str, float]
    candidates: list[Scored] = field(default_factory=list)  # every applicable candidate, best score first


def rank(q: RankQuery, rows: list[RecordFacts], policy: RankPolicy, limit: int,
         similarities: dict[tuple[str, int], float] | None = None,
         stats: CorpusStats | None = None) -> Ranked:
    """`similarities`: embedding cosine per (family_id, version) when the semantic branch answered (then the
    policy's model should be the embedding's); `stats`: the tenant's BM25 statistics (default: those of `rows`)."""
    stats = stats if stats is not None else stats_from_rows(rows)
    weights = TermWeights.of(q, stats)
    rows = [row for row in rows if applicable(q, row)]
    evidence = [Evidence.of(row, stats, weights, similarities.get(row.key) if similarities else None) for row in rows]
    best_words = max((e.words for e in evidence), default=0.0)
    best_cosine = max((e.cosine for e in evidence if e.cosine is not None), default=None)
    ranks = cosine_ranks(evidence)
    model, threshold = policy.model, policy.threshold
    kept: list[Scored] = []
    every: list[Scored] = []
    for i, (row, e) in enumerate(zip(rows, evidence, strict=True)):
        features = text_features(e, best_words, best_cosine, ranks[i])
        text = model.probability(features)
        parts = structured(q, row)
        rel = fuse(text, parts)
        scored = _scored(q, row, policy, {**features, "text": text, **parts}, rel)
        every.append(scored)
        if is_specific(text, parts, threshold) and rel >= threshold:
            kept.append(scored)
    shares = infer_categories(kept)
    rule = f"relevance >= {threshold:.3f} ({model.name}, {policy.source}) and a match beyond the service"
    for s in kept:
        share = shares.get(s.facts.root_cause_category or "", 0.0)
        s.score = round(s.score * (1.0 + model.category_weight * share), 4)
        s.category_share, s.rule = share, rule
    kept.sort(key=_order)
    every.sort(key=_order)
    return Ranked(distinct_causes_first(kept)[:limit], shares, every)


def _order(s: Scored) -> tuple[float, float, Any]:
    return -s.score, -s.relevance, s.facts.family_id  # uuid order is its hex string's


def distinct_causes_first(ranked: list[Scored]) -> list[Scored]:
    """The best record of each root-cause category first (in rank order), then the others: a few hints are a few
    hypotheses, and a second record of a cause already shown says less than the first record of another (on the
    dev questions: Recall@5 0.41 -> 0.44 in English, 0.50 -> 0.56 in Chinese, Recall@1 unchanged). A record
    without a category counts as its own."""
    first, rest, seen = [], [], set()
    for s in ranked:
        category = s.facts.root_cause_category
        if category is not None and category in seen:
            rest.append(s)
            continue
        if category is not None:
            seen.add(category)
        first.append(s)
    return first + rest
