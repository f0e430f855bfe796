"""Replay reports: a terminal table (rich) and a JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from replay.compare import Comparison
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


def print_comparison(comparison: Comparison, console: Console | None = None) -> None:
    console = console or Console()
    doc = comparison.to_json()
    table = Table("system", "Recall@1", "Recall@5", "false-hint rate",
                  title="synthetic regression scenarios (not recall on real incidents: docs/evaluation.md)")
    for name, m in doc["systems"].items():
        table.add_row(name, *(f"{m[k]:.3f}" if m[k] is not None else "-"
                              for k in ("recall_at_1", "recall_at_5", "false_hint_rate")))
    console.print(table)
    lat = doc["briefing_latency_ms"]
    console.print(f"briefing latency p50 {lat['p50']} ms, p95 {lat['p95']} ms over {lat['n']} queries; "
                  f"tokens per briefing max {doc['token_estimate']['max']}, mean {doc['token_estimate']['mean']}")


def write_json(results: list[ScenarioResult], path: Path, comparison: Comparison | None = None) -> None:
    checks = [s.check for r in results for s in r.results]
    doc = {"comparison": comparison.to_json() if comparison else None, "scenarios": len(results),
           "scenarios_passed": sum(r.passed for r in results),
           "expectations": len(checks), "expectations_passed": sum(c.passed for c in checks),
           "results": [r.to_json() for r in results]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")


def print_gate(doc: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    table = Table("planner", "mean rank of true cause", "mean checks", "harmful-hint rate", title="memory gate")
    for name in ("memory_off", "memory_on"):
        m = doc[name]
        table.add_row(name.replace("_", " "), f"{m['mean_rank']:.3f}", f"{m['mean_checks']:.3f}",
                      f"{m['harmful_hint_rate']:.3f}")
    console.print(table)
    verdict = "[green]PASSED[/green]" if doc["passed"] else "[red]FAILED[/red]: " + "; ".join(doc["failures"])
    console.print(f"release gate {verdict} over {doc['trials']} trials")
