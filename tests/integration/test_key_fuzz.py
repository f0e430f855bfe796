"""Keys are input too: every operation of the OpenAPI schema, fed a body whose object key holds a lone
surrogate (the JSON escape, as a fuzzer writes it) or is 10,000 characters long, answers a 4xx whose body
is valid UTF-8 JSON, never a 5xx (issue 30: 12 of 10,004 fuzz requests were 500 on 7 endpoints)."""

from __future__ import annotations

import re
import uuid

import httpx
import orjson
import pytest

from services.common.settings import Settings
from tests.conftest import TenantFactory

pytestmark = pytest.mark.integration

LONG_KEY = "k" * 10_000
BODIES: dict[str, bytes] = {
    "surrogate key": b'{"te\\ud800xt": "abc"}',
    "surrogate key, nested": b'{"alert": {"name": "A", "labels": {"\\udfff": "v"}}, "events": [{"\\ud800": 1}]}',
    "surrogate key and value": b'{"\\ud83d": "\\ude00"}',
    "10k-character key": orjson.dumps({LONG_KEY: "x"}),
    "10k-character key, nested": orjson.dumps({"alert": {"name": "A", "labels": {LONG_KEY: "v"}},
                                               "payload": {LONG_KEY: 1}}),
    "control character key": b'{"a\\u001bb": "x"}',
}


def _operations(http: httpx.Client) -> list[tuple[str, str]]:
    schema = http.get("/openapi.json").json()
    found: list[tuple[str, str]] = []
    for template, methods in schema["paths"].items():
        for method, spec in methods.items():
            path = template
            for param in spec.get("parameters", []):
                if param["in"] == "path":
                    uuid_like = param.get("schema", {}).get("format") == "uuid"
                    path = path.replace("{" + param["name"] + "}", str(uuid.uuid4()) if uuid_like else "INC-FUZZ")
            assert not re.search(r"\{\w+\}", path), path
            found.append((method.upper(), path))
    return found


def test_every_operation_answers_a_bad_key_with_an_encodable_4xx(tenant_client: TenantFactory,
                                                                  settings: Settings) -> None:
    client = tenant_client("reviewer")
    credentials = {"reviewer key": client.key, "admin token": settings.admin_token}
    server_errors: list[str] = []
    asked = 0
    with httpx.Client(base_url=settings.api_url, timeout=30) as http:
        operations = _operations(http)
        assert len(operations) >= 30, operations
        for method, path in operations:
            for who, secret in credentials.items():
                for name, body in BODIES.items():
                    response = http.request(method, path, content=body, headers={
                        "Authorization": f"Bearer {secret}", "content-type": "application/json"})
                    asked += 1
                    if response.status_code >= 500:
                        server_errors.append(f"{method} {path} ({who}, {name}): {response.status_code}")
                    if response.headers.get("content-type", "").startswith("application/json"):
                        orjson.loads(response.content)  # valid UTF-8 JSON, whatever the input was
                    if method == "POST" and response.status_code == 422:
                        error = response.json()["error"]
                        assert len(error["message"]) < 2_000 and len(error.get("field") or "") < 2_000, error
    print(f"key fuzz: {asked} requests over {len(operations)} operations, {len(server_errors)} 5xx")
    assert not server_errors, server_errors


def test_a_bad_key_is_422_naming_the_field_shown_escaped(tenant_client: TenantFactory, settings: Settings) -> None:
    key = tenant_client("reviewer").key
    with httpx.Client(base_url=settings.api_url, timeout=30) as http:
        for path in ("/v1/briefings", "/v1/ledger/events", "/v1/records/search"):
            response = http.post(path, content=b'{"te\\ud800xt": "abc"}', headers={
                "Authorization": f"Bearer {key}", "content-type": "application/json"})
            assert response.status_code == 422, (path, response.text)
            error = response.json()["error"]
            assert error["field"] == "te\\ud800xt", error
            assert "surrogate" in error["message"]
        response = http.post("/v1/briefings", content=orjson.dumps({LONG_KEY: "x"}), headers={
            "Authorization": f"Bearer {key}", "content-type": "application/json"})
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["field"] == "k" * 40 + "…" and "longer than 256" in error["message"], error
