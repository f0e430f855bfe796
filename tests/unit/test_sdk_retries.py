"""The SDK sends a request the API turned away (429 over fair share, 503 database unavailable) again after its
Retry-After, a bounded number of times; every other answer, and the last refusal, reaches the caller as is."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from opslore import ApiError, AsyncClient, Client

WHOAMI = {"tenant": "t", "project": "default", "role": "agent", "key_id": None}


def transport(statuses: list[int], seen: list[str], retry_after: str | None = "2") -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        status = statuses.pop(0) if statuses else 200
        if status == 200:
            return httpx.Response(200, json=WHOAMI)
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return httpx.Response(status, headers=headers,
                              json={"error": {"code": "rate_limited", "message": "too many", "field": None}})
    return httpx.MockTransport(handle)


def test_a_turned_away_request_is_sent_again_after_its_retry_after() -> None:
    seen: list[str] = []
    waits: list[float] = []
    http = httpx.Client(base_url="http://opslore.test", transport=transport([429, 503], seen))
    with Client(api_key="k", http=http, sleep=waits.append) as ol:
        assert ol.whoami().tenant == "t"
    assert len(seen) == 3 and waits == [2.0, 2.0]


def test_retries_are_bounded_and_the_last_refusal_is_the_callers() -> None:
    seen: list[str] = []
    waits: list[float] = []
    http = httpx.Client(base_url="http://opslore.test", transport=transport([429] * 9, seen, retry_after="600"))
    with Client(api_key="k", http=http, sleep=waits.append, retries=2, max_wait=5.0) as ol, \
            pytest.raises(ApiError) as err:
        ol.whoami()
    assert err.value.status == 429 and len(seen) == 3 and waits == [5.0, 5.0]  # Retry-After capped at max_wait


def test_other_errors_are_not_retried() -> None:
    seen: list[str] = []
    waits: list[float] = []
    http = httpx.Client(base_url="http://opslore.test", transport=transport([422], seen))
    with Client(api_key="k", http=http, sleep=waits.append) as ol, pytest.raises(ApiError) as err:
        ol.whoami()
    assert err.value.status == 422 and len(seen) == 1 and waits == []


def test_the_async_client_retries_the_same_way() -> None:
    seen: list[str] = []

    async def run() -> str:
        http = httpx.AsyncClient(base_url="http://opslore.test", transport=transport([429], seen, retry_after="0"))
        async with AsyncClient(api_key="k", http=http) as ol:
            return (await ol.whoami()).tenant

    assert asyncio.run(run()) == "t" and len(seen) == 2
