"""`LeanJsonRoute`: FastAPI's route, with the per-request parameter solving done by hand for the hot path.

FastAPI documents a custom `APIRoute.get_route_handler` as the place to change how a route handles its
request. For POST /v1/briefings the generic handler (dependency graph, per-request endpoint context,
python-mode body validation, response-model machinery) was about a third of an API worker's CPU per
briefing beyond the service itself (py-spy, GIL samples, 8 clients): the briefing's p95 under 8 clients
was x3.6 the no-op's. This route answers the same requests with the same outcomes, in the same order:

  1. the body: empty -> 422 `body` (required); not JSON -> 422 naming the JSON error's position; a
     content type other than JSON is validated as raw bytes, so it is 422 `body` as FastAPI makes it
  2. the caller, from the Authorization header (`deps.principal`): 401 before any body validation
  3. the body model, validated in python mode like FastAPI's body field; errors keep FastAPI's
     `("body", ...)` locations, so the app's 422 handler names the same field
  4. the endpoint, awaited with keyword arguments `body`, `svc`, `caller`, `request`

The OpenAPI schema still comes from the endpoint's signature; the body limit still wraps the route.
"""

from __future__ import annotations

import email.message
import json
from collections.abc import Callable, Coroutine
from functools import lru_cache
from typing import Any, get_type_hints

from fastapi.exceptions import HTTPException, RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from services.api.deps import container, principal

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@lru_cache(maxsize=64)
def is_json(content_type: str | None) -> bool:
    """FastAPI's test: `application/json` or `application/*+json`; no content type is not JSON (strict).
    Remembered: clients send the same few values, and parsing one into a `Message` is ~15 us."""
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


NO_BODY = object()  # not None: a JSON `null` body is a value, and invalid as FastAPI says


def decoded(body: bytes, content_type: str | None) -> Any:
    """The body as FastAPI hands it to validation: parsed JSON, the raw bytes, or NO_BODY."""
    if not body:
        return NO_BODY
    if not is_json(content_type):
        return body
    try:
        return json.loads(body)  # the stdlib, as Starlette: a lone surrogate reaches the field's guard
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
                                       "input": {}, "ctx": {"error": exc.msg}}], body=exc.doc) from exc
    except Exception as exc:  # not UTF-8, nested past the recursion limit: FastAPI's 400, not a 500
        raise HTTPException(status_code=400, detail="There was an error parsing the body") from exc


def validated(model: type[BaseModel], value: Any) -> BaseModel:
    if value is NO_BODY:
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    try:
        return model.model_validate(value, from_attributes=True)  # as FastAPI: its error says "or object"
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        raise RequestValidationError(errors, body=value) from None


class LeanJsonRoute(APIRoute):
    """For an endpoint `async def f(body: Model, svc: Svc, caller: Caller, request: Request) -> Response`."""

    def get_route_handler(self) -> Handler:
        endpoint = self.endpoint
        model = get_type_hints(endpoint)["body"]

        async def handle(request: Request) -> Response:
            value = decoded(await request.body(), request.headers.get("content-type"))
            caller = await principal(request, request.headers.get("authorization"))
            body = validated(model, value)
            response: Response = await endpoint(body=body, svc=container(request), caller=caller, request=request)
            return response

        return handle
