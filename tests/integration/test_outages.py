"""Outages of the real broker and database under the running API and projector.

Broker down -> appends answer 503 (with Retry-After) within 5 s and never hang; the gateway accepts again
within 10 s of the broker's return; every acknowledged event is projected. PostgreSQL restarted -> 503
while it is away, service again afterwards without restarting anything; the projector survives both.
These stop the shared stack's services, so they restore them in `finally` and wait until they answer.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.cli.client import ApiError, OpsloreClient
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import raw_event
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
LOCAL = Path(__file__).parents[2] / "deploy" / "local"


def _stack(script: str, action: str) -> None:
    subprocess.run([str(LOCAL / script), action], check=True, capture_output=True, timeout=180)


def _projector_pid() -> int:
    state = Path(os.environ.get("OPSLORE_STATE_DIR", "/var/tmp/opslore"))
    return int((state / "run" / "projector.pid").read_text())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _event(incident: str, summary: str) -> dict[str, Any]:
    return raw_event("observation.recorded", incident, {"source": "logs", "summary": summary})


@pytest.fixture()
def local_stack(settings: Settings) -> Iterator[None]:
    if os.environ.get("OPSLORE_TESTCONTAINERS") == "1":
        pytest.skip("stops local services; the container stack is not driven by deploy/local")
    yield


def test_broker_outage_fails_fast_and_heals(tenant_client: TenantFactory, settings: Settings,
                                             local_stack: None) -> None:
    client = tenant_client()
    incident = f"INC-K{uuid.uuid4().hex[:6]}"
    acked = [_event(incident, "before the outage")]
    client.append(acked)
    projector = _projector_pid()
    _stack("kafka.sh", "stop")
    try:
        started = time.monotonic()
        with pytest.raises(ApiError) as err:
            client.append([_event(incident, "during the outage")])
        assert err.value.status == 503 and time.monotonic() - started <= 5.5
        with httpx.Client(base_url=settings.api_url, timeout=10) as http:
            assert http.get("/healthz").status_code == 200
            ready = http.get("/readyz")
            assert ready.status_code == 503 and ready.json()["checks"]["kafka"]["ok"] is False
    finally:
        _stack("kafka.sh", "start")
    back = time.monotonic()
    while True:  # the next request after the broker's return must be accepted within 10 s
        try:
            acked.append(_event(incident, f"after the outage {len(acked)}"))
            client.append([acked[-1]])
            break
        except ApiError as exc:
            acked.pop()
            assert exc.status == 503 and time.monotonic() - back < 10, "not accepting again within 10 s"
            time.sleep(0.5)
    assert time.monotonic() - back <= 10
    summaries = {str(e["payload"]["summary"]) for e in acked}
    def projected() -> set[str] | None:
        episode = client.episode(incident)
        seen = {str(o["summary"]) for o in episode["observations"]} if episode else set()
        return seen if summaries <= seen else None

    assert eventually(projected, timeout=60) >= summaries  # nothing acknowledged was lost
    assert _alive(projector) and _projector_pid() == projector  # it rode out the outage by itself
    with httpx.Client(base_url=settings.api_url, timeout=10) as http:
        assert eventually(lambda: http.get("/readyz").status_code == 200, timeout=30)


def test_database_restart_answers_503_then_recovers(tenant_client: TenantFactory, settings: Settings,
                                                     local_stack: None) -> None:
    client = tenant_client()
    projector = _projector_pid()
    _stack("postgres.sh", "stop")
    try:
        with pytest.raises(ApiError) as err:
            client.briefing({"text": "connection pool exhausted"})
        assert err.value.status == 503
        with httpx.Client(base_url=settings.api_url, timeout=10) as http:
            assert http.get("/healthz").status_code == 200  # liveness is the process, not its dependencies
            ready = http.get("/readyz")
            assert ready.status_code == 503 and ready.json()["checks"]["postgresql"]["ok"] is False
    finally:
        _stack("postgres.sh", "start")
    answer = eventually(lambda: _brief_or_none(client), timeout=30)
    assert "hints" in answer
    incident = f"INC-D{uuid.uuid4().hex[:6]}"
    client.append([_event(incident, "after the restart")])
    assert eventually(lambda: client.episode(incident), timeout=60)  # the projector reconnected by itself
    assert _alive(projector) and _projector_pid() == projector


def _brief_or_none(client: OpsloreClient) -> dict[str, object] | None:
    try:
        return client.briefing({"text": "connection pool exhausted"})
    except ApiError as exc:
        assert exc.status == 503, exc
        return None
