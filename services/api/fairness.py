"""FairShare: one tenant, or one key, cannot take every core of an API process.

A briefing costs ~120 ms of CPU with the embedding; an agent loop gone wrong asks hundreds a second. Each API
process keeps, per key and per tenant:
- a token bucket on requests of each kind (`briefing`: briefings and record searches; `ingest`: ledger appends,
  off by default: evidence is accepted for as long as Kafka takes it), refilled at `rate` per second up to
  `burst`;
- a limit on the briefings it computes at once.
Over either, `admit` raises `RateLimited` (429, `Retry-After`: when the bucket holds a token again, or 1 s for a
concurrency limit) before the handler runs, so a limited ingest appends nothing. The limits are per process:
a deployment of N processes admits N times them (`OPSLORE_API_WORKERS`, pods). Buckets of keys not seen for a
while are forgotten (at most `MAX_TRACKED` of each kind).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from services.common.auth import Principal
from services.common.errors import OpsloreError
from services.common.settings import Settings

Kind = Literal["briefing", "ingest"]
MAX_TRACKED = 10_000


class RateLimited(OpsloreError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class TokenBucket:
    rate: float  # tokens per second
    burst: float
    tokens: float
    at: float

    def take(self, now: float) -> float:
        """0 when a token was taken, else the seconds until one will be there."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


@dataclass(frozen=True)
class Limits:
    """Per process; 0 turns a limit off."""

    key_rate: float = 20.0
    key_burst: float = 40.0
    tenant_rate: float = 50.0
    tenant_burst: float = 100.0
    ingest_key_rate: float = 0.0
    ingest_key_burst: float = 0.0
    key_concurrent: int = 2
    tenant_concurrent: int = 3


class FairShare:
    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._buckets: OrderedDict[tuple[str, str, str], TokenBucket] = OrderedDict()
        self._running: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def _bucket(self, scope: tuple[str, str, str], rate: float, burst: float, now: float) -> TokenBucket:
        bucket = self._buckets.get(scope)
        if bucket is None:
            bucket = TokenBucket(rate=rate, burst=max(burst, 1.0), tokens=max(burst, 1.0), at=now)
            self._buckets[scope] = bucket
            if len(self._buckets) > MAX_TRACKED:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(scope)
        return bucket

    def _rates(self, kind: Kind) -> list[tuple[str, float, float]]:
        lim = self.limits
        if kind == "ingest":
            return [("key", lim.ingest_key_rate, lim.ingest_key_burst)]
        return [("key", lim.key_rate, lim.key_burst), ("tenant", lim.tenant_rate, lim.tenant_burst)]

    @contextmanager
    def admit(self, principal: Principal, kind: Kind) -> Iterator[None]:
        """Admit one request of `kind` from `principal` (its concurrency released on exit) or raise RateLimited."""
        key = str(principal.key_id or "bootstrap")
        tenant = principal.tenant or "-"
        now = self.clock()
        with self._lock:
            waits = []
            for scope, rate, burst in self._rates(kind):
                if rate > 0:
                    ident = key if scope == "key" else tenant
                    waits.append((scope, self._bucket((kind, scope, ident), rate, burst, now)))
            taken = [(scope, b, b.take(now)) for scope, b in waits]
            due = [(scope, wait) for scope, _, wait in taken if wait > 0]
            if due:  # a refused request costs the buckets that would have admitted it nothing
                for _, b, wait in taken:
                    if wait == 0:
                        b.tokens += 1.0
                retry = max(wait for _, wait in due)
                raise RateLimited(f"too many {kind} requests for this {due[0][0]}; retry after {max(retry, 0.1):.1f}s",
                                  retry_after=retry)
            held: list[tuple[str, str]] = []
            if kind == "briefing":
                for scope, ident, cap in (("key", key, self.limits.key_concurrent),
                                          ("tenant", tenant, self.limits.tenant_concurrent)):
                    if cap > 0 and self._running.get((scope, ident), 0) >= cap:
                        for h in held:
                            self._running[h] -= 1
                        raise RateLimited(f"{cap} briefings already running for this {scope}", retry_after=1.0)
                    if cap > 0:
                        self._running[(scope, ident)] = self._running.get((scope, ident), 0) + 1
                        held.append((scope, ident))
        try:
            yield
        finally:
            with self._lock:
                for h in held:
                    self._running[h] -= 1
                    if not self._running[h]:
                        del self._running[h]


def retry_after_header(exc: RateLimited) -> str:
    return str(max(1, math.ceil(exc.retry_after)))


def limits_of(s: Settings) -> Limits:
    """The limits from the `OPSLORE_FAIR_*` settings."""
    return Limits(key_rate=s.fair_key_rate, key_burst=s.fair_key_burst, tenant_rate=s.fair_tenant_rate,
                  tenant_burst=s.fair_tenant_burst, ingest_key_rate=s.fair_ingest_key_rate,
                  ingest_key_burst=s.fair_ingest_key_burst, key_concurrent=s.fair_key_briefings,
                  tenant_concurrent=s.fair_tenant_briefings)
