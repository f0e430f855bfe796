"""The typed Python SDK: `Client` (sync) and `AsyncClient` over the HTTP API.

    from opslore import Client
    with Client() as ol:                     # OPSLORE_API_URL / OPSLORE_API_KEY
        answer = ol.brief(services=["checkout"], signals=["p99_latency_high"])
        for hint in answer.hints:            # hypotheses: run hint.verify_with before citing them
            ...
        ol.record_observation("INC-1", "prometheus", "p99 back to 180ms after rollback")

Answers are the API's wire models (`opslore.models`: `BriefingResponse`, `Hint`, `Whoami`, ...); errors are
`ApiError` with the contract's status, code and field. Every write returns only after the ledger
acknowledged it. A request the API turned away before doing anything (429: over the key's or tenant's fair
share; 503: the database unavailable) is sent again after its `Retry-After`, `retries` times at most, waiting
`max_wait` seconds at most each time; appends are idempotent by event id, and a refused briefing recorded nothing.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, TypeVar
from uuid import UUID

import httpx
from pydantic import BaseModel

from opslore import calls
from opslore.calls import ApiError, Call
from opslore.events import envelope
from opslore.models import (
    BriefingRequest,
    BriefingResponse,
    EpisodeView,
    FeedbackRequest,
    Hint,
    RecordDetail,
    RecordSearchRequest,
    VerifyResult,
    Whoami,
)

T = TypeVar("T")
Verdict = Literal["adopted", "refuted", "ignored"]
AgentTrust = Literal["model_inferred", "untrusted_text", "user_stated"]


def _base_url(base_url: str | None) -> str:
    return base_url or os.environ.get("OPSLORE_API_URL", "http://127.0.0.1:9001")


def _key(api_key: str | None) -> str:
    key = api_key or os.environ.get("OPSLORE_API_KEY", "")
    if not key:
        raise ValueError("no API key: pass api_key= or set OPSLORE_API_KEY")
    return key


RETRIED = (429, 503)


def retry_after(response: httpx.Response, max_wait: float) -> float | None:
    """Seconds to wait before sending a turned-away request again, or None when it is not one: its Retry-After
    (seconds; 1 when absent or not a number), at most `max_wait`."""
    if response.status_code not in RETRIED:
        return None
    try:
        wait = float(response.headers.get("Retry-After", "1"))
    except ValueError:
        wait = 1.0
    return min(max(wait, 0.0), max_wait)


def _parse(call: Call[T], response: httpx.Response) -> T:
    body = response.json() if response.content else None
    if response.status_code >= 400:
        raise ApiError(response.status_code, body)
    return call.parse(body)


def observation_event(incident_id: str, source: str, summary: str, *, query: str | None = None,
                      signals: list[str] | None = None, entities: list[str] | None = None,
                      trust: AgentTrust = "model_inferred", writer: str = "sdk") -> dict[str, Any]:
    """An agent's observation. An agent's own words are at most `model_inferred`: only opslore's
    verification and trusted collectors write `trusted_tool` evidence."""
    payload: dict[str, Any] = {"source": source, "summary": summary, "signals": signals or [],
                               "entities": entities or []}
    if query:
        payload["query"] = query
    return envelope("observation.recorded", incident_id, payload, writer_kind="agent", writer_id=writer,
                    trust=trust)


class Client:
    """Synchronous client. `http`: an existing httpx client (e.g. a FastAPI TestClient) to use instead;
    `retries` and `max_wait`: how a 429 or 503 is sent again (0: never)."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0,
                 http: httpx.Client | None = None, retries: int = 3, max_wait: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.http = http or httpx.Client(base_url=_base_url(base_url), timeout=timeout)
        self._headers = {"Authorization": f"Bearer {_key(api_key)}"}
        self.retries, self.max_wait, self._sleep = retries, max_wait, sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def call(self, call: Call[T]) -> T:
        for attempt in range(self.retries + 1):
            response = self.http.request(call.method, call.path, json=call.json, params=call.params or None,
                                         headers=self._headers)
            wait = retry_after(response, self.max_wait)
            if wait is None or attempt == self.retries:
                break
            self._sleep(wait)
        return _parse(call, response)

    def whoami(self) -> Whoami:
        return self.call(calls.whoami())

    def brief(self, request: BaseModel | None = None, **fields: Any) -> BriefingResponse:
        return self.call(calls.brief(request or BriefingRequest.model_validate(fields)))

    def get_briefing(self, briefing_id: UUID | str) -> dict[str, Any]:
        return self.call(calls.get_briefing(briefing_id))

    def verify(self, briefing_id: UUID | str, incident_id: str, namespace: str | None = None) -> VerifyResult:
        return self.call(calls.verify(briefing_id, incident_id, namespace))

    def feedback(self, briefing_id: UUID | str, family_id: UUID | str, verdict: Verdict,
                 incident_id: str = "CURRENT") -> UUID:
        body = FeedbackRequest(family_id=UUID(str(family_id)), verdict=verdict, incident_id=incident_id)
        return self.call(calls.feedback(briefing_id, body))

    def append(self, events: list[dict[str, Any]]) -> list[UUID]:
        return self.call(calls.append(events))

    def record_observation(self, incident_id: str, source: str, summary: str, **kw: Any) -> UUID:
        return self.append([observation_event(incident_id, source, summary, **kw)])[0]

    def episode(self, incident_id: str) -> EpisodeView:
        return self.call(calls.episode(incident_id))

    def search_records(self, query: str, services: list[str] | None = None, limit: int = 5) -> list[Hint]:
        return self.call(calls.search_records(RecordSearchRequest(query=query, services=services or [],
                                                                  limit=limit)))

    def get_record(self, family_id: UUID | str) -> RecordDetail:
        return self.call(calls.get_record(family_id))


