"""Evidence as tools print it (issue 30): an ANSI-coloured log line, a form feed, a backspace, a bell and
U+2028 are accepted on the ledger, stored verbatim under the content hash, come back byte-equal from the
episode endpoint, and are shown escaped in the review UI and in a briefing's `rendered` text. NUL and lone
surrogates are still 422 naming the field; a control character in the URL is still refused."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import orjson
import pytest

from schemas.ledger import LedgerRecord
from services.cli.client import ApiError
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration

LOG_LINE = "\x1b[31mERROR\x1b[0m pool exhausted"  # what `kubectl logs` of a colouring logger gives
SUMMARY = f"{LOG_LINE}\x0cpage two\x08\x07\u2028next line"
SHOWN = "\\x1b[31mERROR\\x1b[0m pool exhausted\\x0cpage two\\x08\\x07\\u2028next line"
ACTIVE = re.compile("[\x1b\x0c\x08\x07\u2028]")


def _incident(incident: str, service: str, signal: str) -> list[dict[str, Any]]:
    events = resolved_incident(incident, service=service, signal=signal, category="db_connection_pool")
    events[1]["payload"]["summary"] = SUMMARY  # the trusted observation
    events[1]["payload"]["values"] = {"raw": LOG_LINE}
    events[4]["payload"]["summary"] = f"{service}: {SUMMARY}"  # the resolution
    return events


def test_tool_output_is_kept_verbatim_and_shown_escaped(tenant_client: TenantFactory, settings: Settings) -> None:
    client = tenant_client("reviewer")
    incident, service, signal = f"INC-V{uuid.uuid4().hex[:6]}", f"svc-{uuid.uuid4().hex[:6]}", "db_pool_saturation"
    events = _incident(incident, service, signal)
    client.append(events)

    episode = eventually(lambda: client.episode(incident) if (client.episode(incident) or {}).get("status")
                         == "resolved" else None)
    observed = [o["summary"] for o in episode["observations"]]
    assert SUMMARY in observed  # byte-equal after the ledger and the projector
    assert episode["resolution_summary"] == f"{service}: {SUMMARY}"

    admin = tenant_client("admin", tenant=client.tenant)  # type: ignore[attr-defined]
    exported = [LedgerRecord.model_validate_json(line) for line in admin.export(incident_id=incident) if line]
    observation = next(r for r in exported if r.event_id == uuid.UUID(str(events[1]["event_id"])))
    assert observation.payload["summary"] == SUMMARY and observation.payload["values"] == {"raw": LOG_LINE}
    assert observation.compute_hash() == observation.content_hash  # the hash covers the text as sent

    candidate = eventually(lambda: client.candidates(incident_id=incident, state="pending"))[0]
    assert candidate["summary"] == f"{service}: {SUMMARY}"
    with httpx.Client(base_url=settings.api_url, timeout=30, follow_redirects=True) as ui:
        form = ui.get("/ui/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
        assert ui.post("/ui/login", data={"api_key": client.key, "csrf_token": csrf}).status_code == 200
        page = ui.get(f"/ui/candidates/{candidate['candidate_id']}").text
    assert SHOWN in page and not ACTIVE.search(page)

    family = client.approve(str(candidate["candidate_id"]), note="verbatim")["family_id"]
    record = client.request("GET", f"/v1/records/{family}")["current"]
    assert record["summary"] == f"{service}: {SUMMARY}"
    answer = eventually(lambda: client.briefing({"services": [service], "signals": [signal],
                                                 "text": "pool exhausted"}) or None)
    hint = next(h for h in answer["hints"] if str(h["family_id"]) == str(family))
    assert hint["summary"] == f"{service}: {SUMMARY}"  # the JSON answer: verbatim
    assert f"{service}: {SHOWN}" in answer["rendered"] and not ACTIVE.search(answer["rendered"])


def test_nul_and_lone_surrogates_are_still_refused_naming_the_field(tenant_client: TenantFactory,
                                                                   settings: Settings) -> None:
    client = tenant_client("agent")
    events = _incident("INC-NUL", "svc-nul", "x")
    events[1]["payload"]["summary"] = "a\x00b"
    with pytest.raises(ApiError) as err:
        client.append(events)
    assert err.value.status == 422 and err.value.field == "events[1].payload.summary"
    raw = orjson.dumps({"events": _incident("INC-SUR", "svc-sur", "x")}).replace(b"page two", b"\\ud800")
    response = httpx.post(f"{settings.api_url}/v1/ledger/events", content=raw, timeout=30, headers={
        "Authorization": f"Bearer {client.key}", "content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["field"].startswith("events[1].payload.summary")
    with httpx.Client(base_url=settings.api_url, timeout=30) as http:  # a URL names things: no control characters
        response = http.get("/v1/incidents/INC%1BX/episode", headers={"Authorization": f"Bearer {client.key}"})
    assert response.status_code == 422 and response.json()["error"]["field"] == "path"
    assert client.episode("INC-NUL") is None and client.episode("INC-SUR") is None
