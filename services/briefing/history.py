"""CauseHistory: the tenant's approved history as causes need it (base rates, novelty), read and remembered.

`read` takes two statements under the tenant's RLS: the incidents per root-cause category (a family's current
version lists every incident approved into it: a recurrence merged into a family is one more incident of its
cause), which the database keeps in `cause_tallies` in every writer's transaction (migration 0030: a few rows
per tenant, whatever the size of its history), and the records without a category (imported postmortems often
have none: their root causes are grouped by `group_uncategorised`, never dropped). The base rates need nothing
else (`causes.TenantHistory`).
`sharing_services` reads, for the service priors (`causes.service_priors`), the incidents per cause among the
current records that name one of the question's services.
`CauseHistories` remembers the answer per tenant and project under the tenant's index size (a new approval
moves it) for at most `ttl` seconds.
`read_profiles` reads, for the concept evidence (`symptoms`), each cause's records' stored vectors and reduces them
to the cause's class distribution; `CauseProfileCache` remembers it as `CauseHistories` does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from services.briefing.causes import TenantHistory
from services.briefing.symptoms import SymptomClassifier, profiles_of
from services.briefing.vectors import array_vector
from services.common.db import Cursor
from services.lexicon.analyzer import analyze

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
UNCATEGORISED_SIMILARITY = 0.8  # root causes whose word sets overlap this much are one cause (governance's rule)
UNCATEGORISED_CAP = 5000
_ACTIVE = """FROM memory_families f
  JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
  WHERE f.state = 'active' AND (%(project)s::text IS NULL OR f.project = %(project)s)"""
# incidents per category: a family's current version lists every incident approved into it (migration 0030)
_BY_CATEGORY = """SELECT category, sum(incidents) AS n FROM cause_tallies
  WHERE (%(project)s::text IS NULL OR project = %(project)s) GROUP BY category HAVING sum(incidents) > 0"""
_UNCATEGORISED = f"""SELECT f.family_id::text AS family_id, coalesce(v.root_cause, v.summary) AS root_cause,
  greatest(cardinality(v.source_incidents), 1) AS n
  {_ACTIVE} AND v.root_cause_category IS NULL
  ORDER BY coalesce(v.observed_at, v.valid_from), f.family_id LIMIT {UNCATEGORISED_CAP}"""

def _label(root_cause: str) -> str:
    words = " ".join(root_cause.split())
    return "uncategorised: " + (words[:60] + "..." if len(words) > 60 else words)


def group_uncategorised(rows: Sequence[tuple[str, str]]) -> dict[str, str]:
    """family_id -> cause label for records without a category, (family_id, root cause) oldest first: a record
    joins the first group whose root cause shares at least UNCATEGORISED_SIMILARITY of its words (Jaccard), else
    starts its own, named after its root cause."""
    groups: list[tuple[frozenset[str], str]] = []
    out: dict[str, str] = {}
    for family_id, root_cause in rows:
        words = frozenset(t for t in analyze(root_cause or "") if not t.startswith("concept:"))
        for seen, label in groups:
            union = len(words | seen)
            if union and len(words & seen) / union >= UNCATEGORISED_SIMILARITY:
                out[family_id] = label
                break
        else:
            label = _label(root_cause or family_id)
            groups.append((words, label))
            out[family_id] = label
    return out


@dataclass(frozen=True)
class CauseHistory:
    """The base rates' history and the cause of each uncategorised record."""

    history: TenantHistory
    uncategorised: dict[str, str] = field(default_factory=dict)  # family_id -> cause label

    def cause_of(self, family_id: str, category: str | None) -> str | None:
        return category if category is not None else self.uncategorised.get(family_id)


def read(cur: Cursor, project: str | None) -> CauseHistory:
    """Incidents per cause: a family counts every incident approved into it; records without a category count in
    the group of their root cause."""
    params = {"project": project}
    cur.execute(_BY_CATEGORY, params)
    counts: dict[str, int] = {r["category"]: int(r["n"]) for r in cur.fetchall()}
    cur.execute(_UNCATEGORISED, params)
    loose = cur.fetchall()
    grouped = group_uncategorised([(r["family_id"], r["root_cause"]) for r in loose])
    for r in loose:
        label = grouped[r["family_id"]]
        counts[label] = counts.get(label, 0) + int(r["n"])
    return CauseHistory(TenantHistory(counts=counts), grouped)


