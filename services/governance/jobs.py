"""Governance jobs: pure functions from governed facts to proposals (seed 000 "Phase 4", seed 002).

No clock, no randomness, no I/O: `now` and the policy are arguments, so the same facts always give the
same proposals (and the same fingerprints, which keep one open proposal per finding). Every proposal
carries what it was based on (family id and version as read), its reason and the exact change.

Jobs:
- `expire`: the validity window has passed.
- `stale`: not verified within the horizon -> a re-verification request (audit marker). Age alone never
  expires a lesson: expiry comes from a validity window, disuse or refutation.
- `duplicate`: same project and root-cause category, near-identical root cause and signals -> one
  consolidated version of the family with the most sources, the others marked consolidated into it. A record
  without a category (an imported postmortem's, usually: teams seldom write one) is compared by its root
  cause's words alone, at the stricter `uncategorised_similarity`: the same postmortem imported from the wiki
  and again from an export is found here, never merged on import.
- `never_hit`: never cited by a briefing within `never_hit_days` of its creation -> expire.
- `low_confidence`: refuted more often than adopted, at least `min_refutations` times -> retract.
- `promote`: pending candidates of >= 2 incidents with the same category and overlapping signals, and no
  active family for them yet -> one consolidated long-term record (confidence raised with the count).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

JOBS = ("expire", "stale", "duplicate", "never_hit", "low_confidence", "promote")
_WORD = re.compile(r"[a-z0-9_]+|[\u3400-\u9fff]")
_STOP = frozenset("a an the of to in on by for and or from with was were is are be at as its it".split())


@dataclass(frozen=True)
class Family:
    """An active family's current version, with its use."""

    family_id: UUID
    version: int
    project: str
    created_at: datetime
    summary: str
    root_cause: str | None
    category: str | None
    signals: frozenset[str]
    source_incidents: tuple[str, ...]
    valid_until: datetime | None
    last_verified_at: datetime | None
    valid_from: datetime
    adopted: int = 0
    refuted: int = 0
    last_cited_at: datetime | None = None
    level: str = "long"


@dataclass(frozen=True)
class Candidate:
    """A pending Memory Candidate (it passed the evidence gate; nobody reviewed it yet)."""

    candidate_id: UUID
    project: str
    incident_id: str
    category: str | None
    signals: frozenset[str]
    confidence: float


@dataclass(frozen=True)
class Policy:
    now: datetime
    stale_after_days: int = 90
    never_hit_days: int = 90
    min_refutations: int = 2
    duplicate_similarity: float = 0.5
    uncategorised_similarity: float = 0.8  # root-cause Jaccard when either record has no category


@dataclass(frozen=True)
class Proposal:
    kind: str
    project: str
    family_ids: tuple[UUID, ...]
    reason: str
    change: dict[str, Any]
    based_on: tuple[tuple[UUID, int], ...]
    candidate_ids: tuple[UUID, ...] = field(default=())

    @property
    def fingerprint(self) -> str:
        basis = [f"{f}:{v}" for f, v in sorted(self.based_on)] + sorted(str(c) for c in self.candidate_ids)
        return f"{self.kind}|{self.change.get('action')}|{','.join(basis)}"


def words(text: str | None) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall((text or "").lower()) if w not in _STOP)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _single(kind: str, f: Family, action: str, reason: str) -> Proposal:
    return Proposal(kind, f.project, (f.family_id,), reason, {"action": action}, ((f.family_id, f.version),))


def expire(families: Iterable[Family], policy: Policy) -> list[Proposal]:
    return [_single("expire", f, "expire", f"valid until {f.valid_until:%Y-%m-%d}, which has passed")
            for f in families if f.valid_until is not None and f.valid_until <= policy.now and f.level != "permanent"]


def stale(families: Iterable[Family], policy: Policy) -> list[Proposal]:
    out = []
    horizon = timedelta(days=policy.stale_after_days)
    for f in families:
        checked = f.last_verified_at or f.valid_from
        if f.level == "permanent" or policy.now - checked <= horizon:
            continue
        out.append(_single("stale", f, "reverify", f"not verified since {checked:%Y-%m-%d} "
                                                   f"(horizon {policy.stale_after_days} days): run its checks"))
    return out


