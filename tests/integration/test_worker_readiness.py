"""Readiness of the worker processes (issue 30), on real Kafka and PostgreSQL.

The projector is ready when it is a member of its consumer group (holding partitions, or a standby when
there are more members than partitions), PostgreSQL answers and its own partitions' lag is under
OPSLORE_READY_MAX_LAG; the governance worker when PostgreSQL answers and its scheduler runs. PostgreSQL is
reached through a TCP relay the test owns, so closing the relay is a real loss of the database for that
process alone (the shared stack keeps running)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from services.common.settings import Settings
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


class Relay:
    """Forwards a local port to PostgreSQL; `cut()` closes the listener and every relayed connection."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.alive = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.alive:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.alive:
                client.close()
                return
            server = socket.create_connection(self.target)
            self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (close alone would not)
        self.listener.close()
        for s in self.open:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def relayed(url: str, relay: Relay) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.netloc.rpartition('@')[0]}@127.0.0.1:{relay.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def processes() -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], int]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], env: dict[str, str], port_setting: str) -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "services.cli.main", *args],
                                env=os.environ | env | {port_setting: str(port)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        return proc, port

    yield start
    for proc in started:
        proc.terminate()
    for proc in started:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def readyz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
    except httpx.TransportError:
        return 0, {}
    return response.status_code, response.json()


def answers(port: int, status: int) -> dict[str, Any] | None:
    """The /readyz body once it answers `status`, else None (for `eventually`)."""
    code, body = readyz(port)
    return body if code == status else None


def test_projectors_are_ready_holding_partitions_or_standing_by_and_not_without_postgresql(
        settings: Settings, fresh_database: Callable[[], str], fresh_topic: Callable[..., str],
        processes: Callable[..., tuple[subprocess.Popen[bytes], int]]) -> None:
    db_url, topic, dlq = fresh_database(), fresh_topic(1), fresh_topic(1)
    pg = urlsplit(db_url)
    relay = Relay(pg.hostname or "127.0.0.1", pg.port or 5432)
    env = {"OPSLORE_DATABASE_URL": relayed(db_url, relay), "OPSLORE_TOPIC": topic, "OPSLORE_DLQ_TOPIC": dlq,
           "OPSLORE_CONSUMER_GROUP": f"ready-{uuid.uuid4().hex[:6]}",
           "OPSLORE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
           "OPSLORE_PROJECTOR_METRICS_HOST": "127.0.0.1"}
    first, first_port = processes(["projector", "run"], env, "OPSLORE_PROJECTOR_METRICS_PORT")

    def holding(port: int) -> dict[str, Any] | None:  # (a member may first join before the topic's metadata)
        body = answers(port, 200)
        return body if body and body["checks"]["group"]["partitions"] == [0] else None

    body = eventually(lambda: holding(first_port), timeout=60)
    assert body["checks"]["lag"] == {"ok": True, "lag": 0, "max": 10000}, body
    assert httpx.get(f"http://127.0.0.1:{first_port}/healthz", timeout=5).json() == {"status": "ok"}
    assert "opslore_projector" in httpx.get(f"http://127.0.0.1:{first_port}/metrics", timeout=5).text

    second, second_port = processes(["projector", "run"], env, "OPSLORE_PROJECTOR_METRICS_PORT")

    def both_ready() -> list[dict[str, Any]] | None:
        bodies = [answers(p, 200) for p in (first_port, second_port)]
        return [b for b in bodies if b is not None] if all(bodies) and second_joined(bodies) else None

    def second_joined(bodies: list[dict[str, Any] | None]) -> bool:
        return sorted(tuple(b["checks"]["group"]["partitions"]) for b in bodies if b) == [(), (0,)]

    ready = eventually(both_ready, timeout=90)  # one partition: one member holds it, the other stands by
    assert sorted(b["checks"]["group"]["standby"] for b in ready) == [False, True], ready

    relay.cut()  # PostgreSQL is gone for these two processes

    def both_lost() -> list[dict[str, Any]] | None:
        bodies = [answers(p, 503) for p in (first_port, second_port)]
        return [b for b in bodies if b is not None] if all(bodies) else None

    for body in eventually(both_lost, timeout=60):
        assert body["status"] == "not_ready" and body["checks"]["postgresql"]["ok"] is False, body
    assert first.poll() is None and second.poll() is None  # not ready, but alive: no restart needed


def test_the_governance_worker_is_ready_when_postgresql_answers_and_its_scheduler_runs(
        settings: Settings, fresh_database: Callable[[], str],
        processes: Callable[..., tuple[subprocess.Popen[bytes], int]]) -> None:
    db_url = fresh_database()
    pg = urlsplit(db_url)
    relay = Relay(pg.hostname or "127.0.0.1", pg.port or 5432)
    worker, port = processes(["governance", "run"], {"OPSLORE_DATABASE_URL": relayed(db_url, relay),
                                                     "OPSLORE_GOVERNANCE_INTERVAL_SECONDS": "3600"},
                             "OPSLORE_GOVERNANCE_METRICS_PORT")
    body = eventually(lambda: answers(port, 200), timeout=60)
    assert body["checks"]["scheduler"]["ok"] is True and body["checks"]["scheduler"]["next_run"], body
    assert body["checks"]["postgresql"] == {"ok": True}
    relay.cut()
    body = eventually(lambda: answers(port, 503), timeout=60)
    assert body["checks"]["postgresql"]["ok"] is False and body["checks"]["scheduler"]["ok"] is True, body
    assert worker.poll() is None
