"""BriefingRanker: pure, explainable scoring of candidate records against a briefing request.

relevance = weighted match of signals, concepts, words, alert, services and entities, normalised by
the weights of what the request actually provides; quality = confidence adjusted by feedback, time
decay and environment fit. Rank by relevance x quality; abstain (drop) below `min_relevance` or when
only the service matches, so that looking similar is never enough.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from services.briefing.text import CONCEPT_PREFIX

WEIGHTS = {"signal": 0.30, "concept": 0.20, "text": 0.15, "alert": 0.15, "service": 0.12, "entity": 0.08,
           "semantic": 0.15}


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


@dataclass(frozen=True)
class RankPolicy:
    min_relevance: float = 0.3
    half_life_days: float = 30.0
    now: datetime | None = None


@dataclass
class Scored:
    row: dict[str, Any]
    score: float
    relevance: float
    confidence: float
    parts: dict[str, float] = field(default_factory=dict)


def _overlap(asked: frozenset[str], have: set[str]) -> float:
    return len(asked & have) / len(asked) if asked else 0.0


def match_parts(q: RankQuery, row: dict[str, Any], semantic: float | None = None) -> dict[str, float]:
    rec_tokens = set(str(row.get("search_tokens") or "").split())
    return {
        "semantic": max(semantic or 0.0, 0.0),
        "signal": _overlap(q.signals, set(row["signals"])),
        "concept": _overlap(q.concepts, rec_tokens),
        "text": _overlap(q.words, rec_tokens),
        "alert": 1.0 if q.alert and q.alert == row.get("alert_name") else 0.0,
        "service": 1.0 if q.services & set(row["services"]) else 0.0,
        "entity": _overlap(q.entities, set(row["entities"]) | set(row["services"])),
    }


def available(q: RankQuery, semantic: bool = False) -> dict[str, bool]:
    return {"semantic": semantic, "signal": bool(q.signals), "concept": bool(q.concepts), "text": bool(q.words),
            "alert": q.alert is not None, "service": bool(q.services), "entity": bool(q.entities)}


def relevance(q: RankQuery, parts: dict[str, float], semantic: bool = False) -> float:
    have = available(q, semantic)
    total = sum(w for k, w in WEIGHTS.items() if have[k])
    if total == 0:
        return 0.0
    return sum(WEIGHTS[k] * parts[k] for k in WEIGHTS if have[k]) / total


def is_specific(parts: dict[str, float]) -> bool:
    """Something beyond 'same service' must match: a signal, a concept, words, an entity or the alert."""
    return parts["signal"] > 0 or parts["concept"] > 0 or parts["text"] >= 0.15 or parts["entity"] > 0 \
        or parts["alert"] > 0 or parts.get("semantic", 0.0) >= 0.5


def adjusted_confidence(row: dict[str, Any]) -> float:
    value = float(row["confidence"]) + 0.05 * int(row.get("adopted", 0)) - 0.15 * int(row.get("refuted", 0))
    return round(min(max(value, 0.05), 0.99), 3)


def decay(row: dict[str, Any], policy: RankPolicy) -> float:
    if row.get("memory_type") == "procedural" or policy.now is None or policy.half_life_days <= 0:
        return 1.0
    seen = row.get("last_verified_at") or row.get("observed_at")
    if seen is None:
        return 1.0
    age_days = max((policy.now - seen).total_seconds() / 86400.0, 0.0)
    return math.pow(0.5, age_days / policy.half_life_days)


def environment_fit(q: RankQuery, row: dict[str, Any]) -> float:
    pairs = ((q.environment, row.get("environment")), (q.cluster, row.get("cluster")),
             (q.version, row.get("version_range")), (q.topology, row.get("topology_fingerprint")))
    mismatches = sum(1 for asked, have in pairs if asked and have and asked != have)
    return 0.85 ** mismatches


def applicable(q: RankQuery, row: dict[str, Any]) -> bool:
    """Hard filter: a reviewer-restricted record is dropped when the request is outside its scope."""
    if not row.get("applicability_restricted"):
        return True
    pairs = ((q.environment, row.get("environment")), (q.cluster, row.get("cluster")),
             (q.version, row.get("version_range")), (q.topology, row.get("topology_fingerprint")))
    return all(not (asked and have) or asked == have for asked, have in pairs)


def score(q: RankQuery, row: dict[str, Any], policy: RankPolicy,
          similarities: dict[tuple[str, int], float] | None = None) -> Scored:
    sim = similarities.get((str(row["family_id"]), int(row["version"]))) if similarities else None
    parts = match_parts(q, row, sim)
    rel = relevance(q, parts, semantic=similarities is not None)
    conf = adjusted_confidence(row)
    dec = decay(row, policy)
    env = environment_fit(q, row)
    quality = (0.5 + 0.5 * conf) * (0.8 + 0.2 * dec) * env
    explain = {**{f"match_{k}": round(v, 3) for k, v in parts.items()}, "relevance": round(rel, 4),
               "confidence": conf, "decay": round(dec, 4), "environment_fit": round(env, 3)}
    return Scored(row=row, score=round(rel * quality, 4), relevance=rel, confidence=conf, parts=explain)


def rank(q: RankQuery, rows: list[dict[str, Any]], policy: RankPolicy, limit: int,
         similarities: dict[tuple[str, int], float] | None = None) -> list[Scored]:
    """`similarities`: embedding cosine per (family_id, version) when the semantic branch answered."""
    kept: list[Scored] = []
    for row in rows:
        if not applicable(q, row):
            continue
        s = score(q, row, policy, similarities)
        specific = is_specific({k.removeprefix("match_"): v for k, v in s.parts.items() if k.startswith("match_")})
        if specific and s.relevance >= policy.min_relevance:
            kept.append(s)
    kept.sort(key=lambda s: (-s.score, -s.relevance, str(s.row["family_id"])))
    return kept[:limit]
