"""Compact text rendering of a briefing, for an agent to put into its model's context. Pure.

The JSON answer is for programs (ids, scores, provenance); `rendered` is what a planner reads:
one line per hint with its warnings and the first live check, and the principle stated once.
"""

from __future__ import annotations

from schemas.api import Hint

HEADER = "Past incidents (clues, not verdicts; confirm each with current telemetry before acting):"


def render_hint(rank: int, h: Hint) -> str:
    lines = [f"{rank}. {h.summary} | cause: {h.root_cause or '?'} | from {', '.join(h.source_incidents)} "
             f"| confidence {h.confidence:.2f}"]
    notes = [f"{w.code}: {w.message}" for w in h.warnings if w.code != "history_is_hypothesis"]
    if notes:
        lines.append("   ! " + "; ".join(notes))
    for check in h.verify_with[:1]:
        lines.append(f"   check {check.source}: {check.query} -> {check.expect}")
    return "\n".join(lines)


def render(hints: list[Hint]) -> str:
    if not hints:
        return "No relevant past incidents: investigate from current evidence."
    return "\n".join([HEADER, *(render_hint(i, h) for i, h in enumerate(hints, 1))])
