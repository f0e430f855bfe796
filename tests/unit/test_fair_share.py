"""FairShare (services/api/fairness.py): token buckets per key and tenant, briefings in flight per key and tenant."""

from __future__ import annotations

import uuid

import pytest

from services.api.fairness import FairShare, Limits, RateLimited, retry_after_header
from services.common.auth import Principal


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def who(tenant: str, key: uuid.UUID | None = None) -> Principal:
    return Principal(key_id=key or uuid.uuid4(), tenant=tenant, project="p", role="agent")


def test_a_key_over_its_rate_is_refused_with_when_to_retry_and_recovers() -> None:
    clock = Clock()
    share = FairShare(Limits(key_rate=2, key_burst=2, tenant_rate=0, key_concurrent=0, tenant_concurrent=0), clock)
    a = who("A")
    for _ in range(2):
        with share.admit(a, "briefing"):
            pass
    with pytest.raises(RateLimited) as err, share.admit(a, "briefing"):
        pass
    assert err.value.status == 429 and err.value.retry_after == pytest.approx(0.5)
    assert retry_after_header(err.value) == "1"
    with share.admit(who("A"), "briefing"):  # another key of the same tenant is not this key's bucket
        pass
    clock.now = 0.5
    with share.admit(a, "briefing"):
        pass


def test_one_tenant_over_its_rate_leaves_another_tenant_alone() -> None:
    clock = Clock()
    share = FairShare(Limits(key_rate=0, tenant_rate=1, tenant_burst=3, key_concurrent=0, tenant_concurrent=0), clock)
    admitted = 0
    for _ in range(10):
        try:
            with share.admit(who("A"), "briefing"):
                admitted += 1
        except RateLimited:
            pass
    assert admitted == 3
    with share.admit(who("B"), "briefing"):
        pass


def test_a_refused_request_costs_the_other_bucket_nothing() -> None:
    clock = Clock()
    share = FairShare(Limits(key_rate=1, key_burst=1, tenant_rate=1, tenant_burst=2, key_concurrent=0,
                             tenant_concurrent=0), clock)
    k = who("A")
    with share.admit(k, "briefing"):
        pass
    with pytest.raises(RateLimited), share.admit(k, "briefing"):  # the key's bucket is empty; the tenant's keeps
        pass  # its token
    with share.admit(who("A"), "briefing"):
        pass


def test_briefings_in_flight_are_capped_per_key_and_tenant_and_released() -> None:
    share = FairShare(Limits(key_rate=0, tenant_rate=0, key_concurrent=1, tenant_concurrent=2))
    k1, k2, k3 = who("A"), who("A"), who("A")
    with share.admit(k1, "briefing"):
        with pytest.raises(RateLimited), share.admit(k1, "briefing"):
            pass
        with share.admit(k2, "briefing"):
            with pytest.raises(RateLimited) as err, share.admit(k3, "briefing"):
                pass
            assert err.value.retry_after == 1.0
            with share.admit(who("B"), "briefing"):
                pass
    with share.admit(k3, "briefing"):  # all released
        pass


def test_ingest_is_unlimited_unless_configured() -> None:
    share = FairShare(Limits())
    k = who("A")
    for _ in range(1000):
        with share.admit(k, "ingest"):
            pass
    limited = FairShare(Limits(ingest_key_rate=1, ingest_key_burst=1), Clock())
    with limited.admit(k, "ingest"):
        pass
    with pytest.raises(RateLimited), limited.admit(k, "ingest"):
        pass
