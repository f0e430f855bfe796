"""Fair share through the real app (PostgreSQL and Kafka behind it): a limited request says 429 with Retry-After
and the JSON error body, and a limited append writes nothing to the ledger."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from services.api.app import create_app
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def limited(settings: Settings) -> Iterator[TestClient]:
    tight = settings.model_copy(update={"fair_ingest_key_rate": 0.01, "fair_ingest_key_burst": 1.0,
                                        "fair_key_rate": 0.01, "fair_key_burst": 1.0})
    with TestClient(create_app(tight)) as c:
        yield c


def test_a_limited_request_says_429_and_appends_nothing(limited: TestClient, tenant_client: TenantFactory) -> None:
    reviewer = tenant_client()
    auth = {"Authorization": f"Bearer {reviewer.key}"}
    first, second = resolved_incident("INC-FAIR-1"), resolved_incident("INC-FAIR-2")
    assert limited.post("/v1/ledger/events", json={"events": first}, headers=auth).status_code == 202
    refused = limited.post("/v1/ledger/events", json={"events": second}, headers=auth)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"]["code"] == "rate_limited"
    assert eventually(lambda: reviewer.episode("INC-FAIR-1"))  # the admitted one was appended and projected
    assert reviewer.episode("INC-FAIR-2") is None  # the refused one never reached the ledger
    ask = {"text": "checkout errors", "services": ["checkout-api"]}
    assert limited.post("/v1/briefings", json=ask, headers=auth).status_code == 200
    again = limited.post("/v1/briefings", json=ask, headers=auth)
    assert again.status_code == 429 and again.headers["retry-after"] and again.headers["x-content-type-options"]
