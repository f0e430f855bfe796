"""Alert intake over the live stack: the webhook body as Alertmanager sends it, and a real Alertmanager
(Debian's prometheus-alertmanager, own port and storage) configured with deploy/integrations/alertmanager.yml."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from schemas.alerts import label_fingerprint
from services.cli.client import ApiError, OpsloreClient
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
RECIPE = Path(__file__).parents[2] / "deploy" / "integrations" / "alertmanager.yml"
AM_PORT = 9095  # 9093 is the Kafka controller's


def _alert(incident: str, status: str = "firing", fingerprint: str | None = None) -> dict[str, Any]:
    labels = {"alertname": "HighErrorRate", "service": "checkout-api", "incident_id": incident}
    return {"status": status, "labels": labels,
            "annotations": {"summary": "checkout 5xx", "description": "pending DB connections climbing"},
            "startsAt": "2026-11-30T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus/graph", "fingerprint": fingerprint or uuid.uuid4().hex[:16]}


def _webhook(*alerts: dict[str, Any]) -> dict[str, Any]:
    return {"version": "4", "status": alerts[0]["status"], "receiver": "opslore", "groupKey": "{}:{}",
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am",
            "truncatedAlerts": 0, "alerts": list(alerts)}


def _learned(client: OpsloreClient) -> None:
    client.append(resolved_incident("INC-PAST"))
    cand = eventually(lambda: client.candidates(incident_id="INC-PAST", state="pending"))[0]
    client.approve(str(cand["candidate_id"]))


def test_the_webhook_opens_an_incident_with_a_briefing_once(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    _learned(client)
    agent = tenant_client(role="agent", tenant=getattr(client, "tenant"))  # noqa: B009
    firing = _alert("INC-AM1")
    answer = agent.request("POST", "/v1/alerts/alertmanager", json=_webhook(firing))
    item = answer["incidents"][0]
    assert item["incident_id"] == "INC-AM1" and item["status"] == "firing" and item["hint_count"] >= 1
    assert item["top_hint"] and agent.request("GET", f"/v1/briefings/{item['briefing_id']}")["hints"]
    episode = eventually(lambda: client.episode("INC-AM1"))
    assert episode["alert_name"] == "HighErrorRate" and episode["event_count"] == 1
    again = agent.request("POST", "/v1/alerts/alertmanager", json=_webhook(firing))
    assert again == answer  # a re-delivery appends nothing and answers the same briefing
    resolved = agent.request("POST", "/v1/alerts/alertmanager",
                             json=_webhook(firing | {"status": "resolved", "endsAt": "2026-11-30T10:30:00Z"}))
    assert resolved["incidents"][0]["briefing_id"] == item["briefing_id"]
    episode = eventually(lambda: (e := client.episode("INC-AM1")) and e["event_count"] == 2 and e)
    assert episode["status"] == "open"  # an alert going quiet never resolves the incident
    time.sleep(1.0)
    assert client.episode("INC-AM1")["event_count"] == 2  # type: ignore[index]


def test_the_intake_needs_a_key_and_a_well_formed_body(tenant_client: TenantFactory, settings: Settings) -> None:
    with httpx.Client(base_url=settings.api_url, timeout=10) as http:
        assert http.post("/v1/alerts/alertmanager", json=_webhook(_alert("INC-X"))).status_code == 401
    agent = tenant_client(role="agent")
    for body, field in (({"version": "4", "status": "firing", "receiver": "r", "alerts": []}, "alerts"),
                        (_webhook(_alert("INC-X")) | {"alerts": [_alert("INC-X") | {"status": "pending"}]},
                         "alerts[0].status"),
                        (_webhook(_alert("INC-X") | {"fingerprint": "x/y"}), "alerts[0].fingerprint")):
        with pytest.raises(ApiError) as err:
            agent.request("POST", "/v1/alerts/alertmanager", json=body)
        assert err.value.status == 422 and err.value.field == field


def test_an_alert_listed_twice_is_one_delivery_and_a_missing_fingerprint_is_alertmanagers(
        tenant_client: TenantFactory) -> None:
    """A relay merging groups may list an alert twice (it was a 422 and the whole group was lost), and one that
    builds the body itself may leave out the fingerprint."""
    agent = tenant_client(role="agent")
    twice = _alert("INC-AM2")
    answer = agent.request("POST", "/v1/alerts/alertmanager", json=_webhook(twice, twice, _alert("INC-AM3")))
    first, second, other = answer["incidents"]
    assert first == second and first["incident_id"] == "INC-AM2" and other["incident_id"] == "INC-AM3"
    bare = {k: v for k, v in _alert("unused").items() if k != "fingerprint"}
    bare["labels"] = {"alertname": "DiskFull", "service": "db"}
    got = agent.request("POST", "/v1/alerts/alertmanager", json=_webhook(bare))["incidents"][0]
    assert got["fingerprint"] == label_fingerprint(bare["labels"])
    assert got["incident_id"] == f"am-{got['fingerprint']}-20261130T100000Z"


@pytest.fixture()
def alertmanager(tmp_path: Path, settings: Settings, tenant_client: TenantFactory) -> Iterator[OpsloreClient]:
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if binary is None:
        pytest.fail("prometheus-alertmanager is not installed (deploy/local/install.sh installs it)")
    reviewer = tenant_client(role="reviewer")
    key = tenant_client(role="agent", tenant=getattr(reviewer, "tenant")).key  # noqa: B009
    (tmp_path / "opslore.key").write_text(key)
    config = (RECIPE.read_text().replace("OPSLORE_URL", settings.api_url)
              .replace("/etc/alertmanager/opslore.key", str(tmp_path / "opslore.key"))
              .replace("group_wait: 10s", "group_wait: 1s").replace("group_interval: 1m", "group_interval: 1s"))
    (tmp_path / "alertmanager.yml").write_text(config)
    proc = subprocess.Popen([binary, f"--config.file={tmp_path / 'alertmanager.yml'}",
                             f"--storage.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{AM_PORT}",
                             "--cluster.listen-address="], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with httpx.Client(timeout=2) as http:
            eventually(lambda: _answers(http), timeout=30)
        yield reviewer
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _answers(http: httpx.Client) -> bool:
    try:
        return http.get(f"http://127.0.0.1:{AM_PORT}/-/ready").status_code == 200
    except httpx.HTTPError:
        return False


def test_a_real_alertmanager_opens_the_incident(alertmanager: OpsloreClient, settings: Settings) -> None:
    client = alertmanager
    _learned(client)
    incident = f"INC-RAM{uuid.uuid4().hex[:6]}"
    now = datetime.now(UTC)
    labels = {"alertname": "HighErrorRate", "service": "checkout-api", "incident_id": incident}
    alert = {"labels": labels,
             "annotations": {"summary": "checkout 5xx", "description": "pending DB connections climbing"},
             "startsAt": now.isoformat(), "generatorURL": "http://prometheus/graph"}
    with httpx.Client(timeout=10) as http:
        assert http.post(f"http://127.0.0.1:{AM_PORT}/api/v2/alerts", json=[alert]).status_code == 200
        listed = http.get(f"http://127.0.0.1:{AM_PORT}/api/v2/alerts").json()
        # the fingerprint a relay's alert without one gets is the one Alertmanager itself computes
        assert [a["fingerprint"] for a in listed] == [label_fingerprint(labels)]
        episode = eventually(lambda: client.episode(incident), timeout=60)
        assert episode["alert_name"] == "HighErrorRate" and episode["status"] == "open"
        briefing_id = eventually(lambda: _intake_briefing(settings, vars(client)["tenant"], incident), timeout=30)
        assert client.request("GET", f"/v1/briefings/{briefing_id}")["hints"]  # waiting for the agent
        ended = alert | {"endsAt": (now + timedelta(seconds=1)).isoformat()}
        assert http.post(f"http://127.0.0.1:{AM_PORT}/api/v2/alerts", json=[ended]).status_code == 200
    episode = eventually(lambda: (e := client.episode(incident)) and e["event_count"] >= 2 and e, timeout=60)
    assert episode["status"] == "open"


def _intake_briefing(settings: Settings, tenant: str, incident: str) -> str | None:
    """The briefing the intake computed for the incident's firing alert (the intake table, as the app role)."""
    with psycopg.connect(settings.database_url) as conn:
        conn.execute("SELECT set_config('opslore.tenant', %s, false)", (tenant,))
        row = conn.execute("SELECT briefing_id FROM alert_intake WHERE incident_id = %s AND status = 'firing'",
                           (incident,)).fetchone()
    return str(row[0]) if row and row[0] else None
