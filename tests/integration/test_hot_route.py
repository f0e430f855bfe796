"""`HotRoute`: POST /v1/briefings served ahead of the generic ASGI chain answers exactly as the chain does.

The app (in this process, against the live PostgreSQL and Kafka) is asked the same requests twice: once through
its middleware stack as built (`HotRoute` at the top), once through the generic chain under it. Every answer
must agree on status, body (but the fresh briefing id) and header names; and the briefing must really take the
short path, while every other request still takes the generic one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from services.api.app import create_app
from services.api.hot_route import HotRoute
from services.api.middleware import SecurityHeaders
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        c.post("/v1/briefings")  # builds the middleware stack
        yield c


def hot_route(client: TestClient) -> HotRoute:
    stack = client.app.middleware_stack  # type: ignore[attr-defined]
    assert isinstance(stack, SecurityHeaders)  # outermost: its headers on every answer
    assert isinstance(stack.app, HotRoute)
    return stack.app


def answer(client: TestClient, generic: bool, **request: Any) -> tuple[int, Any, set[str]]:
    app: Any = client.app
    stack = app.middleware_stack
    hot = hot_route(client)
    app.middleware_stack = SecurityHeaders(hot.generic if generic else hot)  # the same outermost headers on both
    try:
        r = client.request(**request)
    finally:
        app.middleware_stack = stack
    body = r.json()
    if isinstance(body, dict):
        body.pop("briefing_id", None)
    return r.status_code, body, set(r.headers)


def test_every_answer_of_the_short_path_is_the_generic_chains(client: TestClient, tenant_client: TenantFactory,
                                                              settings: Settings) -> None:
    reviewer = tenant_client()
    reviewer.append(resolved_incident("INC-HOT"))
    candidate = eventually(lambda: reviewer.candidates(incident_id="INC-HOT", state="pending"))[0]
    reviewer.approve(str(candidate["candidate_id"]))
    auth = {"Authorization": f"Bearer {reviewer.key}"}
    cases: list[dict[str, Any]] = [
        {"json": {"services": ["checkout-api"], "signals": ["db_pool_saturation"], "text": "pool exhausted"},
         "headers": auth},
        {"json": {"text": 5}, "headers": auth},
        {"json": {"services": "checkout-api", "limit": 99}, "headers": auth},
        {"content": b"{not json", "headers": {**auth, "content-type": "application/json"}},
        {"content": b"", "headers": auth},
        {"content": b'{"text": "x"}', "headers": {**auth, "content-type": "text/plain"}},
        {"json": {"text": "x"}},
        {"json": {"text": "x"}, "headers": {"Authorization": "Bearer olk_not-a-key"}},
        {"json": {"text": "x"}, "headers": {"Authorization": f"Bearer {settings.admin_token}"}},
        {"json": {"text": "x"}, "headers": auth, "params": [("a", "1"), ("a", "2")]},
    ]
    statuses = []
    for case in cases:
        request = {"method": "POST", "url": "/v1/briefings", **case}
        short, generic = answer(client, False, **request), answer(client, True, **request)
        assert short == generic, case
        statuses.append(short[0])
        if len(statuses) == 1:
            assert short[1]["hints"] and {"x-request-id", "traceparent"} <= short[2]
    assert statuses == [200, 422, 422, 422, 422, 422, 401, 401, 403, 422]


class Counting:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.paths.append(f"{scope.get('method')} {scope['path']}")
        await self.app(scope, receive, send)


def test_only_the_briefing_post_takes_the_short_path(client: TestClient, tenant_client: TenantFactory) -> None:
    agent = tenant_client(role="agent")
    hot = hot_route(client)
    counting = Counting(hot.generic)
    hot.generic = counting
    auth = {"Authorization": f"Bearer {agent.key}"}
    assert client.post("/v1/briefings", json={"text": "disk full"}, headers=auth).status_code == 200
    assert counting.paths == []
    assert client.get("/healthz").status_code == 200
    assert client.get("/v1/briefings", headers=auth).status_code == 405
    assert client.post("/v1/briefings/", json={"text": "x"}, headers=auth, follow_redirects=False).status_code == 307
    assert counting.paths == ["GET /healthz", "GET /v1/briefings", "POST /v1/briefings/"]
