"""MCP over the live stack with the official SDK's client (`mcp.Client`): streamable HTTP at /mcp and
stdio through `opslore mcp`. Nothing is mocked: the tools reach the real API, PostgreSQL and Kafka."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from services.cli.client import OpsloreClient
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
T = TypeVar("T")
TOOLS = {"whoami", "get_briefing", "verify_briefing", "record_observation", "send_feedback", "get_episode",
         "search_records", "get_record"}
QUESTION = {"alert": {"name": "HighErrorRate"}, "services": ["checkout-api"], "signals": ["db_pool_saturation"]}


def _learned(reviewer: OpsloreClient, incident: str = "INC-PAST") -> str:
    reviewer.append(resolved_incident(incident))
    cand = eventually(lambda: reviewer.candidates(incident_id=incident, state="pending"))[0]
    return str(reviewer.approve(str(cand["candidate_id"]))["family_id"])


def _http(settings: Settings, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    return Client(streamable_http_client(f"{settings.api_url}/mcp", http_client=http))


def _stdio(settings: Settings, key: str) -> Client:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPSLORE_")}
    env.update(OPSLORE_API_URL=settings.api_url, OPSLORE_API_KEY=key)
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "services.cli.main", "mcp"], env=env))


def _session(client: Client, work: Callable[[Client], Awaitable[T]]) -> T:
    async def run() -> T:
        async with client as connected:
            return await work(connected)
    return asyncio.run(run())


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.fixture
def tenant(tenant_client: TenantFactory) -> tuple[OpsloreClient, OpsloreClient, str]:
    reviewer = tenant_client(role="reviewer")
    family = _learned(reviewer)
    agent = tenant_client(role="agent", tenant=getattr(reviewer, "tenant"))  # noqa: B009
    return reviewer, agent, family


def test_http_tools_answer_from_the_key_scope(tenant: tuple[OpsloreClient, OpsloreClient, str],
                                              settings: Settings) -> None:
    reviewer, agent, family = tenant

    async def work(c: Client) -> dict[str, Any]:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        briefing = _data(await c.call_tool("get_briefing", {**QUESTION, "incident_id": "INC-NOW"}))
        return {"tools": listed, "whoami": _data(await c.call_tool("whoami", {})), "briefing": briefing,
                "search": _data(await c.call_tool("search_records", {"query": "connection pool exhausted"})),
                "record": _data(await c.call_tool("get_record", {"family_id": family}))}

    out = _session(_http(settings, agent.key), work)
    assert set(out["tools"]) == TOOLS  # no review tools over MCP
    assert out["tools"]["get_record"].annotations.read_only_hint is True
    assert out["tools"]["record_observation"].annotations.read_only_hint is False
    assert out["tools"]["get_briefing"].output_schema["properties"]["hints"]
    assert out["whoami"] == {"tenant": getattr(reviewer, "tenant"), "project": "default", "role": "agent",  # noqa: B009
                             "status": "ok"}
    hint = out["briefing"]["hints"][0]
    assert hint["family_id"] == family and hint["authority"] == "clue" and out["briefing"]["rendered"]
    assert "history_is_hypothesis" in {w["code"] for w in hint["warnings"]} and hint["verify_with"]
    assert out["search"]["records"][0]["family_id"] == family
    assert out["record"]["family_id"] == family
    stored = agent.request("GET", f"/v1/briefings/{out['briefing']['briefing_id']}")
    assert stored["hints"][0]["family_id"] == family


def test_writes_are_acknowledged_by_the_ledger_and_capped_in_trust(
        tenant: tuple[OpsloreClient, OpsloreClient, str], settings: Settings, tenant_client: TenantFactory) -> None:
    reviewer, agent, family = tenant

    async def work(c: Client) -> dict[str, Any]:
        briefing = _data(await c.call_tool("get_briefing", QUESTION))
        obs = _data(await c.call_tool("record_observation", {
            "incident_id": "INC-MCP", "source": "prometheus", "summary": "pool at 100% for 12 minutes",
            "signals": ["db_pool_saturation"], "trust": "trusted_tool"}))
        fb = _data(await c.call_tool("send_feedback", {"briefing_id": briefing["briefing_id"],
                                                        "family_id": family, "verdict": "adopted",
                                                        "incident_id": "INC-MCP"}))
        return {"obs": obs, "fb": fb}

    out = _session(_http(settings, agent.key), work)
    assert out["obs"]["trust"] == "model_inferred"  # an agent's account never becomes trusted_tool
    episode = eventually(lambda: agent.episode("INC-MCP"))
    assert out["obs"]["event_id"] in str(episode) and "pool at 100%" in str(episode)
    admin = tenant_client(role="admin", tenant=getattr(reviewer, "tenant"))  # noqa: B009
    ledger = "\n".join(admin.export(incident_id="INC-MCP"))
    assert out["obs"]["event_id"] in ledger and out["fb"]["event_id"] in ledger
    assert '"trust":"trusted_tool"' not in ledger.replace(" ", "")


def test_keys_are_required_and_arguments_cannot_pick_the_tenant(
        tenant: tuple[OpsloreClient, OpsloreClient, str], tenant_client: TenantFactory, settings: Settings) -> None:
    victim, _, family = tenant
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(f"{settings.api_url}/mcp", json=init, headers=headers).status_code == 401
    for bad in ("olk_not-a-key", settings.admin_token):  # the bootstrap token only creates keys
        wrong = {**headers, "Authorization": f"Bearer {bad}"}
        assert httpx.post(f"{settings.api_url}/mcp", json=init, headers=wrong).status_code == 401
    intruder = tenant_client(role="agent")
    victim_tenant = getattr(victim, "tenant")  # noqa: B009

    async def work(c: Client) -> dict[str, Any]:
        smuggled = {**QUESTION, "tenant": victim_tenant, "project": "default"}
        return {"brief": _data(await c.call_tool("get_briefing", smuggled)),
                "who": _data(await c.call_tool("whoami", {"tenant": victim_tenant})),
                "record": await c.call_tool("get_record", {"family_id": family, "tenant": victim_tenant})}

    out = _session(_http(settings, intruder.key), work)
    assert out["brief"]["hints"] == [] and out["who"]["tenant"] == getattr(intruder, "tenant")  # noqa: B009
    assert out["record"].is_error


def test_stdio_transport_forwards_with_the_key_from_the_environment(
        tenant: tuple[OpsloreClient, OpsloreClient, str], settings: Settings) -> None:
    reviewer, agent, family = tenant

    async def work(c: Client) -> dict[str, Any]:
        return {"who": _data(await c.call_tool("whoami", {})),
                "brief": _data(await c.call_tool("get_briefing", QUESTION)),
                "bad": await c.call_tool("get_episode", {"incident_id": "INC-NEVER"})}

    out = _session(_stdio(settings, agent.key), work)
    assert out["who"]["role"] == "agent" and out["who"]["tenant"] == getattr(reviewer, "tenant")  # noqa: B009
    assert out["brief"]["hints"][0]["family_id"] == family
    assert out["bad"].is_error and "not_found" in out["bad"].content[0].text


def test_a_resuming_agent_gets_the_session_memory(tenant: tuple[OpsloreClient, OpsloreClient, str],
                                                  settings: Settings) -> None:
    _, agent, _ = tenant
    agent.append(resolved_incident("INC-RESUME", verify=False)[:3])  # opened, observed, hypothesis proposed
    eventually(lambda: (agent.episode("INC-RESUME") or {}).get("event_count") == 3)

    async def work(c: Client) -> dict[str, Any]:  # a new session, as another replica would open it
        return _data(await c.call_tool("get_episode", {"incident_id": "INC-RESUME"}))

    resume = _session(_http(settings, agent.key), work)["resume"]
    assert [h["statement"] for h in resume["open_hypotheses"]] == ["pool exhausted"]
    assert resume["trusted_evidence"][0]["summary"] == "db_pool_saturation observed"
    assert "verify or refute: pool exhausted" in resume["open_questions"]
    assert "root cause not established" in resume["open_questions"]
