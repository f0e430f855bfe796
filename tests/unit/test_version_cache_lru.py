"""The version cache's bound: least recently used entries go first, lookups count hits and misses (pure)."""

from __future__ import annotations

from services.briefing.cache import _Bounded


def test_the_least_recently_used_entry_is_evicted_first() -> None:
    lru: _Bounded = _Bounded(2)
    lru.store({"a": 1, "b": 2})
    assert lru.lookup(["a"]) == ({"a": 1}, [])  # a is now the most recent
    lru.store({"c": 3})
    assert lru.lookup(["a", "b", "c"]) == ({"a": 1, "c": 3}, ["b"])
    assert (lru.counts.hits, lru.counts.misses) == (3, 1)


def test_storing_again_refreshes_an_entry_and_capacity_zero_keeps_nothing() -> None:
    lru: _Bounded = _Bounded(2)
    lru.store({"a": 1, "b": 2})
    lru.store({"a": 10})
    lru.store({"c": 3})
    assert lru.lookup(["a", "b", "c"]) == ({"a": 10, "c": 3}, ["b"])
    off: _Bounded = _Bounded(0)
    off.store({"a": 1})
    assert off.lookup(["a"]) == ({}, ["a"])
