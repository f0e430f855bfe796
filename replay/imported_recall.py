"""`python -m replay realworld-imported`: recall on imported history next to ledger-learned history.

See replay/realworld_import.py: the committed Markdown postmortems of the real corpus's history imported in
one command into a fresh tenant and approved in bulk; the same history learned through the ledger into a
second fresh tenant; the dev and test questions asked of both in English and Chinese. Prints one table per
split and language and writes replay/results/realworld-imported.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def realworld_imported(
    report: Annotated[Path, typer.Option(help="JSON report")] = Path("replay/results/realworld-imported.json"),
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Import the real corpus's history as Markdown postmortems (one `opslore import postmortems` command, one
    bulk approval) and compare recall on dev and test, in both languages, with the ledger-learned history."""
    import json

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from replay import realworld as rw
    from replay import realworld_import as ri
    from services.cli.client import OpsloreClient
    from services.common.settings import get_settings

    s = get_settings()
    if not s.admin_token:
        raise typer.BadParameter("OPSLORE_ADMIN_TOKEN is required to create fresh tenants")
    url = api_url or s.api_url
    pms = rw.load()
    if changed := ri.stale(pms):
        raise typer.BadParameter(f"{len(changed)} documents under {ri.MARKDOWN} are stale (e.g. {changed[0]}): "
                                 "run `python -m replay.realworld_import` and commit them")
    admin = OpsloreClient(url, s.admin_token)
    console = Console()
    imported, outcome = ri.import_history(admin, url, pms)
    console.print(f"imported {outcome.imported} of {outcome.documents} documents in {outcome.import_seconds} s "
                  f"({outcome.documents_per_second} documents/s end to end; CLI: {outcome.cli_rate}); "
                  f"{outcome.candidates} candidates, {outcome.approved} approved in bulk, {outcome.records} records")
    for line in outcome.refused:
        console.print(f"[red]refused[/red] {line}")
    for line in outcome.skipped:
        console.print(f"[yellow]skipped[/yellow] {line}")
    asked = len(rw.questions(pms, "dev")) + len(rw.questions(pms, "test"))
    with Progress(transient=True, console=console) as progress:
        task = progress.add_task("learn and ask", total=len(rw.history(pms)) + 4 * asked)
        learned = ri.learned_history(admin, url, pms, lambda _: progress.advance(task))
        results = ri.compare(imported, learned, pms, ri.incident_map(pms), lambda _: progress.advance(task))
    for split, by_lang in results.items():
        for lang, scores in by_lang.items():
            table = Table("history", "R@1", "R@5", "MRR", "false hints", "checks on/off", "worse", title=(
                f"{split} split asked in {lang}: {scores[0].questions} recurrences, {scores[0].novel} novel"))
            for sc in scores:
                table.add_row(sc.name, *(f"{v:.3f}" for v in (sc.recall_at_1, sc.recall_at_5, sc.mrr,
                                                              sc.false_hint_rate)),
                              f"{sc.checks_on}/{sc.checks_off}", str(sc.worse))
            console.print(table)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({
        "corpus": rw.summary(pms), "documents": str(ri.MARKDOWN), "import": outcome.to_json(),
        "results": {split: {lang: {sc.name: sc.to_json() for sc in scores} for lang, scores in by_lang.items()}
                    for split, by_lang in results.items()},
    }, indent=2, ensure_ascii=False), encoding="utf-8")
    typer.echo(f"report: {report}")
