"""Compact text rendering of a briefing, for an agent to put into its model's context. Pure.

The JSON answer is for programs (ids, scores, provenance); `rendered` is what a planner reads:
one line per hint with its warnings and the first live check, and the principle stated once.
Text that came from evidence is shown with its control characters, line breaks, line separators and bidi
overrides as visible escapes (`printable(..., one_line=True)`): an ANSI colour code or a newline from a log
line reaches the model as `\x1b[31m` or `\n`, never as a new line of the briefing or a terminal command.
The JSON answer keeps the text verbatim.
"""

from __future__ import annotations

from schemas.api import Hint
from services.common.printable import printable

HEADER = "Past incidents (clues, not verdicts; confirm each with current telemetry before acting):"


def _shown(text: str) -> str:
    return printable(text, one_line=True)


def render_hint(rank: int, h: Hint) -> str:
    lines = [f"{rank}. {_shown(h.summary)} | cause: {_shown(h.root_cause or '?')} | from "
             f"{_shown(', '.join(h.source_incidents))} | confidence {h.confidence:.2f}"]
    notes = [f"{w.code}: {w.message}" for w in h.warnings if w.code != "history_is_hypothesis"]
    if notes:
        lines.append("   ! " + _shown("; ".join(notes)))
    for check in h.verify_with[:1]:
        lines.append(f"   check {_shown(check.source)}: {_shown(check.query)} -> {_shown(check.expect)}")
    return "\n".join(lines)


def render(hints: list[Hint]) -> str:
    if not hints:
        return "No relevant past incidents: investigate from current evidence."
    return "\n".join([HEADER, *(render_hint(i, h) for i, h in enumerate(hints, 1))])
