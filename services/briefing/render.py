"""Compact text rendering of a briefing, for an agent to put into its model's context. Pure.

The JSON answer is for programs (ids, scores, provenance); `rendered` is what a planner reads:
one line per hint with its warnings and the first live check, and the principle stated once.
Text that came from evidence is shown with its control characters, line breaks, line separators and bidi
overrides as visible escapes (`printable(..., one_line=True)`): an ANSI colour code or a newline from a log
line reaches the model as `\x1b[31m` or `\n`, never as a new line of the briefing or a terminal command.
The JSON answer keeps the text verbatim.
"""

from __future__ import annotations

from schemas.api import CauseView, Hint
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


def _words(p: float) -> str:
    """A probability in the words an agent weighs."""
    if p >= 0.6:
        return "likely"
    if p >= 0.3:
        return "plausible"
    if p >= 0.1:
        return "possible"
    return "unlikely"


def _pct(p: float) -> str:
    return f"{p * 100:.0f}%" if p >= 0.01 else "<1%"


RAISED = 2.0  # a base-rate cause whose probability is at least this many times its base rate is named as raised


def raised(causes: list[CauseView]) -> list[CauseView]:
    """Causes the question's history raised (at least RAISED times their base rate, and `possible`, >= 10%) but not
    enough to check first (basis `prior`): said in words, so the text never reads "9%" where the JSON says 21%."""
    return [c for c in causes if c.basis == "prior" and c.probability >= max(RAISED * c.prior, 0.1)]


def render_causes(causes: list[CauseView], novelty: float) -> list[str]:
    """The causes in words: the evidence-backed ones with their probability against their base rate, or, when
    no history matches, the tenant's usual causes and how likely the cause is a new one; a cause the history raised
    but not enough to check first (`raised`) is named with its probability beside its base rate."""
    if not causes:
        return ["No approved history yet: every cause is new to this memory; investigate from current evidence."]
    backed = [c for c in causes if c.basis == "evidence"]
    usual = ", ".join(f"{_shown(c.category)} ({_pct(c.prior)})" for c in
                      sorted((c for c in causes if c.basis == "prior"), key=lambda c: -c.prior)[:3])
    weak = "".join(f" A weak resemblance raises {_shown(c.category)} to {_pct(c.probability)} (base rate "
                   f"{_pct(c.prior)}), not enough to check it first." for c in raised(causes))
    if not backed:
        return [f"No specific history matches; this tenant's usual causes are {usual}.{weak} "
                f"A cause new to this tenant: {_pct(novelty)}. Investigate from current evidence."]
    lines = ["Likely causes from this tenant's history (hypotheses: check them against current evidence):"]
    for c in backed:
        lines.append(f"- {_shown(c.category)}: {_words(c.probability)}, {_pct(c.probability)} "
                     f"(base rate {_pct(c.prior)}), {len(c.family_ids)} similar past incident(s)")
    lines.append(f"- otherwise by base rate: {usual}; a cause new to this tenant: {_pct(novelty)}")
    return lines


def render(hints: list[Hint], causes: list[CauseView] | None = None, novelty: float = 1.0) -> str:
    head = render_causes(causes, novelty) if causes is not None else []
    if not hints:
        return "\n".join(head or ["No relevant past incidents: investigate from current evidence."])
    return "\n".join([*head, HEADER, *(render_hint(i, h) for i, h in enumerate(hints, 1))])
