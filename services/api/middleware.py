"""The API's two request middlewares, as plain ASGI callables.

Not `@app.middleware("http")`: Starlette's BaseHTTPMiddleware runs the rest of the app in a task group
with memory streams for the body, and two of them were ~12% of a worker's CPU under an 8-client briefing
load (py-spy, GIL samples). These do the same work on the ASGI messages directly.

  RequestGuard   422 before routing for control characters in the path or query, or a repeated
                 query parameter (FastAPI would silently keep one of them)
  RequestTiming  the request's log context (request id, traceparent), the latency histogram, the access
                 log line, and the `x-request-id` / `traceparent` response headers
  SecurityHeaders  `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer` on every answer; on the
                 review UI's (`/ui`) also a strict Content-Security-Policy (no inline script or style, no
                 framing, forms post only to itself) and `X-Frame-Options: DENY` for older browsers: approving
                 memory is the product's one privileged act, and a page that can be framed can have its
                 "Approve selected" clicked for a logged-in reviewer
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemas.guard import Problem, name_problem, shown_key
from services.api.metrics import REQUEST_SECONDS
from services.common import logs, tracing

access = logging.getLogger("opslore.access")


def query_problem(path: str, query_string: bytes) -> Problem | None:
    """Control characters in the path or the query, or a query parameter given twice. Stricter than a body's
    text (schemas.guard): what a URL carries names things, it is not evidence."""
    reason = name_problem(path)
    if reason:
        return Problem("path", reason)
    seen: set[str] = set()
    for key, value in QueryParams(query_string).multi_items():
        if key in seen:
            return Problem(shown_key(key), "query parameter given more than once")
        seen.add(key)
        reason = name_problem(key) or name_problem(value)
        if reason:
            return Problem(shown_key(key), reason)
    return None


class RequestGuard:
    def __init__(self, app: ASGIApp, reject: Callable[[Problem], JSONResponse]) -> None:
        self.app = app
        self.reject = reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = query_problem(scope["path"], scope.get("query_string", b""))
            if problem is not None:
                await self.reject(problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class RequestTiming:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        ctx = logs.begin(headers.get("traceparent"), headers.get("x-request-id"))
        ctx.trace_id = tracing.current_trace_id() or ctx.trace_id  # the server span's, when tracing is on
        status = 500  # what the access log says if the app raises before it answers

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                out = MutableHeaders(scope=message)
                out["x-request-id"] = ctx.request_id or ""
                out["traceparent"] = ctx.traceparent() or ""
            await send(message)

        start = time.perf_counter()
        try:
            await self.app(scope, receive, answer)
        finally:
            self._observe(scope, status, time.perf_counter() - start)

    @staticmethod
    def _observe(scope: Scope, status: int, elapsed: float) -> None:
        path = getattr(scope.get("route"), "path", "unmatched")
        method = scope["method"]
        REQUEST_SECONDS.labels(path, method, str(status)).observe(elapsed)
        access.info("%s %s %s", method, path, status,
                    extra={"fields": {"method": method, "route": path, "status": status,
                                      "ms": round(elapsed * 1000, 1)}})


UI_CSP = "default-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
_EVERY = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"))
_UI = ((b"content-security-policy", UI_CSP.encode()), (b"x-frame-options", b"DENY"))


class SecurityHeaders:
    def __init__(self, app: ASGIApp, ui_prefix: str = "/ui") -> None:
        self.app = app
        self.ui_prefix = ui_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        extra = _EVERY + (_UI if path == self.ui_prefix or path.startswith(self.ui_prefix + "/") else ())

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *((k, v) for k, v in extra if k not in names)]
            await send(message)

        await self.app(scope, receive, with_headers)
