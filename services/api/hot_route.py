"""`HotRoute`: POST /v1/briefings dispatched straight to its route handler, past the generic ASGI chain.

An agent's briefing is the read path every other route is measured against. Through the generic chain it
crosses Starlette's error middleware, FastAPI's telemetry and body-limit middlewares, the UI's session
middleware, the exception middleware, the exit-stack middleware and a linear match over every route of the
app, each wrapping `send` once more: about 0.5 ms of an API worker's CPU per briefing beyond the endpoint (a
raw ASGI stub of the same endpoint, 8 clients, 4 alternating rounds: worker CPU per briefing 2.63 -> 2.12 ms).
None of them does anything for this route: it has no session, no dependency with `yield`, no file, no body
limit, and its path is known.

`HotRoute` sits at the top of the app's middleware stack (`OpsloreApi.build_middleware_stack`, so a tracing
instrumentor still wraps it) and keeps what the route does observe, in the same order as the generic chain:

  RequestTiming   request id and traceparent headers, the access log line, the latency histogram
  RequestGuard    422 before anything else for control characters or a repeated query parameter
  handlers        an exception is answered by the app's own handler for it (the nearest class of its MRO),
                  as Starlette's exception middleware and, for `Exception`, its error middleware would
  the route       `route.get_route_handler()`: the route's own body, caller, validation and endpoint

Every other request, and this path with any other method, goes through the generic chain unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.guard import Problem
from services.api.middleware import RequestGuard, RequestTiming


class HotRoute:
    def __init__(self, generic: ASGIApp, app: FastAPI, route: APIRoute,
                 reject: Callable[[Problem], JSONResponse]) -> None:
        self.generic = generic
        self.app = app
        self.route = route
        self.methods = route.methods or set()
        self.handler = route.get_route_handler()
        self.served = RequestTiming(RequestGuard(self._serve, reject))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in self.methods and route_path(scope) == self.route.path:
            await self.served(scope, receive, send)
        else:
            await self.generic(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self.app
        scope["route"] = self.route
        scope["endpoint"] = self.route.endpoint
        scope["path_params"] = {}
        request = Request(scope, receive)
        try:
            response = await self.handler(request)
        except Exception as exc:
            response = await self._answer_error(request, exc)
        await response(scope, receive, send)

    async def _answer_error(self, request: Request, exc: Exception) -> Response:
        handler = handler_for(self.app.exception_handlers, exc)
        if handler is None:
            raise exc
        if inspect.iscoroutinefunction(handler):
            response: Response = await handler(request, exc)
        else:
            response = await run_in_threadpool(handler, request, exc)
        exc.__traceback__ = None  # as Starlette: a reused exception instance must not keep every traceback
        return response


def handler_for(handlers: dict[Any, Any], exc: Exception) -> Any:
    """The app's handler for `exc`, as Starlette picks it: for an HTTP error one registered for its status code,
    else the nearest class of its MRO that has one (`Exception` last)."""
    if isinstance(exc, HTTPException) and exc.status_code in handlers:
        return handlers[exc.status_code]
    for cls in type(exc).__mro__:
        if cls in handlers:
            return handlers[cls]
    return None


def route_path(scope: Scope) -> str:
    """The path the router matches: without the app's mount prefix (`root_path`), as Starlette's."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root + "/") else path
