"""CandidateGate: decides, purely, whether a resolved episode may become a Memory Candidate.

CONTRACT section 3: a candidate is produced only when the episode has a root cause backed by at least
one verified hypothesis whose evidence includes a `trusted_tool` observation of the same incident.
When both the hypothesis and the resolution name a root-cause category they must agree.
Text from `untrusted_text` events can be quoted as evidence but never contributes signals, never
raises confidence and never lifts the authority above `clue`. The same holds for authored text: a
root cause, summary or hypothesis statement written by an `untrusted_text` event is never promoted
into the candidate's summary, root cause, category or canonical content; it is kept as a quote
(`quoted`), marks the candidate (`untrusted_text_quoted`) and the reviewer must write the summary.

The one other way in (CONTRACT v1.2): a resolution that a reviewer imported from the team's own postmortem
(`IncidentResolved.imported`, which only `POST /v1/postmortems` can write: the public ledger endpoint refuses
it) becomes a candidate flagged `imported` without a verified hypothesis (`imported_draft`): a clue at low
confidence, no checks of its own, its instruction-like text quoted, approved only by a reviewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from schemas.ledger import Trust
from schemas.memory import (
    CandidateDraft,
    Episode,
    EvidenceRef,
    HypothesisItem,
    ObservationItem,
    QuotedText,
    VerifyCheck,
)

TRUSTED = Trust.TRUSTED_TOOL
UNTRUSTED = Trust.UNTRUSTED_TEXT
WITHHELD_SUMMARY = "Untrusted text withheld: the reviewer writes this summary (see the quoted text)."
QUOTE_LIMIT = 1000


@dataclass(frozen=True)
class GateVerdict:
    draft: CandidateDraft | None
    reason: str


IMPORTED_CONFIDENCE = 0.4  # the team's written account, not yet confirmed by this system
IMPORTED_VERDICT = "imported postmortem: a reviewer approves it; hints warn imported_unverified"


def evaluate(episode: Episode) -> GateVerdict:
    if episode.status != "resolved" or not episode.root_cause:
        return GateVerdict(None, "not resolved with a root cause")
    if episode.imported is not None and episode.resolution_trust == Trust.USER_STATED:
        return GateVerdict(imported_draft(episode), IMPORTED_VERDICT)
    observations = {o.event_id: o for o in episode.observations}
    backing = [h for h in episode.hypotheses.values() if _backs(h, episode, observations)]
    if not backing:
        return GateVerdict(None, "no verified hypothesis backed by trusted_tool evidence of this incident")
    return GateVerdict(build_draft(episode, backing, observations), "accepted")


def _backs(h: HypothesisItem, episode: Episode, observations: dict[UUID, ObservationItem]) -> bool:
    if h.status != "verified":
        return False
    categories = (h.root_cause_category, episode.root_cause_category)
    if all(categories) and categories[0] != categories[1]:
        return False
    return any(ref in observations and observations[ref].trust == TRUSTED for ref in h.evidence_refs)


def _evidence(
    episode: Episode, backing: list[HypothesisItem], observations: dict[UUID, ObservationItem]
) -> list[ObservationItem]:
    refs: list[UUID] = []
    for h in backing:
        refs.extend(h.evidence_refs)
    refs.extend(episode.resolution_refs)
    seen: set[UUID] = set()
    items: list[ObservationItem] = []
    for ref in refs:
        if ref in observations and ref not in seen:
            seen.add(ref)
            items.append(observations[ref])
    return items


def build_draft(
    episode: Episode, backing: list[HypothesisItem], observations: dict[UUID, ObservationItem]
) -> CandidateDraft:
    evidence = _evidence(episode, backing, observations)
    misleading = sorted({m.signal for m in episode.misleading_signals if m.trust != UNTRUSTED})
    trusted = [o for o in evidence if o.trust != UNTRUSTED]
    signals = _ordered_unique(s for o in trusted for s in o.signals if s not in misleading)
    entities = _ordered_unique(e for o in trusted for e in o.entities)
    quoted = quotes(episode, backing)
    trust_mix: dict[str, int] = {}
    for o in evidence:
        trust_mix[o.trust] = trust_mix.get(o.trust, 0) + 1
    if quoted:
        trust_mix[UNTRUSTED] = trust_mix.get(UNTRUSTED, 0) + len(quoted)
    last_verified = max((h.judged_at for h in backing if h.judged_at), default=episode.resolved_at)
    assert episode.root_cause is not None
    authored = episode.resolution_trust != UNTRUSTED
    statements = [h for h in backing if h.statement_trust != UNTRUSTED]
    return CandidateDraft(
        summary=(episode.resolution_summary or episode.root_cause) if authored else WITHHELD_SUMMARY,
        root_cause=episode.root_cause if authored else "",
        root_cause_category=(episode.root_cause_category if authored else None)
        or next((h.root_cause_category for h in statements if h.root_cause_category), None),
        **_scope(episode),
        signals=signals,
        entities=entities,
        misleading_signals=misleading,
        source_incidents=[episode.incident_id],
        evidence=[_evidence_ref(episode.incident_id, o) for o in evidence],
        verify_with=_checks(trusted),
        procedure=[a.action for a in episode.actions if a.outcome == "succeeded" and a.trust != UNTRUSTED],
        verified_hypotheses=[h.statement for h in statements if h.statement],
        trust_mix=trust_mix,
        confidence=confidence(trusted_count=sum(1 for o in evidence if o.trust == TRUSTED),
                              untrusted_count=trust_mix.get(UNTRUSTED, 0)),
        observed_at=episode.opened_at,
        last_verified_at=last_verified,
        resolution=episode.resolution if authored else None,
        untrusted_text_quoted=bool(quoted),
        quoted=quoted,
    )


def imported_draft(episode: Episode) -> CandidateDraft:
    """The candidate of an imported postmortem: its stated root cause, resolution, services and symptoms (the
    observations its resolution cites), its quarantined text only quoted; no signals, checks or procedure of
    its own (nothing here was observed by a tool), `imported` so that hints say it is unverified."""
    mark = episode.imported
    assert mark is not None and episode.root_cause is not None
    observations = {o.event_id: o for o in episode.observations}
    cited = [observations[r] for r in episode.resolution_refs if r in observations]
    evidence = [o for o in cited if o.trust != UNTRUSTED]
    quoted = [QuotedText(event_id=episode.resolved_event_id, field=f"postmortem {q.field}", text=q.text[:QUOTE_LIMIT],
                         trust=UNTRUSTED) for q in mark.quarantined]
    trust_mix: dict[str, int] = {Trust.USER_STATED.value: 1 + len(evidence)}
    if quoted:
        trust_mix[UNTRUSTED] = len(quoted)
    withheld = mark.root_cause_withheld
    return CandidateDraft(
        summary=WITHHELD_SUMMARY if withheld else (episode.resolution_summary or episode.root_cause),
        root_cause="" if withheld else episode.root_cause, root_cause_category=episode.root_cause_category,
        **{**_scope(episode), "alert_name": mark.alert},
        source_incidents=[episode.incident_id],
        evidence=[_evidence_ref(episode.incident_id, o) for o in evidence],
        trust_mix=trust_mix, confidence=IMPORTED_CONFIDENCE, observed_at=episode.opened_at,
        last_verified_at=None, resolution=episode.resolution,
        untrusted_text_quoted=withheld, quoted=quoted,
        imported=True, imported_from=mark.model_copy(update={"document": None}),
    )


def _scope(episode: Episode) -> dict[str, Any]:
    """Alert, services and environment as the incident was opened: promoted only from a trusted opening."""
    if episode.opened_trust == UNTRUSTED:
        return {"alert_name": None, "services": [], "environment": None, "cluster": None, "service_version": None,
                "topology_fingerprint": None}
    return {"alert_name": episode.alert_name, "services": list(episode.services), "environment": episode.environment,
            "cluster": episode.cluster, "service_version": episode.service_version,
            "topology_fingerprint": episode.topology_fingerprint}


def quotes(episode: Episode, backing: list[HypothesisItem]) -> list[QuotedText]:
    """Authored text written by untrusted events, kept only as quotes for the reviewer."""
    out: list[QuotedText] = []
    if episode.opened_trust == UNTRUSTED:
        for name, text in (("alert", episode.alert_name), ("title", episode.title),
                           ("services", ", ".join(episode.services))):
            if text:
                out.append(QuotedText(field=f"incident.opened {name}", text=text[:QUOTE_LIMIT], trust=UNTRUSTED))
    if episode.resolution_trust == UNTRUSTED:
        for name, text in (("root_cause", episode.root_cause), ("summary", episode.resolution_summary),
                           ("resolution", episode.resolution), ("root_cause_category", episode.root_cause_category)):
            if text:
                out.append(QuotedText(event_id=episode.resolved_event_id, field=f"incident.resolved {name}",
                                      text=text[:QUOTE_LIMIT], trust=UNTRUSTED))
    for h in backing:
        if h.statement and h.statement_trust == UNTRUSTED:
            out.append(QuotedText(field=f"hypothesis {h.hypothesis_id} statement", text=h.statement[:QUOTE_LIMIT],
                                  trust=UNTRUSTED))
    return out


def confidence(*, trusted_count: int, untrusted_count: int) -> float:
    """More independent trusted observations -> more confidence; untrusted text never adds any."""
    value = 0.4 + 0.15 * min(trusted_count, 3) - (0.1 if untrusted_count else 0.0)
    return round(max(0.1, min(value, 0.9)), 3)


def _evidence_ref(incident_id: str, o: ObservationItem) -> EvidenceRef:
    return EvidenceRef(
        event_id=o.event_id, incident_id=incident_id, source=o.source, summary=o.summary,
        trust=o.trust, query=o.query, signals=list(o.signals),
    )


def _checks(trusted: list[ObservationItem]) -> list[VerifyCheck]:
    checks: list[VerifyCheck] = []
    for o in trusted:
        signals = ", ".join(o.signals) or "the same symptom"
        query = o.query or f"{o.source}: look for {signals}"
        expect = f"supports if {signals} shows again; refutes if absent"
        checks.append(VerifyCheck(source=o.source, query=query, expect=expect, signals=list(o.signals)))
    return checks[:5]


def _ordered_unique(values: object) -> list[str]:
    out: list[str] = []
    for v in values:  # type: ignore[attr-defined]
        if v not in out:
            out.append(v)
    return out
