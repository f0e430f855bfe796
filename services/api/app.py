"""FastAPI application factory: wiring, error mapping and lifecycle. Run: `opslore api`."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from services.api import ui
from services.api.deps import Services
from services.api.metrics import REQUEST_SECONDS
from services.api.routes import router
from services.briefing.semantic import SemanticIndex, make_embedder
from services.briefing.service import BriefingService
from services.collectors.kubernetes import KubernetesCollector, api_client
from services.collectors.prometheus import PrometheusCollector
from services.collectors.signals import load_rules
from services.collectors.verify import HintVerifier, VerificationService
from services.common.db import Database
from services.common.errors import OpsloreError
from services.common.kafka import ensure_topics, transactional_producer
from services.common.settings import Settings, get_settings
from services.gateway.keys import ApiKeyService
from services.gateway.service import LedgerGateway
from services.memory.service import MemoryService
from services.projector.queries import EpisodeQueries
from services.review.service import ReviewService


def build_services(settings: Settings) -> Services:
    db = Database(settings.database_url, max_size=16)
    db.open()
    ensure_topics(settings)
    gateway = LedgerGateway(transactional_producer(settings, "opslore-gateway"), settings.topic)
    embedder = make_embedder(settings.embedding)
    semantic = SemanticIndex(embedder) if embedder is not None else None
    memory = MemoryService(db, semantic)
    return Services(
        settings=settings, db=db, keys=ApiKeyService(db, settings.admin_token), gateway=gateway,
        memory=memory, review=ReviewService(db, memory), briefing=BriefingService(db, settings, gateway, semantic),
        episodes=EpisodeQueries(db),
        verification=VerificationService(db, gateway, build_verifier(settings)),
    )


def build_verifier(settings: Settings) -> HintVerifier:
    """Live sources for hint verification, from OPSLORE_PROMETHEUS_URL and OPSLORE_KUBE_* (each optional)."""
    rules = load_rules(settings.signal_rules)
    prom = PrometheusCollector(settings.prometheus_url, rules) if settings.prometheus_url else None
    kube = None
    if settings.kube_host or settings.kubeconfig:
        kube = KubernetesCollector(api_client(settings.kube_host, settings.kubeconfig))
    return HintVerifier(prom, kube, settings.kube_namespace)


def _error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if field:
        body["field"] = field
    return JSONResponse(status_code=status, content={"error": body})


def _field_of(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or "body"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(OpsloreError)
    async def _opslore(_: Request, exc: OpsloreError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message, exc.field)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0]
        field = _field_of(tuple(err.get("loc", ())))
        return _error(422, "invalid", f"{field}: {err.get('msg')}", field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "http_error", str(exc.detail))


def create_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = services or build_services(settings)
        yield
        if services is None:
            app.state.services.gateway.producer.close()
            app.state.services.db.close()

    app = FastAPI(title="opslore", version="0.1.0", lifespan=lifespan)
    install_error_handlers(app)

    @app.middleware("http")
    async def _timing(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        REQUEST_SECONDS.labels(path, request.method, str(response.status_code)).observe(time.perf_counter() - start)
        return response

    app.include_router(router)
    app.include_router(ui.router)
    app.add_middleware(SessionMiddleware, secret_key=settings.ui_secret or secrets.token_urlsafe(32),
                       session_cookie="opslore_ui", same_site="strict", https_only=settings.ui_secure_cookie,
                       max_age=8 * 3600)

    @app.exception_handler(ui.LoginRequired)
    async def _login(_: Request, __: ui.LoginRequired) -> RedirectResponse:
        return RedirectResponse("/ui/login", status_code=303)

    return app
