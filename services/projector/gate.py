"""CandidateGate: decides, purely, whether a resolved episode may become a Memory Candidate.

CONTRACT section 3: a candidate is produced only when the episode has a root cause backed by at least
one verified hypothesis whose evidence includes a `trusted_tool` observation of the same incident.
When both the hypothesis and the resolution name a root-cause category they must agree.
Text from `untrusted_text` events can be quoted as evidence but never contributes signals, never
raises confidence and never lifts the authority above `clue`.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from schemas.memory import (
    CandidateDraft,
    Episode,
    EvidenceRef,
    HypothesisItem,
    ObservationItem,
    VerifyCheck,
)

TRUSTED = "trusted_tool"
UNTRUSTED = "untrusted_text"


@dataclass(frozen=True)
class GateVerdict:
    draft: CandidateDraft | None
    reason: str


def evaluate(episode: Episode) -> GateVerdict:
    if episode.status != "resolved" or not episode.root_cause:
        return GateVerdict(None, "not resolved with a root cause")
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
    misleading = sorted({m.signal for m in episode.misleading_signals})
    trusted = [o for o in evidence if o.trust != UNTRUSTED]
    signals = _ordered_unique(s for o in trusted for s in o.signals if s not in misleading)
    entities = _ordered_unique(e for o in trusted for e in o.entities)
    trust_mix: dict[str, int] = {}
    for o in evidence:
        trust_mix[o.trust] = trust_mix.get(o.trust, 0) + 1
    last_verified = max((h.judged_at for h in backing if h.judged_at), default=episode.resolved_at)
    assert episode.root_cause is not None
    return CandidateDraft(
        summary=episode.resolution_summary or episode.root_cause,
        root_cause=episode.root_cause,
        root_cause_category=episode.root_cause_category or backing[0].root_cause_category,
        alert_name=episode.alert_name,
        services=list(episode.services),
        signals=signals,
        entities=entities,
        misleading_signals=misleading,
        environment=episode.environment,
        cluster=episode.cluster,
        version=episode.version,
        topology_fingerprint=episode.topology_fingerprint,
        source_incidents=[episode.incident_id],
        evidence=[_evidence_ref(episode.incident_id, o) for o in evidence],
        verify_with=_checks(trusted),
        procedure=[a.action for a in episode.actions if a.outcome == "succeeded" and a.trust != UNTRUSTED],
        verified_hypotheses=[h.statement for h in backing if h.statement],
        trust_mix=trust_mix,
        confidence=confidence(trusted_count=sum(1 for o in evidence if o.trust == TRUSTED),
                              untrusted_count=trust_mix.get(UNTRUSTED, 0)),
        observed_at=episode.opened_at,
        last_verified_at=last_verified,
        resolution=episode.resolution,
    )


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
