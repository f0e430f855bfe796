"""`LeanJsonRoute` answers every request as FastAPI's generic route would: same status, same error body.

Two routes of one in-process app share an endpoint that echoes the validated body; one is FastAPI's own
route, the other the lean one. Authentication is the bootstrap token (no database: `ApiKeyService.known`).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.api import BriefingRequest
from services.api.app import install_error_handlers
from services.api.deps import Caller, Svc
from services.api.lean_route import LeanJsonRoute, is_json
from services.gateway.keys import ApiKeyService

TOKEN = "lean-route-test-token"


async def echo(body: BriefingRequest, svc: Svc, caller: Caller, request: Request) -> Response:
    return Response(body.model_dump_json(), media_type="application/json")


def _client() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    router = APIRouter()
    router.add_api_route("/generic", echo, methods=["POST"])
    router.add_api_route("/lean", echo, methods=["POST"], route_class_override=LeanJsonRoute)
    app.include_router(router)
    app.state.services = SimpleNamespace(keys=ApiKeyService(None, TOKEN, 60))  # type: ignore[arg-type]
    return TestClient(app)


CLIENT = _client()
AUTH = {"authorization": f"Bearer {TOKEN}"}


def both(content: bytes, headers: dict[str, str]) -> tuple[tuple[int, Any], tuple[int, Any]]:
    answers = [CLIENT.post(path, content=content, headers=headers) for path in ("/generic", "/lean")]
    generic, lean = ((r.status_code, r.json()) for r in answers)
    return generic, lean


JSON = {"content-type": "application/json"}
CASES: list[tuple[bytes, dict[str, str]]] = [
    (b'{"services": ["checkout-api"], "signals": ["db_pool_saturation"], "text": "pool"}', AUTH | JSON),
    (b"{}", AUTH | JSON),
    (b"{}", JSON),  # no key: 401 before the body is validated
    (b'{"limit": 50}', JSON),  # no key and an invalid body: still 401
    (b'{"limit": ', JSON),  # not JSON: 422 before the key is looked at
    (b"", AUTH | JSON),
    (b"[1, 2]", AUTH | JSON),
    (b'{"text": "x"}', AUTH),  # no content type
    (b'{"text": "x"}', AUTH | {"content-type": "text/plain"}),
    (b'{"text": "x"}', AUTH | {"content-type": "application/problem+json; charset=utf-8"}),
    (b'{"text": "\\ud800"}', AUTH | JSON),  # a lone surrogate reaches the guard, which names the field
    (b'{"services": ["a", "b\\u0000"]}', AUTH | JSON),
    (b'{"alert": {"name": "A", "labels": {"k": 1}}}', AUTH | JSON),
    (b'{"limit": 50, "explain": "maybe"}', AUTH | JSON),
    (b'{"bogus": 1}', AUTH | JSON),
    (b'{"incident_id": "INC 1"}', AUTH | JSON),
    ('{"text": "caf\u00e9"}'.encode("latin-1"), AUTH | JSON),  # not UTF-8: 400, as every other route
    (b'{"text": "x", "services": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", AUTH | JSON),  # past recursion
]


@pytest.mark.parametrize(("content", "headers"), CASES)
def test_the_lean_route_answers_as_fastapi_does(content: bytes, headers: dict[str, str]) -> None:
    generic, lean = both(content, headers)
    assert lean == generic


def test_the_cases_cover_success_and_each_failure() -> None:
    statuses = {both(content, headers)[1][0] for content, headers in CASES}
    assert statuses == {200, 400, 401, 422}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
fields = st.sampled_from(["alert", "services", "signals", "entities", "text", "environment", "limit",
                          "explain", "incident_id", "other"])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(fields, json_values, max_size=4) | json_values)
def test_any_json_body_gets_the_same_answer(body: Any) -> None:
    generic, lean = both(json.dumps(body).encode(), AUTH | JSON)
    assert lean == generic


def test_json_content_types() -> None:
    assert is_json("application/json") and is_json("application/vnd.api+json; charset=utf-8")
    assert not is_json(None) and not is_json("") and not is_json("text/json") and not is_json("application/xml")
