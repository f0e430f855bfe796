"""Replay reports: a terminal table (rich) and a JSON file."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from replay.runner import ScenarioResult


def print_table(results: list[ScenarioResult], console: Console | None = None) -> None:
    console = console or Console()
    table = Table("scenario", "step", "expectation", "result", "detail", show_lines=False)
    for r in results:
        if r.error:
            table.add_row(r.name, "-", "runs", "[red]ERROR[/red]", r.error[:120])
        for s in r.results:
            mark = "[green]pass[/green]" if s.check.passed else "[red]FAIL[/red]"
            table.add_row(r.name, s.step, s.check.name, mark, "" if s.check.passed else s.check.detail[:120])
    console.print(table)
    checks = [s.check for r in results for s in r.results]
    passed = sum(1 for c in checks if c.passed)
    console.print(f"scenarios: {sum(r.passed for r in results)}/{len(results)} passed; "
                  f"expectations: {passed}/{len(checks)} passed")


def write_json(results: list[ScenarioResult], path: Path) -> None:
    checks = [s.check for r in results for s in r.results]
    doc = {"scenarios": len(results), "scenarios_passed": sum(r.passed for r in results),
           "expectations": len(checks), "expectations_passed": sum(c.passed for c in checks),
           "results": [r.to_json() for r in results]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