def never_hit(families: Iterable[Family], policy: Policy) -> list[Proposal]:
    age = timedelta(days=policy.never_hit_days)
    return [_single("never_hit", f, "expire", f"never cited by a briefing in {policy.never_hit_days} days")
            for f in families
            if f.last_cited_at is None and policy.now - f.created_at > age and f.level != "permanent"]


def low_confidence(families: Iterable[Family], policy: Policy) -> list[Proposal]:
    return [_single("low_confidence", f, "retract", f"refuted {f.refuted} times, adopted {f.adopted} times")
            for f in families if f.refuted >= policy.min_refutations and f.refuted > f.adopted]


def _clusters(items: list[Any], same: Callable[[Any, Any], bool]) -> list[list[Any]]:
    """Connected components of the `same` relation (union-find), in input order."""
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if same(items[i], items[j]):
                parent[root(j)] = root(i)
    groups: dict[int, list[Any]] = {}
    for i, item in enumerate(items):
        groups.setdefault(root(i), []).append(item)
    return [g for g in groups.values() if len(g) > 1]


def duplicate(families: Iterable[Family], policy: Policy) -> list[Proposal]:
    def same(a: Family, b: Family) -> bool:
        if a.project != b.project or jaccard(a.signals, b.signals) < policy.duplicate_similarity:
            return False
        causes = words(a.root_cause), words(b.root_cause)
        if a.category is not None and b.category is not None:
            return a.category == b.category and jaccard(*causes) >= policy.duplicate_similarity
        return all(causes) and jaccard(*causes) >= policy.uncategorised_similarity

    out = []
    ordered = sorted(families, key=lambda f: (f.created_at, str(f.family_id)))
    for group in _clusters(ordered, same):
        keeper = max(group, key=lambda f: (len(f.source_incidents), -f.created_at.timestamp(), str(f.family_id)))
        others = [f for f in group if f is not keeper]
        incidents = sorted({i for f in group for i in f.source_incidents})
        out.append(Proposal(
            "duplicate", keeper.project, tuple(f.family_id for f in [keeper, *others]),
            f"{len(group)} records {_of_category(group)}state the same root cause; consolidated they "
            f"cite incidents {', '.join(incidents)}",
            {"action": "consolidate", "keeper": str(keeper.family_id),
             "merged": [str(f.family_id) for f in others]},
            tuple((f.family_id, f.version) for f in [keeper, *others])))
    return out


def _of_category(group: list[Family]) -> str:
    named = sorted({f.category for f in group if f.category})
    return f"of category {', '.join(named)} " if named else "without a category "


def promote(candidates: Iterable[Candidate], families: Iterable[Family], policy: Policy) -> list[Proposal]:
    covered = {(f.project, f.category) for f in families if f.category}

    def same(a: Candidate, b: Candidate) -> bool:
        return (a.project == b.project and a.category is not None and a.category == b.category
                and a.incident_id != b.incident_id and bool(a.signals & b.signals))

    pending = sorted((c for c in candidates if (c.project, c.category) not in covered),
                     key=lambda c: (c.incident_id, str(c.candidate_id)))
    out = []
    for group in _clusters(pending, same):
        incidents = sorted({c.incident_id for c in group})
        if len(incidents) < 2:
            continue
        confidence = min(0.95, max(c.confidence for c in group) + 0.05 * (len(incidents) - 1))
        out.append(Proposal(
            "promote", group[0].project, (),
            f"category {group[0].category} with overlapping signals recurred in {len(incidents)} incidents "
            f"({', '.join(incidents)})",
            {"action": "promote", "candidates": [str(c.candidate_id) for c in group],
             "confidence": round(confidence, 3)},
            (), tuple(c.candidate_id for c in group)))
    return out


def propose(jobs: Iterable[str], families: list[Family], candidates: list[Candidate],
            policy: Policy) -> list[Proposal]:
    """All proposals of the requested jobs, in job order."""
    out: list[Proposal] = []
    for job in jobs:
        if job == "promote":
            out += promote(candidates, families, policy)
        else:
            out += {"expire": expire, "stale": stale, "duplicate": duplicate, "never_hit": never_hit,
                    "low_confidence": low_confidence}[job](families, policy)
    return out
