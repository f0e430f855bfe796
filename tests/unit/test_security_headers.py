"""SecurityHeaders (services/api/middleware.py): every answer says nosniff and no-referrer; the review UI's also
forbid framing and inline script or style."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from services.api.middleware import UI_CSP, SecurityHeaders


def app() -> SecurityHeaders:
    async def page(_: object) -> PlainTextResponse:
        return PlainTextResponse("ok", headers={"referrer-policy": "same-origin"})

    routes = [Route("/ui/login", page), Route("/ui", page), Route("/v1/whoami", page), Route("/uix", page)]
    return SecurityHeaders(Starlette(routes=routes))


def test_every_answer_says_nosniff_and_only_ui_pages_forbid_framing() -> None:
    client = TestClient(app())
    for path in ("/ui/login", "/ui"):
        h = client.get(path).headers
        assert h["content-security-policy"] == UI_CSP and h["x-frame-options"] == "DENY"
        assert h["x-content-type-options"] == "nosniff"
    for path in ("/v1/whoami", "/uix", "/missing"):
        h = client.get(path).headers
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] in ("no-referrer", "same-origin")
        assert "content-security-policy" not in h and "x-frame-options" not in h
    assert client.get("/v1/whoami").headers.get_list("referrer-policy") == ["same-origin"]  # a route's own wins
    assert "frame-ancestors 'none'" in UI_CSP and "script-src 'self'" in UI_CSP and "unsafe-inline" not in UI_CSP
