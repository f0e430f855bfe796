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


def _tool(client: TestClient, key: str, name: str, arguments: dict[str, object], ident: int) -> dict[str, object]:
    """One MCP tools/call over the app's streamable HTTP endpoint (stateless, JSON responses)."""
    response = client.post("/mcp", headers={"Authorization": f"Bearer {key}", "Accept":
                                            "application/json, text/event-stream", "Host": "127.0.0.1:9001"},
                           json={"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                                 "params": {"name": name, "arguments": arguments}})
    assert response.status_code == 200, response.text
    result: dict[str, object] = response.json()["result"]
    return result


def test_mcp_tools_spend_the_same_fair_share_as_http(limited: TestClient, tenant_client: TenantFactory) -> None:
    """An agent cannot go around its key's briefing budget through MCP: the second briefing in the same
    second is refused as a tool error naming the limit, and its HTTP budget is the same bucket."""
    agent = tenant_client(role="agent")
    key = getattr(agent, "key")  # noqa: B009
    first = _tool(limited, key, "get_briefing", {"text": "checkout errors", "services": ["checkout-api"]}, 1)
    assert not first.get("isError"), first
    refused = _tool(limited, key, "get_briefing", {"text": "checkout errors again"}, 2)
    assert refused.get("isError") and "rate_limited" in str(refused["content"])
    over_http = limited.post("/v1/briefings", json={"text": "checkout errors"},
                             headers={"Authorization": f"Bearer {key}"})
    assert over_http.status_code == 429
