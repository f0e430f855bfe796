"""Waiting helpers for tests over the asynchronous pipeline (bounded, never sleeps blindly)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def eventually(probe: Callable[[], T | None], timeout: float = 30.0, interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        time.sleep(interval)


def episode_with(client: Any, incident: str, observations: int, timeout: float = 30.0) -> dict[str, Any]:
    """Wait until the incident's episode holds `observations` observations; return it."""

    def probe() -> dict[str, Any] | None:
        found: dict[str, Any] | None = client.episode(incident)
        return found if found and len(found["observations"]) >= observations else None

    return eventually(probe, timeout)
