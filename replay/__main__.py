"""`python -m replay run DIR...`: replay scenario files against a running stack."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.compare import Comparison
from replay.report import print_comparison, print_table, write_json
from replay.runner import ScenarioRunner
from replay.scenario import load_scenarios
from services.common.settings import get_settings

app = typer.Typer(no_args_is_help=True, help="replay incident scenarios as regression tests")


@app.command()
def run(
    paths: Annotated[list[Path], typer.Argument(help="scenario files or directories")],
    report: Annotated[Path, typer.Option(help="JSON report path")] = Path("replay/results/latest.json"),
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Run every scenario; exit 1 if any expectation fails."""
    s = get_settings()
    if not s.admin_token:
        raise typer.BadParameter("OPSLORE_ADMIN_TOKEN is required to create fresh tenants")
    scenarios = [sc for p in paths for sc in load_scenarios(p)]
    if not scenarios:
        raise typer.BadParameter(f"no scenario files under {', '.join(map(str, paths))}")
    runner = ScenarioRunner(api_url or s.api_url, s.admin_token)
    results = [runner.run(sc) for sc in scenarios]
    comparison = Comparison()
    for sc, res in zip(scenarios, results, strict=True):
        comparison.add(sc, res)
    print_table(results)
    print_comparison(comparison)
    write_json(results, report, comparison)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


@app.command()
def regress(
    ledger: Annotated[Path, typer.Argument(help="ledger file (JSON Lines, from `opslore ledger export`)")],
    snapshot: Annotated[Path, typer.Option(help="stored snapshot (written when missing or with --update)")],
    update: bool = False,
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Replay a ledger file into an empty tenant and diff the result against the stored snapshot."""
    from replay.regress import regress as run_regression
    from services.cli.client import OpsloreClient

    s = get_settings()
    url = api_url or s.api_url
    result = run_regression(OpsloreClient(url, s.admin_token), url, ledger, snapshot, update)
    if result.passed:
        typer.echo(f"regression: identical to {snapshot}")
        return
    for line in result.diff:
        typer.secho(line, fg="green" if line.startswith("+") else "red" if line.startswith("-") else None)
    raise typer.Exit(1)


@app.command()
def check(paths: Annotated[list[Path], typer.Argument()]) -> None:
    """Parse scenario files without running them."""
    scenarios = [sc for p in paths for sc in load_scenarios(p)]
    typer.echo(f"{len(scenarios)} scenarios parse")


if __name__ == "__main__":
    app()
