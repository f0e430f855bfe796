"""`opslore mcp`, `opslore backup DIR` and `opslore restore DIR` (registered on the main app)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from services.common.settings import get_settings

console = Console()


def mcp() -> None:
    """MCP over stdio for desktop agents (Claude, Cursor): forwards to the API at OPSLORE_API_URL with the
    key in OPSLORE_API_KEY. Streamable HTTP needs no command: the API serves it at /mcp."""
    from services.mcp_server.server import run_stdio

    s = get_settings()
    if not s.api_key:
        raise typer.BadParameter("set OPSLORE_API_KEY: the agent key this MCP server acts with")
    run_stdio(s)


def backup_cmd(directory: Path) -> None:
    """Back up the governed tables (one consistent snapshot), the whole ledger and the index metadata into
    DIRECTORY (owner database role; Kafka)."""
    from services.operations.backup import backup

    manifest = backup(get_settings(), directory)
    console.print(f"backed up {manifest['ledger_records']} ledger records and {len(manifest['tenants'])} "
                  f"tenants into {directory}")


def restore_cmd(directory: Path) -> None:
    """Restore a backup into an EMPTY database and topic: migrate, replay the ledger, load the governed
    tables, project, reindex, and verify every table's checksum against the backup."""
    from services.operations.backup import restore
    from services.operations.catchup import project_until_caught_up

    report = restore(get_settings(), directory, project=project_until_caught_up)
    console.print(f"restored and verified: {report}")
