"""`opslore governance`: preview, list, execute, dismiss and revert proposals over the API; `run` is the worker."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from services.cli.client import ApiError, OpsloreClient
from services.cli.terminal import shown
from services.common.settings import get_settings

governance_app = typer.Typer(help="memory maintenance: proposals first, execution second", no_args_is_help=True)
console = Console()


def _request(method: str, path: str, **kwargs: Any) -> Any:
    s = get_settings()
    if not s.api_key:
        raise typer.BadParameter("set OPSLORE_API_KEY (a reviewer key)")
    try:
        return OpsloreClient(s.api_url, s.api_key).request(method, path, **kwargs)
    except ApiError as exc:
        console.print(f"[red]error:[/red] {shown(exc)}")
        raise typer.Exit(1) from None


def _table(proposals: list[dict[str, Any]]) -> None:
    table = Table("proposal", "kind", "state", "change", "families", "reason")
    for p in proposals:
        table.add_row(str(p["proposal_id"])[:8], shown(p["kind"]), shown(p["state"]), shown(p["change"]["action"]),
                      str(len(p["family_ids"])), shown(p["reason"][:70], one_line=True))
    console.print(table)


@governance_app.command("preview")
def preview(job: Annotated[list[str] | None, typer.Option(help="job(s) to run; all when omitted")] = None) -> None:
    """Run the jobs and print the proposals; nothing in memory changes."""
    body = _request("POST", "/v1/governance/preview", json={"jobs": job} if job else {})
    console.print(f"run {body['run_id']}: {len(body['proposals'])} proposal(s)")
    _table(body["proposals"])


@governance_app.command("list")
def list_(state: str | None = "proposed", kind: str | None = None) -> None:
    """Proposals by state (proposed, executed, dismissed, stale, reverted) and kind."""
    params = {k: v for k, v in {"state": state, "kind": kind}.items() if v}
    _table(_request("GET", "/v1/governance/proposals", params=params)["proposals"])


@governance_app.command("execute")
def execute(proposal_id: str) -> None:
    """Execute a proposal; refused (409) when a family moved since the preview or is leased by another worker."""
    out = _request("POST", f"/v1/governance/proposals/{proposal_id}/execute")
    for w in out["wrote"]:
        console.print(f"{'(already executed) ' if out['already_executed'] else ''}family {w['family_id']} "
                      f"version {w['version']} -> {shown(w['state'])}")


@governance_app.command("dismiss")
def dismiss(proposal_id: str, reason: Annotated[str, typer.Option(help="why")]) -> None:
    _request("POST", f"/v1/governance/proposals/{proposal_id}/dismiss", json={"reason": reason})
    console.print("dismissed")


@governance_app.command("revert")
def revert(proposal_id: str, reason: Annotated[str, typer.Option(help="why")]) -> None:
    """Undo an executed proposal (a consolidation returns to the previous versions byte for byte)."""
    out = _request("POST", f"/v1/governance/proposals/{proposal_id}/revert", json={"reason": reason})
    for w in out["wrote"]:
        console.print(f"family {w['family_id']} version {w['version']} -> {shown(w['state'])}")


@governance_app.command("run")
def run(once: bool = False) -> None:
    """The worker: preview every tenant every OPSLORE_GOVERNANCE_INTERVAL_SECONDS (APScheduler), executing
    only `expire` proposals by policy. Safe as several replicas (per-family leases)."""
    from services.common.db import Database
    from services.governance.worker import GovernanceWorker, run_forever

    s = get_settings()
    if once:
        db = Database(s.database_url, max_size=2)
        db.open()
        try:
            console.print(GovernanceWorker(db, s).tick())
        finally:
            db.close()
        return
    run_forever(s)
