"""The MCP server on the official SDK (`mcp` 2.x), in two transports.

- Streamable HTTP at `/mcp` inside the API process (`http_app`): stateless (any replica answers any
  request, so it runs behind a plain load balancer), JSON responses, Bearer API key verified by the SDK's
  token-verification hook (`ApiKeyVerifier`): an unknown key never reaches a tool (401); the tool runs with
  the `Principal` the key authenticates to. Host/Origin allow-list from `OPSLORE_MCP_ALLOWED_HOSTS`.
- stdio (`opslore mcp`, `run_stdio`): a thin process for desktop agents that forwards to a running API with
  the key in `OPSLORE_API_KEY`, through the typed SDK; the API applies the same scope.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from opslore import Client
from starlette.applications import Starlette

from services.common.auth import Principal
from services.common.errors import OpsloreError
from services.common.settings import Settings
from services.container import Services
from services.mcp_server.backend import Admit, AgentBackend, LocalBackend, RemoteBackend
from services.mcp_server.tools import INSTRUCTIONS, register

NAME = "opslore"


class ApiKeyVerifier:
    """The SDK's TokenVerifier over opslore's API keys. The bootstrap token is refused (it only creates keys)."""

    def __init__(self, services_of: Callable[[], Services]) -> None:
        self.services_of = services_of

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            principal = await anyio.to_thread.run_sync(self.services_of().keys.authenticate, token)
        except OpsloreError:
            return None
        if principal.bootstrap or principal.tenant is None:
            return None
        return AccessToken(token=token, client_id=principal.actor, scopes=[principal.role],
                           claims={"key_id": str(principal.key_id), "tenant": principal.tenant,
                                   "project": principal.project, "role": principal.role})


def principal_of(token: AccessToken | None) -> Principal:
    """The Principal the verifier stored for this request (from the key, never from tool arguments)."""
    if token is None or not token.claims:
        raise ToolError("unauthenticated: send Authorization: Bearer <api key>")
    c = token.claims
    return Principal(key_id=uuid.UUID(c["key_id"]), tenant=c["tenant"], project=c["project"], role=c["role"])


def build_server(backend_of: Callable[[], AgentBackend], **auth: Any) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(NAME, title="opslore incident memory", instructions=INSTRUCTIONS,
                                       version="0.1.0", **auth)
    register(server, backend_of)
    return server


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection with the configured Host allow-list; `*` turns the check off (behind a proxy
    that already pins the Host)."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [f"{scheme}://{h}" for h in allowed_hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                     allowed_origins=origins)


def http_server(services_of: Callable[[], Services], settings: Settings,
                admit_of: Callable[[], Admit] | None = None) -> tuple[MCPServer[Any], Starlette]:
    """The MCP server for the API process and its ASGI app (route `/mcp`); the caller runs
    `server.session_manager.run()` in its lifespan. `admit_of`: the process's fair share, read per call (the
    API's lifespan builds it), so that MCP tools spend the same per-key and per-tenant budgets as HTTP."""
    def backend() -> AgentBackend:
        principal = principal_of(get_access_token())
        return LocalBackend(services_of(), principal, admit_of()) if admit_of else \
            LocalBackend(services_of(), principal)

    server = build_server(backend, token_verifier=ApiKeyVerifier(services_of),
                          auth=AuthSettings(issuer_url=settings.api_url, resource_server_url=None))
    app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                     transport_security=transport_security(settings.mcp_allowed_hosts))
    return server, app


def run_stdio(settings: Settings) -> None:
    """`opslore mcp`: stdio transport forwarding to the API at OPSLORE_API_URL with OPSLORE_API_KEY."""
    backend = RemoteBackend(Client(settings.api_url, settings.api_key or None))
    build_server(lambda: backend).run("stdio")
