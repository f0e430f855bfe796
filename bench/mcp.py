"""MCP `get_briefing` next to the plain HTTP briefing, same stack, same questions, same run.

    python -m bench.mcp            # needs the running stack (make up) and OPSLORE_ADMIN_TOKEN

Learns BENCH_MCP_INCIDENTS (40) incidents of a fresh tenant through the real pipeline (gateway, projector,
evidence gate, review), then asks BENCH_MCP_QUERIES (200) briefings each way, sequentially, over one
connection each: HTTP with the SDK's `Client`, MCP with the official SDK's client over streamable HTTP.
Writes bench/results/mcp-<time>.json and prints p50/p95/p99 in milliseconds.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.run import percentiles
from services.cli.client import OpsloreClient
from services.common.settings import get_settings
from services.sdk.client import Client as OpsloreSdk
from tests.factories import resolved_incident

RESULTS = Path(__file__).parent / "results"
SERVICES = ["checkout-api", "payments", "search", "auth", "catalog", "ledger", "email", "cart"]
SIGNALS = ["db_pool_saturation", "p99_latency_high", "oom_killed", "error_rate_high", "disk_full"]


def learn(admin: OpsloreClient, incidents: int) -> tuple[str, str]:
    tenant = f"bench-mcp-{uuid.uuid4().hex[:8]}"
    reviewer = OpsloreClient(admin.http.base_url.__str__(), admin.create_key(tenant, "reviewer", "default"))
    for i in range(incidents):
        reviewer.append(resolved_incident(f"INC-B{i}", service=SERVICES[i % len(SERVICES)],
                                          signal=SIGNALS[i % len(SIGNALS)]))
    deadline = time.monotonic() + 120
    approved = 0
    while approved < incidents and time.monotonic() < deadline:
        for cand in reviewer.candidates(state="pending"):
            reviewer.approve(str(cand["candidate_id"]))
            approved += 1
        time.sleep(0.2)
    return tenant, admin.create_key(tenant, "agent", "default")


def questions(n: int) -> list[dict[str, Any]]:
    return [{"alert": {"name": "HighErrorRate"}, "services": [SERVICES[i % len(SERVICES)]],
             "signals": [SIGNALS[(i * 3) % len(SIGNALS)]]} for i in range(n)]


def http_latencies(url: str, key: str, asks: list[dict[str, Any]]) -> list[float]:
    out = []
    with OpsloreSdk(url, key) as sdk:
        for ask in asks:
            start = time.perf_counter()
            sdk.brief(**ask)
            out.append((time.perf_counter() - start) * 1000)
    return out


async def mcp_latencies(url: str, key: str, asks: list[dict[str, Any]]) -> list[float]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    out = []
    async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        for ask in asks:
            start = time.perf_counter()
            result = await client.call_tool("get_briefing", ask)
            out.append((time.perf_counter() - start) * 1000)
            assert not result.is_error, result.content
    return out


def main() -> None:
    settings = get_settings()
    admin = OpsloreClient(settings.api_url, settings.admin_token)
    incidents = int(os.environ.get("BENCH_MCP_INCIDENTS", "40"))
    asks = questions(int(os.environ.get("BENCH_MCP_QUERIES", "200")))
    tenant, key = learn(admin, incidents)
    http_latencies(settings.api_url, key, asks[:20])  # warm both paths
    asyncio.run(mcp_latencies(settings.api_url, key, asks[:20]))
    result = {"tenant": tenant, "incidents": incidents, "queries": len(asks),
              "http_ms": percentiles(http_latencies(settings.api_url, key, asks)),
              "mcp_ms": percentiles(asyncio.run(mcp_latencies(settings.api_url, key, asks)))}
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"mcp-{stamp}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
