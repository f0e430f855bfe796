"""FastAPI application factory: wiring, error mapping and lifecycle. Run: `opslore api`."""

from __future__ import annotations

import gc
import logging
import secrets
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from psycopg_pool import PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.routing import Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from schemas.guard import Problem, UnsafeInput, shown_key
from services.api import ui, worker_lifetime
from services.api.briefing_threads import BriefingThreads
from services.api.fairness import FairShare, RateLimited, limits_of, retry_after_header
from services.api.hot_route import HotRoute
from services.api.middleware import RequestGuard, RequestTiming, SecurityHeaders
from services.api.routes import BRIEFING_ROUTE, router
from services.briefing.semantic import SemanticIndex, make_embedder
from services.briefing.service import BriefingService
from services.briefing.snapshots import SnapshotStore
from services.briefing.vectors import VectorIndexes
from services.collectors.kubernetes import KubernetesCollector, api_client
from services.collectors.prometheus import PrometheusCollector
from services.collectors.signals import load_rules
from services.collectors.verify import HintVerifier, VerificationService
from services.common import logs, tracing
from services.common.db import Database
from services.common.errors import OpsloreError
from services.common.kafka import ensure_topics, producer_factory
from services.common.settings import Settings, get_settings
from services.container import Services
from services.gateway.keys import ApiKeyService
from services.gateway.service import LedgerGateway
from services.governance.service import GovernanceService
from services.intake.alertmanager import AlertIntake
from services.lexicon import analyzer
from services.mcp_server.server import http_server
from services.memory.service import MemoryService
from services.operations.readiness import ReadinessProbe
from services.postmortems.service import PostmortemImporter
from services.projector.queries import EpisodeQueries
from services.review.service import ReviewService

log = logging.getLogger("opslore.api")


def build_services(settings: Settings) -> Services:
    db = Database(settings.database_url, max_size=settings.db_pool_size)
    db.open()
    ensure_topics(settings)
    gateway = LedgerGateway(producer_factory(settings, "opslore-gateway"), settings.topic)
    embedder = make_embedder(settings.embedding)
    semantic = SemanticIndex(embedder, VectorIndexes(SnapshotStore(settings.index_dir))) \
        if embedder is not None else None
    memory = MemoryService(db, semantic)
    briefing = BriefingService(db, settings, gateway, semantic)
    review = ReviewService(db, memory)
    return Services(
        settings=settings, db=db, keys=ApiKeyService(db, settings.admin_token, settings.auth_cache_seconds),
        gateway=gateway,
        memory=memory, review=review, briefing=briefing,
        episodes=EpisodeQueries(db),
        verification=VerificationService(db, gateway, build_verifier(settings), briefing.settler),
        readiness=ReadinessProbe(db, settings),
        intake=AlertIntake(db, gateway, briefing),
        governance=GovernanceService(db, settings, memory, review),
        postmortems=PostmortemImporter(db, gateway),
    )


def build_verifier(settings: Settings) -> HintVerifier:
    """Live sources for hint verification, from OPSLORE_PROMETHEUS_URL and OPSLORE_KUBE_* (each optional)."""
    rules = load_rules(settings.signal_rules)
    prom = PrometheusCollector(settings.prometheus_url, rules) if settings.prometheus_url else None
    kube = None
    if settings.kube_host or settings.kubeconfig:
        kube = KubernetesCollector(api_client(settings.kube_host, settings.kubeconfig))
    return HintVerifier(prom, kube, settings.kube_namespace)


MAX_ERROR_TEXT = 1000  # characters of an error's message or field that repeat the input


def _encodable(text: str) -> str:
    """Whatever the input was, an error body can be encoded: lone surrogates become escapes, and what
    repeats the input is cut to MAX_ERROR_TEXT characters."""
    short = text if len(text) <= MAX_ERROR_TEXT else text[:MAX_ERROR_TEXT] + "…"
    return short.encode("utf-8", "backslashreplace").decode("utf-8")


def _error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": _encodable(message)}
    if field:
        body["field"] = _encodable(field)
    return JSONResponse(status_code=status, content={"error": body})