class SizeKeyed(Generic[K, V]):
    """A value per key, remembered while the tenant's index size is unchanged (a new approval moves it), `ttl`
    seconds at most."""

    def __init__(self, ttl: float = 60.0) -> None:
        self.ttl = ttl
        self._known: dict[K, tuple[float, int, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, size: int, load: Callable[[], V]) -> V:
        now = time.monotonic()
        with self._lock:
            hit = self._known.get(key)
        if hit is not None and hit[0] > now and hit[1] == size:
            return hit[2]
        value = load()
        with self._lock:
            self._known[key] = (now + self.ttl, size, value)
        return value


class CauseHistories:
    """`read`, remembered per (tenant, project) while the tenant's index size is unchanged (`SizeKeyed`)."""

    def __init__(self, ttl: float = 60.0) -> None:
        self._known: SizeKeyed[tuple[str, str | None], CauseHistory] = SizeKeyed(ttl)

    def get(self, cur: Cursor, tenant: str, project: str | None, size: int) -> CauseHistory:
        return self._known.get((tenant, project), size, lambda: read(cur, project))


SHARING_CAP = 5000  # incidents read per question for the service priors (the most recently valid first)
_SHARING = f"""SELECT f.family_id::text AS family_id, v.root_cause_category AS category,
  greatest(cardinality(v.source_incidents), 1) AS n
  FROM memory_versions v JOIN memory_families f ON f.family_id = v.family_id AND f.current_version = v.version
  WHERE v.state = 'active' AND f.state = 'active' AND v.services && %(services)s::text[]
    AND (%(project)s::text IS NULL OR f.project = %(project)s)
  ORDER BY v.valid_from DESC LIMIT {SHARING_CAP}"""


def sharing_services(cur: Cursor, services: list[str], project: str | None, history: CauseHistory
                     ) -> tuple[dict[str, float], dict[str, tuple[str, ...]]]:
    """(incidents per cause, their families per cause) among the tenant's current records that name one of
    `services` (the GIN index on the active versions' services)."""
    cur.execute(_SHARING, {"services": services, "project": project})
    near: dict[str, float] = {}
    families: dict[str, list[str]] = {}
    for r in cur.fetchall():
        cause = history.cause_of(r["family_id"], r["category"])
        if cause is None:
            continue
        near[cause] = near.get(cause, 0.0) + float(r["n"])
        families.setdefault(cause, []).append(r["family_id"])
    return near, {c: tuple(f[:10]) for c, f in families.items()}


MEMBERS_CAP = 5000  # records read per tenant for the causes' class profiles (the most recently valid first)
_MEMBERS = f"""SELECT f.family_id::text AS family_id, v.root_cause_category AS category,
  greatest(cardinality(v.source_incidents), 1) AS n, array_send(w.vector) AS vector
  FROM memory_families f
  JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
  JOIN version_vectors w ON w.family_id = v.family_id AND w.version = v.version AND w.model = %(model)s
  WHERE f.state = 'active' AND (%(project)s::text IS NULL OR f.project = %(project)s)
  ORDER BY coalesce(v.observed_at, v.valid_from) DESC, f.family_id LIMIT {MEMBERS_CAP}"""


@dataclass(frozen=True)
class CauseProfiles:
    """Each cause's class distribution (`symptoms.profile_of` its records' vectors' readings, each record once per
    incident approved into it) and its records, newest first."""

    profiles: dict[str, NDArray[np.float64]]
    members: dict[str, tuple[str, ...]]
    covered: NDArray[np.bool_]  # the classes some record is read as (`SymptomClassifier.covered`)


def read_profiles(cur: Cursor, model: str, project: str | None, history: CauseHistory,
                  classifier: SymptomClassifier) -> CauseProfiles:
    """The causes' class profiles from the current records' stored `model` vectors (one statement under RLS)."""
    cur.execute(_MEMBERS, {"model": model, "project": project})
    pairs: list[tuple[str, NDArray[np.float32]]] = []
    members: dict[str, list[str]] = {}
    for r in cur.fetchall():
        cause = history.cause_of(r["family_id"], r["category"])
        if cause is None:
            continue
        vector = array_vector(r["vector"])
        if vector.shape != (classifier.coef.shape[1],):
            continue
        pairs += [(cause, vector)] * int(r["n"])
        members.setdefault(cause, []).append(r["family_id"])
    readings = (classifier.probabilities(np.stack([v for _, v in pairs])) if pairs
                else np.zeros((0, len(classifier.classes))))
    return CauseProfiles(profiles_of([c for c, _ in pairs], readings, classifier.shares),
                         {c: tuple(f[:10]) for c, f in members.items()},
                         classifier.covered(readings))


class CauseProfileCache:
    """`read_profiles`, remembered per (tenant, project, model) while the tenant's index size is unchanged
    (`SizeKeyed`, as `CauseHistories`)."""

    def __init__(self, ttl: float = 60.0) -> None:
        self._known: SizeKeyed[tuple[str, str | None, str], CauseProfiles] = SizeKeyed(ttl)

    def get(self, cur: Cursor, tenant: str, project: str | None, size: int, model: str, history: CauseHistory,
            classifier: SymptomClassifier) -> CauseProfiles:
        return self._known.get((tenant, project, model), size,
                               lambda: read_profiles(cur, model, project, history, classifier))
