"""The CLI's and replay's HTTP client paces itself on the API's fair share: a 429 (answered before any work) is
asked again after its Retry-After, a bounded number of times; any other error is raised at once."""

from __future__ import annotations

import httpx
import pytest

from services.cli.client import RATE_LIMIT_RETRIES, ApiError, OpsloreClient


def _client(statuses: list[int], seen: list[str]) -> OpsloreClient:
    answers = iter(statuses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        status = next(answers)
        if status == 429:
            return httpx.Response(429, headers={"Retry-After": "0"},
                                  json={"error": {"code": "rate_limited", "message": "slow down"}})
        if status >= 400:
            return httpx.Response(status, json={"error": {"code": "bad", "message": "no"}})
        return httpx.Response(200, json={"briefing_id": "b1"})

    http = httpx.Client(base_url="http://opslore.test", transport=httpx.MockTransport(handler))
    return OpsloreClient("http://opslore.test", "k1", http=http)


def test_a_429_is_asked_again_until_it_is_answered() -> None:
    seen: list[str] = []
    assert _client([429, 429, 200], seen).briefing({"text": "x"})["briefing_id"] == "b1"
    assert seen == ["Bearer k1"] * 3


def test_a_429_that_persists_is_raised_after_the_retries() -> None:
    seen: list[str] = []
    with pytest.raises(ApiError) as err:
        _client([429] * (RATE_LIMIT_RETRIES + 1), seen).briefing({"text": "x"})
    assert err.value.status == 429 and len(seen) == RATE_LIMIT_RETRIES + 1


def test_other_errors_are_not_retried() -> None:
    seen: list[str] = []
    with pytest.raises(ApiError) as err:
        _client([503, 200], seen).briefing({"text": "x"})
    assert err.value.status == 503 and len(seen) == 1