def _field_of(loc: tuple[Any, ...]) -> str:
    """The field a validation error names: its location without where the value came from (`body`, `query`,
    `path`, `header`: only the first element, so a field called `query` is still named)."""
    if loc and loc[0] in ("body", "query", "path", "header", "cookie"):
        loc = loc[1:]
    parts = [str(p) if isinstance(p, int) else shown_key(str(p)) for p in loc]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or "body"


def _unsafe_query(problem: Problem) -> JSONResponse:
    return _error(422, "invalid", f"{problem.path}: {problem.reason}", problem.path)


class OpsloreApi(FastAPI):
    """The FastAPI app, with POST /v1/briefings dispatched at the top of its middleware stack (`HotRoute`), and
    the security headers outermost (`SecurityHeaders`: every answer carries them, the hot route's too)."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(HotRoute(super().build_middleware_stack(), self, BRIEFING_ROUTE, _unsafe_query))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(OpsloreError)
    async def _opslore(_: Request, exc: OpsloreError) -> JSONResponse:
        response = _error(exc.status, exc.code, exc.message, exc.field)
        if exc.status == 503:
            response.headers["Retry-After"] = "5"
        if isinstance(exc, RateLimited):
            response.headers["Retry-After"] = retry_after_header(exc)
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0]
        field = _field_of(tuple(err.get("loc", ())))
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, UnsafeInput):  # the guard names the part of the value that is unsafe
            inner = cause.problem.path
            field = (f"{field}{inner}" if inner.startswith("[") else f"{field}.{inner}") if field != "body" and inner \
                else (inner or field)
            return _error(422, "invalid", f"{field}: {cause.problem.reason}", field)
        return _error(422, "invalid", f"{field}: {err.get('msg')}", field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(psycopg.OperationalError)
    @app.exception_handler(PoolTimeout)
    async def _database_down(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", exc)
        response = _error(503, "unavailable", "the database is unavailable; retry shortly")
        response.headers["Retry-After"] = "5"
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        ctx = logs.current()
        request_id = ctx.request_id if ctx and ctx.request_id else uuid.uuid4().hex
        log.error("unexpected error %s on %s %s", request_id, request.method, request.url.path, exc_info=exc)
        return _error(500, "internal", f"unexpected error; request id {request_id}")


def create_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    settings = settings or get_settings()
    worker_lifetime.tie_to_parent()  # a worker of a multi-process server stops with it

    mcp_server, mcp_app = http_server(lambda: app.state.services, settings, lambda: app.state.fairness.admit)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = services or build_services(settings)
        app.state.briefing_threads = BriefingThreads(settings.api_briefing_threads)
        app.state.fairness = FairShare(limits_of(settings))
        analyzer.warm()
        gc.freeze()  # jieba's dictionary and everything else built at start: out of every GC pass (tail latency)
        async with mcp_server.session_manager.run():
            yield
        app.state.briefing_threads.close()
        if services is None:
            app.state.services.briefing.close()  # records of briefings already answered commit first
            app.state.services.gateway.close()
            app.state.services.readiness.close()
            app.state.services.db.close()

    logs.configure(settings.log_format)
    tracing.configure(settings.otel_exporter_otlp_endpoint)
    app = OpsloreApi(title="opslore", version="0.1.0", lifespan=lifespan)
    install_error_handlers(app)

    app.add_middleware(RequestGuard, reject=_unsafe_query)
    app.add_middleware(RequestTiming)  # outside the guard: a rejected request is timed and logged too
    app.include_router(router)
    app.include_router(ui.router)
    app.mount("/ui/static", StaticFiles(directory=Path(ui.__file__).parent / "static"), name="ui-static")
    app.router.routes.append(Route("/mcp", endpoint=mcp_app))  # MCP, streamable HTTP (services/mcp_server)
    app.add_middleware(SessionMiddleware, secret_key=settings.ui_secret or secrets.token_urlsafe(32),
                       session_cookie="opslore_ui", same_site="strict", https_only=settings.ui_secure_cookie,
                       max_age=8 * 3600)

    tracing.instrument_app(app)

    @app.exception_handler(ui.LoginRequired)
    async def _login(_: Request, __: ui.LoginRequired) -> RedirectResponse:
        return RedirectResponse("/ui/login", status_code=303)

    return app
