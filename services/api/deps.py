"""The service container the routers use, and the authentication dependency."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request
from starlette.concurrency import run_in_threadpool

from services.common import logs
from services.common.auth import Principal
from services.container import Services


def container(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


async def services(request: Request) -> Services:
    """Async on purpose: FastAPI runs a plain `def` dependency in a worker thread, one hop per request."""
    return container(request)


async def principal(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    """The caller, from the key alone. Async: a key that authenticated recently (or the bootstrap token) is
    answered in the event loop; only a database lookup goes to a worker thread."""
    token = None
    if authorization and authorization.lower().startswith("bearer "):
        token = authorization[7:].strip()
    keys = container(request).keys
    caller = keys.known(token)
    if caller is None:
        caller = await run_in_threadpool(keys.authenticate, token)
    logs.bind(tenant=caller.tenant)
    return caller


Svc = Annotated[Services, Depends(services)]
Caller = Annotated[Principal, Depends(principal)]
