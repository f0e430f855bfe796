"""Gateway over the live stack: validation, scope binding, roles, all-or-nothing batches."""

from __future__ import annotations

import pytest

from services.cli.client import ApiError, OpsloreClient
from tests.conftest import TenantFactory
from tests.factories import raw_event, resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def _obs(incident: str, summary: str = "x") -> dict[str, object]:
    return raw_event("observation.recorded", incident, {"source": "logs", "summary": summary})


def test_rejected_batch_appends_nothing(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    bad = _obs("INC-A")
    bad["payload"] = {"source": "telepathy", "summary": "x"}
    with pytest.raises(ApiError) as err:
        client.append([_obs("INC-A"), _obs("INC-A"), bad])
    assert err.value.status == 422 and err.value.field == "events[2].payload.source"
    client.append([_obs("INC-A", "the only accepted event")])
    episode = eventually(lambda: client.episode("INC-A"))
    assert episode["event_count"] == 1
    assert [o["summary"] for o in episode["observations"]] == ["the only accepted event"]


def test_tenant_and_project_come_from_the_key(tenant_client: TenantFactory) -> None:
    client = tenant_client(project="checkout")
    other_tenant = _obs("INC-B") | {"tenant": "someone-else"}
    with pytest.raises(ApiError) as err:
        client.append([other_tenant])
    assert err.value.status == 403
    with pytest.raises(ApiError) as err:
        client.append([_obs("INC-B") | {"project": "billing"}])
    assert err.value.status == 403
    client.append([_obs("INC-B") | {"tenant": client.tenant}])  # type: ignore[attr-defined]
    assert eventually(lambda: client.episode("INC-B"))["project"] == "checkout"


def test_authentication_and_roles(api: OpsloreClient, tenant_client: TenantFactory, settings) -> None:
    anonymous = OpsloreClient(settings.api_url, "wrong-key")
    with pytest.raises(ApiError) as err:
        anonymous.append([_obs("INC-C")])
    assert err.value.status == 401
    agent = tenant_client(role="agent")
    with pytest.raises(ApiError) as err:
        agent.reject("00000000-0000-0000-0000-000000000001", "no")
    assert err.value.status == 403
    with pytest.raises(ApiError) as err:
        agent.create_key("anything", "admin")
    assert err.value.status == 403
    with pytest.raises(ApiError) as err:  # the bootstrap token only creates keys
        api.append([_obs("INC-C")])
    assert err.value.status == 403


def test_repeated_event_id_is_a_no_op(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    events = resolved_incident("INC-D")
    client.append(events)
    client.append(events[:2])  # the same event ids again
    client.append([_obs("INC-D", "marker")])
    episode = eventually(lambda: (e := client.episode("INC-D")) and e["event_count"] >= 6 and e)
    assert episode["event_count"] == 6
    assert len(client.candidates(incident_id="INC-D")) == 1


def test_bad_json_and_oversized_batches_are_422(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    response = client.http.post("/v1/ledger/events", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422 and "error" in response.json()
    with pytest.raises(ApiError) as err:
        client.append([_obs("INC-E")] * 1001)
    assert err.value.status == 422 and err.value.field == "events"