class AsyncClient:
    """The same verbs as `Client`, awaitable (and the same retries)."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0,
                 http: httpx.AsyncClient | None = None, retries: int = 3, max_wait: float = 10.0) -> None:
        self.http = http or httpx.AsyncClient(base_url=_base_url(base_url), timeout=timeout)
        self._headers = {"Authorization": f"Bearer {_key(api_key)}"}
        self.retries, self.max_wait = retries, max_wait

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def call(self, call: Call[T]) -> T:
        for attempt in range(self.retries + 1):
            response = await self.http.request(call.method, call.path, json=call.json,
                                               params=call.params or None, headers=self._headers)
            wait = retry_after(response, self.max_wait)
            if wait is None or attempt == self.retries:
                break
            await asyncio.sleep(wait)
        return _parse(call, response)

    async def whoami(self) -> Whoami:
        return await self.call(calls.whoami())

    async def brief(self, request: BaseModel | None = None, **fields: Any) -> BriefingResponse:
        return await self.call(calls.brief(request or BriefingRequest.model_validate(fields)))

    async def verify(self, briefing_id: UUID | str, incident_id: str,
                     namespace: str | None = None) -> VerifyResult:
        return await self.call(calls.verify(briefing_id, incident_id, namespace))

    async def feedback(self, briefing_id: UUID | str, family_id: UUID | str, verdict: Verdict,
                       incident_id: str = "CURRENT") -> UUID:
        body = FeedbackRequest(family_id=UUID(str(family_id)), verdict=verdict, incident_id=incident_id)
        return await self.call(calls.feedback(briefing_id, body))

    async def append(self, events: list[dict[str, Any]]) -> list[UUID]:
        return await self.call(calls.append(events))

    async def record_observation(self, incident_id: str, source: str, summary: str, **kw: Any) -> UUID:
        return (await self.append([observation_event(incident_id, source, summary, **kw)]))[0]

    async def episode(self, incident_id: str) -> EpisodeView:
        return await self.call(calls.episode(incident_id))

    async def search_records(self, query: str, services: list[str] | None = None, limit: int = 5) -> list[Hint]:
        return await self.call(calls.search_records(RecordSearchRequest(query=query, services=services or [],
                                                                        limit=limit)))

    async def get_record(self, family_id: UUID | str) -> RecordDetail:
        return await self.call(calls.get_record(family_id))
