"""BriefingRanker: pure, explainable scoring of retrieved record versions against a briefing request.

Relevance is fused from independent channels, each a strength in [0, 1]:

  lexical    BM25 (tf = 1, the analyzer dedupes) over the record's words, idf from the tenant's own index,
             relative to the idf of a word only one version has, so a word unique to one record weighs 1
             whatever the corpus size;
             generic SRE words ("error", "latency", "service") count a quarter
  concept    the same over alias concepts (`concept:*`, both languages), which are stronger evidence
  structured exact alert name, share of requested signals the record has, entities, same service
  misleading a requested signal that this record marked misleading (its lesson is about that signal)
  semantic   embedding similarity, when the optional branch answered, mapped through the embedder's
             calibrated floor and ceiling

and fused with a noisy-OR, relevance = 1 - prod(1 - s): a channel the request cannot use, or a field
memory has no vocabulary for (a new service, alert or signal name), adds nothing and subtracts nothing.

Abstention (the rule `explain` reports): a hint needs relevance >= `min_relevance` AND a specific match
(anything beyond "same service"). Ranking then multiplies relevance by quality (confidence adjusted by
feedback, time decay, environment fit) and by the share of the evidence that points at the record's
root-cause category among everything retrieved for this question (`infer_categories`), so several
similar past incidents reinforce their common lesson.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from services.briefing.facts import RecordFacts
from services.lexicon.analyzer import CONCEPT_PREFIX, GENERIC_TERMS
from services.lexicon.index import CorpusStats

K1, B = 1.2, 0.75
GENERIC_WEIGHT = 0.25
STRUCTURED = {"alert": 0.45, "signal": 0.6, "entity": 0.3, "service": 0.2}
MISLEADING_STRENGTH = 0.5
_WEIGHT = {**STRUCTURED, "lexical": 1.0, "concept": 1.0, "misleading": 1.0, "semantic": 1.0}


@dataclass(frozen=True)
class RankQuery:
    alert: str | None
    services: frozenset[str]
    signals: frozenset[str]
    entities: frozenset[str]
    tokens: frozenset[str]
    environment: str | None = None
    cluster: str | None = None
    version: str | None = None
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
        return bool(self.environment or self.cluster or self.version or self.topology)


@dataclass(frozen=True)
class RankPolicy:
    # calibrated on replay/realworld (real postmortems): see README "Recall on real incidents"
    min_relevance: float = 0.5
    half_life_days: float = 30.0
    now: datetime | None = None
    lexical_scale: float = 4.0  # normalised BM25 mass at which the lexical strength reaches 1 - 1/e
    concept_scale: float = 1.2
    category_weight: float = 0.5
    semantic_floor: float = 0.0  # cosine at or below which the semantic channel says nothing
    semantic_ceiling: float = 1.0  # cosine at which it is certain


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


def channels(q: RankQuery, row: RecordFacts, stats: CorpusStats, policy: RankPolicy,
             semantic: float | None = None, weights: TermWeights | None = None) -> dict[str, float]:
    """Each channel's strength in [0, 1] for this record (the ranker's inner loop: ~70 rows per briefing)."""
    weights = weights or TermWeights.of(q, stats)
    sem = 0.0
    if semantic is not None and policy.semantic_ceiling > policy.semantic_floor:
        sem = min(max((semantic - policy.semantic_floor) / (policy.semantic_ceiling - policy.semantic_floor), 0.0), 1.0)
    words, concepts = _mass(weights.words, row.lexemes), _mass(weights.concepts, row.lexemes)
    if words or concepts:  # the length normalisation, once for both
        norm = _bm25_norm(row, stats)
        words, concepts = words * norm, concepts * norm
    return {
        "lexical": 1.0 - math.exp(-words / policy.lexical_scale) if words > 0 else 0.0,
        "concept": 1.0 - math.exp(-concepts / policy.concept_scale) if concepts > 0 else 0.0,
        "alert": 1.0 if q.alert and q.alert == row.alert_name else 0.0,
        "signal": len(q.signals & row.signals) / len(q.signals) if q.signals else 0.0,
        "entity": len(q.entities & row.entities.union(row.services)) / len(q.entities) if q.entities else 0.0,
        "service": 1.0 if not q.services.isdisjoint(row.services) else 0.0,
        "misleading": MISLEADING_STRENGTH if not q.signals.isdisjoint(row.misleading_signals) else 0.0,
        "semantic": sem,
    }


def fuse(parts: dict[str, float]) -> float:
    """Noisy-OR of the channels; structured ones enter with their weights (a channel at 0 multiplies by 1)."""
    miss = 1.0
    for name, strength in parts.items():
        if strength:
            miss *= 1.0 - _WEIGHT.get(name, 1.0) * strength
    return 1.0 - miss


def is_specific(parts: dict[str, float]) -> bool:
    """Something beyond 'same service' must match."""
    return (parts["lexical"] >= 0.25 or parts["concept"] > 0 or parts["signal"] > 0 or parts["alert"] > 0
            or parts["entity"] > 0 or parts["misleading"] > 0 or parts["semantic"] >= 0.5)


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
    return ((q.environment, row.environment), (q.cluster, row.cluster), (q.version, row.version_range),
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


def score(q: RankQuery, row: RecordFacts, policy: RankPolicy, stats: CorpusStats,
          semantic: float | None = None, weights: TermWeights | None = None) -> Scored:
    return _scored(q, row, policy, channels(q, row, stats, policy, semantic, weights))


def _scored(q: RankQuery, row: RecordFacts, policy: RankPolicy, parts: dict[str, float],
            rel: float | None = None) -> Scored:
    rel = fuse(parts) if rel is None else rel
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


def rank(q: RankQuery, rows: list[RecordFacts], policy: RankPolicy, limit: int,
         similarities: dict[tuple[str, int], float] | None = None,
         stats: CorpusStats | None = None) -> Ranked:
    """`similarities`: embedding cosine per (family_id, version) when the semantic branch answered;
    `stats`: the tenant's BM25 statistics (default: those of `rows`)."""
    stats = stats if stats is not None else stats_from_rows(rows)
    weights = TermWeights.of(q, stats)
    kept: list[Scored] = []
    for row in rows:
        if not applicable(q, row):
            continue
        sim = similarities.get(row.key) if similarities else None
        parts = channels(q, row, stats, policy, sim, weights)
        if is_specific(parts) and (rel := fuse(parts)) >= policy.min_relevance:
            kept.append(_scored(q, row, policy, parts, rel))
    shares = infer_categories(kept)
    rule = f"relevance >= {policy.min_relevance} and a match beyond the service"
    for s in kept:
        share = shares.get(s.facts.root_cause_category or "", 0.0)
        s.score = round(s.score * (1.0 + policy.category_weight * share), 4)
        s.category_share, s.rule = share, rule
    kept.sort(key=lambda s: (-s.score, -s.relevance, s.facts.family_id))  # uuid order is its hex string's
    return Ranked(kept[:limit], shares)
