"""The recipes under deploy/integrations/ run as their tools would run them, against the live stack:
the MCP entries (HolmesGPT, Claude Code over HTTP; Claude Desktop, Cursor over stdio) through the official
MCP client, the HolmesGPT HTTP toolset's command through bash, and the Keep workflow's request and
enrichment paths. The Alertmanager receiver has its own test (test_alert_intake.py)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import jinja2
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from services.cli.client import OpsloreClient
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
RECIPES = Path(__file__).parents[2] / "deploy" / "integrations"


@pytest.fixture
def agent(tenant_client: TenantFactory) -> OpsloreClient:
    reviewer = tenant_client(role="reviewer")
    reviewer.append(resolved_incident("INC-RECIPE"))
    cand = eventually(lambda: reviewer.candidates(incident_id="INC-RECIPE", state="pending"))[0]
    reviewer.approve(str(cand["candidate_id"]))
    return tenant_client(role="agent", tenant=getattr(reviewer, "tenant"))  # noqa: B009


def _local(url: str, settings: Settings) -> str:
    """The recipe's URL with its host replaced by the test stack's (the path is what the recipe documents)."""
    return settings.api_url + urlsplit(url).path


def _whoami_and_brief(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with client as c:
            who = await c.call_tool("whoami", {})
            brief = await c.call_tool("get_briefing", {"services": ["checkout-api"],
                                                       "signals": ["db_pool_saturation"]})
            assert not who.is_error and not brief.is_error, (who.content, brief.content)
            assert who.structured_content is not None and brief.structured_content is not None
            return who.structured_content, brief.structured_content
    return asyncio.run(run())


def _http_entry(url: str, headers: dict[str, str], settings: Settings) -> Client:
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(_local(url, settings), http_client=http))


def test_holmesgpt_mcp_entry(agent: OpsloreClient, settings: Settings) -> None:
    entry = yaml.safe_load((RECIPES / "holmesgpt.yaml").read_text())["mcp_servers"]["opslore"]
    assert entry["config"]["mode"] == "streamable-http" and urlsplit(entry["config"]["url"]).path == "/mcp"
    headers = {k: jinja2.Template(v).render(env={"OPSLORE_API_KEY": agent.key})
               for k, v in entry["config"]["headers"].items()}
    who, brief = _whoami_and_brief(_http_entry(entry["config"]["url"], headers, settings))
    assert who["role"] == "agent" and brief["hints"] and "verify_with" in entry["llm_instructions"]


def test_claude_code_http_entry(agent: OpsloreClient, settings: Settings) -> None:
    entry = json.loads((RECIPES / "claude-code.mcp.json").read_text())["mcpServers"]["opslore"]
    assert entry["type"] == "http"
    headers = {k: v.replace("${OPSLORE_API_KEY}", agent.key) for k, v in entry["headers"].items()}
    who, brief = _whoami_and_brief(_http_entry(entry["url"], headers, settings))
    assert who["tenant"] == getattr(agent, "tenant") and brief["hints"]  # noqa: B009


@pytest.mark.parametrize("recipe", ["claude_desktop_config.json", "cursor.mcp.json"])
def test_stdio_entries(recipe: str, agent: OpsloreClient, settings: Settings) -> None:
    entry = json.loads((RECIPES / recipe).read_text())["mcpServers"]["opslore"]
    assert entry["env"]["OPSLORE_API_URL"].endswith(":9001") and entry["env"]["OPSLORE_API_KEY"].startswith("olk_")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPSLORE_")}
    env.update(entry["env"], OPSLORE_API_URL=settings.api_url, OPSLORE_API_KEY=agent.key)
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    who, brief = _whoami_and_brief(Client(params))
    assert who["role"] == "agent" and brief["hints"]


def _toolset_command(arguments: dict[str, str]) -> str:
    toolset = yaml.safe_load((RECIPES / "holmesgpt-http-toolset.yaml").read_text())["toolsets"]["opslore/briefing"]
    template = toolset["tools"][0]["command"]
    assert set(re.findall(r"{{ (\w+)", template)) == set(arguments)
    return jinja2.Environment().from_string(template).render(**arguments)


def test_holmesgpt_http_toolset_runs_and_cannot_be_injected(agent: OpsloreClient, settings: Settings,
                                                            tmp_path: Path) -> None:
    env = {**os.environ, "OPSLORE_API_URL": settings.api_url, "OPSLORE_API_KEY": agent.key}

    def run(arguments: dict[str, str]) -> dict[str, Any]:
        out = subprocess.run(["bash", "-c", _toolset_command(arguments)], env=env, capture_output=True, text=True,
                             timeout=30, check=True)
        answer: dict[str, Any] = json.loads(out.stdout)
        return answer

    answer = run({"service": "checkout-api", "signals": "db_pool_saturation", "alert": "HighErrorRate"})
    assert answer["hints"] and answer["hints"][0]["verify_with"]
    marker = tmp_path / "pwned"
    hostile = f"x' ; touch {marker} ; echo '$(touch {marker})"
    answer = run({"service": hostile, "signals": hostile, "alert": hostile})
    assert "briefing_id" in answer and not marker.exists()


def _path(value: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


def test_keep_workflow_opens_the_incident_and_enriches_the_alert(agent: OpsloreClient, settings: Settings) -> None:
    workflow = yaml.safe_load((RECIPES / "keep-workflow.yaml").read_text())["workflow"]
    step = workflow["steps"][0]
    keep_alert = {"name": "HighErrorRate", "service": "checkout-api", "severity": "critical",
                  "description": "checkout 5xx; db_pool_saturation", "lastReceived": "2026-11-30T10:00:00Z",
                  "fingerprint": "a1b2c3d4e5f60718"}
    context = {"alert": keep_alert, "secrets": {"OPSLORE_URL": settings.api_url, "OPSLORE_API_KEY": agent.key}}
    rendered = jinja2.Template(json.dumps(step["provider"]["with"])).render(**context)
    request = json.loads(rendered)
    response = httpx.request(request["method"], request["url"], headers=request["headers"], json=request["body"])
    assert response.status_code == 200, response.text
    steps = {step["name"]: {"results": {"body": response.json()}}}
    enrich = {}
    for item in workflow["actions"][0]["provider"]["with"]["enrich_alert"]:
        enrich[item["key"]] = re.sub(r"{{ steps\.([^ ]+) }}", lambda m: str(_path(steps, m.group(1))),
                                     item["value"].replace("{{ secrets.OPSLORE_URL }}", settings.api_url))
    assert enrich["opslore_hint_count"] != "0" and enrich["opslore_top_hint"] not in ("", "None")
    stored = agent.request("GET", urlsplit(enrich["opslore_briefing"]).path)
    assert stored["hints"][0]["summary"] == enrich["opslore_top_hint"]
