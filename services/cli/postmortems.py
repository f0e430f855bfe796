"""`opslore import postmortems PATH...` and the bulk review of imported candidates, over the HTTP API.

Files and directories (searched recursively for `.md`, `.markdown`, `.json`); each document is one
`POST /v1/postmortems` with `source_ref` its path relative to the directory given (so an edited file is the
same incident). `--dry-run` parses locally, with the server's own parser, and prints what each document
parsed to and what it could not; nothing is sent. The summary counts imported, unchanged and refused (with
the reason) documents and the throughput.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from services.cli.client import ApiError, OpsloreClient
from services.cli.terminal import shown
from services.common.errors import OpsloreError
from services.common.settings import get_settings
from services.postmortems.model import Postmortem
from services.postmortems.parse import format_of, parse

import_app = typer.Typer(help="bring history in: import the postmortems a team already has", no_args_is_help=True)
console = Console()


def documents(paths: list[Path]) -> Iterator[tuple[Path, str]]:
    """(file, source_ref) of every postmortem file under `paths`, in a stable order."""
    for root in paths:
        if root.is_dir():
            for f in sorted(p for p in root.rglob("*") if p.is_file() and format_of(p.name)):
                yield f, f"{root.resolve().name}/{f.relative_to(root).as_posix()}"
        elif root.is_file():
            yield root, root.name
        else:
            raise typer.BadParameter(f"{root}: no such file or directory")


@dataclass
class Tally:
    imported: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    parsed: list[tuple[str, Postmortem]] = field(default_factory=list)


def describe(ref: str, pm: Postmortem) -> Table:
    table = Table(title=shown(ref), show_header=False, title_justify="left")
    rows: list[tuple[str, Any]] = [
        ("title", pm.title), ("services", ", ".join(pm.services)), ("alert", pm.alert), ("severity", pm.severity),
        ("started", pm.started_at.isoformat() if pm.started_at else None),
        ("symptoms", f"{len(pm.symptoms)} from {pm.symptoms_from}: {pm.symptoms[0][:90] if pm.symptoms else ''}"),
        ("root cause", "(withheld: reads like an instruction)" if pm.root_cause_withheld
         else (pm.root_cause or "")[:120] + (" (read from the prose: no root-cause section; check it)"
                                             if pm.root_cause_from == "prose" else "")),
        ("category", pm.root_cause_category), ("resolution", (pm.resolution or "")[:120]),
        ("action items", len(pm.action_items)), ("links", len(pm.links)), ("sections", ", ".join(pm.sections)),
        ("not parsed", ", ".join(pm.unparsed) or "-"),
        ("quarantined", "; ".join(f"{q.field}: {q.reason}" for q in pm.quarantined) or "-"),
    ]
    for name, value in rows:
        table.add_row(name, shown(value if value not in (None, "") else "-", one_line=True))
    return table


@import_app.command("postmortems")
def import_postmortems(
    paths: Annotated[list[Path], typer.Argument(help="files or directories (.md, .markdown, .json)")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="parse only; print what each document parsed to")] = False,
) -> None:
    """Import postmortems into review: each becomes an incident and a candidate flagged imported."""
    files = list(documents(paths))
    tally = Tally()
    client = None if dry_run else _default_client()
    started = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=dry_run) as progress:
        task = progress.add_task("importing" if client else "parsing", total=len(files))
        for path, ref in files:
            progress.update(task, description=shown(ref, one_line=True)[:40])
            one(path, ref, client, tally)
            progress.advance(task)
    elapsed = time.perf_counter() - started
    for ref, pm in tally.parsed:
        console.print(describe(ref, pm))
    summary = Table("outcome", "documents")
    if not dry_run:
        summary.add_row("imported", str(len(tally.imported)))
        summary.add_row("unchanged", str(len(tally.unchanged)))
    else:
        summary.add_row("parsed", str(len(tally.parsed)))
    summary.add_row("refused", str(len(tally.refused)))
    console.print(summary)
    for ref, reason in tally.refused:
        console.print(f"[red]refused[/red] {shown(ref)}: {shown(reason)}")
    rate = len(files) / elapsed if elapsed > 0 else 0.0
    console.print(f"{len(files)} documents in {elapsed:.2f} s ({rate:.1f} documents/s)")
    if tally.refused and not (tally.imported or tally.unchanged or tally.parsed):
        raise typer.Exit(1)


_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def read_document(path: Path) -> str:
    """A document's text: UTF-8, or what its byte-order mark says (UTF-8 or UTF-16, as Windows editors and some
    wiki exports save). Raises OSError or UnicodeDecodeError."""
    data = path.read_bytes()
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    return data.decode(encoding)


def one(path: Path, ref: str, client: OpsloreClient | None, tally: Tally) -> None:
    fmt = format_of(path.name)
    assert fmt is not None
    try:
        content = read_document(path)
    except (OSError, UnicodeDecodeError) as exc:
        tally.refused.append((ref, f"unreadable: not UTF-8 or UTF-16 text with a byte-order mark ({exc})"))
        return
    if client is None:
        try:
            tally.parsed.append((ref, parse(fmt, content)))
        except OpsloreError as exc:
            tally.refused.append((ref, f"{exc.status} {exc.message}"))
        return
    try:
        answer = client.import_postmortem(fmt, content, source_ref=ref)
    except ApiError as exc:
        tally.refused.append((ref, f"{exc.status} {exc}"))
        return
    (tally.unchanged if answer.get("status") == "unchanged" else tally.imported).append(ref)


def _default_client() -> OpsloreClient:
    s = get_settings()
    if not s.api_key:
        raise typer.BadParameter("set OPSLORE_API_KEY (or api_key in the OPSLORE_CONFIG file)")
    return OpsloreClient(s.api_url, s.api_key)


@dataclass(frozen=True)
class BulkOutcome:
    done: list[str]
    skipped: list[tuple[str, str]]


def bulk_review(client: OpsloreClient, *, approve: bool, imported: bool, reason: str | None,
                dry_run: bool) -> BulkOutcome:
    """Approve (or reject) every pending candidate (of imported postmortems with `imported`), one request and
    so one review and audit row each, with one note or reason. Candidates that need a reviewer's own words
    (untrusted text quoted) or that contradict an active record (conflict) are skipped with the reason."""
    params = {"state": "pending", **({"imported": "true"} if imported else {})}
    done: list[str] = []
    skipped: list[tuple[str, str]] = []
    for c in client.candidates(**params):
        cid = str(c["candidate_id"])
        proposal = c.get("proposal") or {}
        if approve and c.get("untrusted_text_quoted"):
            skipped.append((cid, "its text is only quoted: approve it alone with your own summary"))
            continue
        if approve and proposal.get("kind") == "conflict":
            skipped.append((cid, "contradicts an active record: read both sides and approve it alone"))
            continue
        if dry_run:
            done.append(cid)
            continue
        try:
            if approve:
                client.approve(cid, note=reason, expected_version=proposal.get("current_version"))
            else:
                client.reject(cid, reason or "rejected in bulk")
        except ApiError as exc:
            skipped.append((cid, str(exc)))
            continue
        done.append(cid)
    return BulkOutcome(done, skipped)


def print_bulk(outcome: BulkOutcome, verb: str, dry_run: bool) -> None:
    console.print(f"{'would be ' if dry_run else ''}{verb}: {len(outcome.done)}")
    for cid in outcome.done if dry_run else []:
        console.print(f"  {cid}")
    for cid, why in outcome.skipped:
        console.print(f"[yellow]skipped[/yellow] {cid}: {shown(why)}")
