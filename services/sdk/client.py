"""The typed client (`opslore.client`, distribution opslore-client), for server-side code that imports it
from here (the MCP stdio proxy, bench.mcp). One source: clients/python/opslore; its answers are the wire
models of `opslore.models` (generated from `schemas` by services.sdk.wire_models)."""

from opslore.client import AsyncClient, Client, observation_event

__all__ = ["AsyncClient", "Client", "observation_event"]
