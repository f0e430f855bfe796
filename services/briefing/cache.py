"""VersionCache: what a briefing reads of a record version that can never change, kept between briefings.

A memory version is written once. Its only column that is ever updated is `state` (with `state_changed_at`),
and the briefing never takes that from here: its SQL filters on state, the validity window and the family's
current pointer on every call, and reads the feedback counts fresh. Everything else the ranker matches on
(`RecordFacts`) and a hint shows (the detail columns) is fixed at write time, so reading it again for every
briefing only moves the same bytes. The lexemes and document length come from `version_search`, which a
lexical reindex rewrites (same analyzer name, new alias file): their entries are keyed by the generation of
the tenant's index as well (`CorpusStats.generation`, which every index write changes), so after a reindex
or any newly indexed version every entry of that tenant is a miss, never a stale hit.

Tenant safety: the cache answers only "what does this version say", never "which versions": a key is looked
up after the database returned it to the caller's tenant under RLS in the same transaction. One cache per
`BriefingService` (per process and database), bounded LRU, a lock around each access (the API runs its sync
handlers on a thread pool). Capacity 0 turns it off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from services.briefing.facts import RecordFacts

VersionKey = tuple[UUID, int]  # (family id, version)
FactsKey = tuple[UUID, int, int | None]  # (family id, version, generation of the tenant's index)
K = TypeVar("K")
V = TypeVar("V")


@dataclass
class CacheCounts:
    hits: int = 0
    misses: int = 0


class _Bounded:
    """An LRU map with hit/miss counts; every access under one lock. An OrderedDict, not cachetools' LRUCache:
    its lookups are C calls, and a briefing makes about 70 of them (6 us each through LRUCache.get)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._map: OrderedDict[Any, Any] | None = OrderedDict() if capacity > 0 else None
        self._lock = threading.Lock()
        self.counts = CacheCounts()

    def lookup(self, keys: Iterable[K]) -> tuple[dict[K, Any], list[K]]:
        """(found, missing), in the order of `keys`."""
        keys = list(keys)
        if self._map is None:
            self.counts.misses += len(keys)
            return {}, keys
        found: dict[K, Any] = {}
        missing: list[K] = []
        recent = self._map
        with self._lock:
            for k in keys:
                value = recent.get(k)
                if value is None:
                    missing.append(k)
                else:
                    recent.move_to_end(k)
                    found[k] = value
            self.counts.hits += len(found)
            self.counts.misses += len(missing)
        return found, missing

    def store(self, items: Mapping[K, V]) -> None:
        if self._map is None or not items:
            return
        recent = self._map
        with self._lock:
            for k, v in items.items():
                recent[k] = v
                recent.move_to_end(k)
            while len(recent) > self._capacity:
                recent.popitem(last=False)


class VersionCache:
    """Immutable parts of record versions: ranker facts (without feedback counts) and a hint's columns."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._facts = _Bounded(capacity)
        self._details = _Bounded(capacity)

    def facts(self, keys: Iterable[FactsKey]) -> tuple[dict[FactsKey, RecordFacts], list[FactsKey]]:
        return self._facts.lookup(keys)

    def store_facts(self, items: Mapping[FactsKey, RecordFacts]) -> None:
        self._facts.store(items)

    def details(self, keys: Iterable[VersionKey]) -> tuple[dict[VersionKey, dict[str, Any]], list[VersionKey]]:
        return self._details.lookup(keys)

    def store_details(self, items: Mapping[VersionKey, dict[str, Any]]) -> None:
        self._details.store(items)

    def counts(self) -> dict[str, CacheCounts]:
        return {"facts": self._facts.counts, "details": self._details.counts}
