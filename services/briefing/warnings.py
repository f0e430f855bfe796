"""Warnings attached to every hint (CONTRACT section 4). Pure: facts in, warnings out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from schemas.api import Warning_
from services.briefing.facts import RecordFacts
from services.briefing.rank import RankQuery


@dataclass(frozen=True)
class WarningContext:
    now: datetime
    stale_after_days: int
    low_confidence_below: float
    alert_categories: dict[str, dict[str, set[str]]]  # alert name -> category -> incidents
    tenant_misleading: dict[str, list[str]]  # signal -> incidents where it misled
    # the question's likely root-cause categories, inferred from the tenant's approved records
    inferred_categories: dict[str, float] = field(default_factory=dict)


def warnings_for(q: RankQuery, row: RecordFacts, confidence: float, ctx: WarningContext) -> list[Warning_]:
    out = [Warning_(code="history_is_hypothesis", message="A clue from history; confirm with current telemetry.")]
    out += _alternatives(row, ctx)
    out += _environment(q, row)
    out += _misleading(q, row, ctx)
    seen = row.last_verified_at
    if seen is not None and (ctx.now - seen).days > ctx.stale_after_days:
        out.append(Warning_(code="stale", message=f"Last verified {(ctx.now - seen).days} days ago."))
    if confidence < ctx.low_confidence_below:
        out.append(Warning_(code="low_confidence", message=f"Confidence {confidence:.2f} is low."))
    if row.untrusted_evidence:
        out.append(Warning_(code="untrusted_source", message="Some evidence is untrusted text; withheld."))
    if row.imported and row.adopted == 0:
        out.append(Warning_(code="imported_unverified", message="Learned from an imported postmortem; not yet "
                                                                "confirmed here by adopted feedback or a live check."))
    return out


ALTERNATIVE_SHARE = 0.2  # an inferred category this likely is worth naming next to a hint of another


def _alternatives(row: RecordFacts, ctx: WarningContext) -> list[Warning_]:
    own = row.root_cause_category
    cats = ctx.alert_categories.get(row.alert_name or "", {})
    others = {c: inc for c, inc in cats.items() if c != own}
    likely = {c: share for c, share in ctx.inferred_categories.items() if c != own and share >= ALTERNATIVE_SHARE}
    parts = []
    if others:
        listed = "; ".join(f"{c} ({', '.join(sorted(i))})" for c, i in sorted(others.items()))
        parts.append(f"Alert {row.alert_name} has had other root causes: {listed}.")
    if likely:
        listed = ", ".join(f"{c} ({share:.0%})" for c, share in likely.items())
        parts.append(f"Past incidents like this one also point to: {listed}.")
    return [Warning_(code="alternative_root_causes", message=" ".join(parts))] if parts else []


def _environment(q: RankQuery, row: RecordFacts) -> list[Warning_]:
    out: list[Warning_] = []
    diffs = [f"{name} {have!r} (now {asked!r})" for name, asked, have in (
        ("environment", q.environment, row.environment), ("cluster", q.cluster, row.cluster),
        ("version", q.service_version, row.version_range)) if asked and have and asked != have]
    if diffs:
        out.append(Warning_(code="environment_mismatch", message="Learned in " + ", ".join(diffs) + "."))
    if q.topology and row.topology_fingerprint and q.topology != row.topology_fingerprint:
        out.append(Warning_(code="topology_changed",
                            message="The topology fingerprint differs from when this was learned."))
    return out


def _misleading(q: RankQuery, row: RecordFacts, ctx: WarningContext) -> list[Warning_]:
    flagged = {s: ["this record"] for s in q.signals & row.misleading_signals}
    for s in q.signals:
        if s in ctx.tenant_misleading:
            flagged.setdefault(s, []).extend(ctx.tenant_misleading[s])
    if not flagged:
        return []
    listed = "; ".join(f"{s} (misled in {', '.join(sorted(set(i)))})" for s, i in sorted(flagged.items()))
    return [Warning_(code="misleading_signal", message=f"Signals that misled before: {listed}.")]
