"""GET /v1/briefings/{id} returns the answer as it was given, to its own tenant and project only."""

from __future__ import annotations

import uuid

import pytest

from services.cli.client import ApiError
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def test_a_stored_briefing_is_returned_as_given(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    client.append(resolved_incident("INC-R1"))
    cand = eventually(lambda: client.candidates(incident_id="INC-R1", state="pending"))[0]
    client.approve(str(cand["candidate_id"]))
    answer = client.briefing({"services": ["checkout-api"], "signals": ["db_pool_saturation"],
                              "text": "connection pool exhausted"})
    assert answer["hints"]
    stored = client.request("GET", f"/v1/briefings/{answer['briefing_id']}")
    assert stored == answer
    other = tenant_client()  # another tenant: the id exists, but not for it
    same_tenant_other_project = tenant_client(project="elsewhere", tenant=getattr(client, "tenant"))  # noqa: B009
    for key in (other, same_tenant_other_project):
        with pytest.raises(ApiError) as err:
            key.request("GET", f"/v1/briefings/{answer['briefing_id']}")
        assert err.value.status == 404
    with pytest.raises(ApiError) as err:
        client.request("GET", f"/v1/briefings/{uuid.uuid4()}")
    assert err.value.status == 404
