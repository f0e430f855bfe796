"""A worker process's HTTP endpoint (the projector's and the governance worker's): `/metrics`, and the
probes an orchestrator asks.

  /metrics   Prometheus exposition (prometheus_client's WSGI app)
  /healthz   liveness: the process answers
  /readyz    readiness: the worker's own `ReadyCheck` (200 when every named check is ok, else 503, with the
             checks as JSON), bounded by READY_CHECK_SECONDS: a check that hangs is an answer too (503)

Served by a threading WSGI server on a daemon thread, so a slow probe never holds the worker's loop.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server
from wsgiref.types import StartResponse, WSGIEnvironment

from services.common.db import Database

READY_CHECK_SECONDS = 4.0
log = logging.getLogger("opslore.metrics")


@dataclass
class Readiness:
    """Named checks, each `{"ok": bool, ...details}`; ready when all are ok (and there is at least one)."""

    checks: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return bool(self.checks) and all(c.get("ok") is True for c in self.checks.values())

    def to_json(self) -> dict[str, Any]:
        return {"status": "ready" if self.ready else "not_ready", "checks": self.checks}


ReadyCheck = Callable[[], Readiness]


DATABASE_CHECK_SECONDS = 2.0  # waiting for a connection, inside READY_CHECK_SECONDS with room for the rest


def database_check(db: Database) -> dict[str, Any]:
    """PostgreSQL answers a query; a pool that cannot hand out a connection within DATABASE_CHECK_SECONDS
    (the database is gone, the pool reconnecting) is an answer too."""
    try:
        with db.pool.connection(timeout=DATABASE_CHECK_SECONDS) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True}


def bounded(check: ReadyCheck, seconds: float = READY_CHECK_SECONDS) -> Readiness:
    """`check()` within `seconds`; a check still running then (a dependency that hangs) is not ready."""
    outcome: list[Readiness] = []

    def run() -> None:
        try:
            outcome.append(check())
        except Exception as exc:  # a failing check is an answer: not ready, naming the error
            outcome.append(Readiness({"check": {"ok": False, "error": type(exc).__name__}}))

    worker = threading.Thread(target=run, daemon=True, name="opslore-readiness")
    worker.start()
    worker.join(seconds)
    return outcome[0] if outcome else Readiness({"check": {"ok": False, "error": f"no answer within {seconds}s"}})


def probe_app(ready: ReadyCheck | None) -> Callable[[WSGIEnvironment, StartResponse], Iterable[bytes]]:
    """The WSGI app: the two probes, and everything else to prometheus_client's exposition."""
    from prometheus_client import make_wsgi_app

    metrics = make_wsgi_app()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            return _json(start_response, 200, {"status": "ok"})
        if path == "/readyz":
            if ready is None:
                return _json(start_response, 404, {"status": "no readiness check in this process"})
            answer = bounded(ready)
            return _json(start_response, 200 if answer.ready else 503, answer.to_json())
        return metrics(environ, start_response)  # type: ignore[no-any-return]

    return app


def _json(start_response: StartResponse, status: int, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes every few seconds are not worth a log line each."""


def serve_metrics(host: str, port: int, ready: ReadyCheck | None = None) -> bool:
    """A worker's /metrics, /healthz and /readyz on its own port (0: off). A port already taken (a second
    worker on one host) is logged and skipped: metrics are not worth stopping the worker for."""
    from prometheus_client.exposition import ThreadingWSGIServer

    if port == 0:
        return False
    try:
        server = make_server(host, port, probe_app(ready), ThreadingWSGIServer, handler_class=_QuietHandler)
    except OSError as exc:
        log.warning("metrics port %s:%s unavailable (%s); serving none", host, port, exc)
        return False
    threading.Thread(target=server.serve_forever, daemon=True, name="opslore-metrics").start()
    return True
