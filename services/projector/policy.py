"""EpisodeProjector policy: (episode so far, ledger event) -> changes. Pure.

No clock, no randomness, no I/O: every value written comes from the event or the prior state, and ids
are UUID v5 of stable inputs, so a rebuild from offset 0 reproduces the live tables exactly.
`store.ProjectionTransaction` writes the changes; `runner.ProjectorRunner` owns the transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from schemas import ledger
from schemas.memory import (
    MAX_ACTIONS,
    MAX_OBSERVATIONS,
    ActionItem,
    CandidateDraft,
    Episode,
    HypothesisItem,
    MisleadingItem,
    ObservationItem,
)
from services.projector import gate

CANDIDATE_NAMESPACE = uuid.UUID("6f0b2d1c-3c55-4d8e-9a51-4f2f1c7e9b10")


@dataclass(frozen=True)
class NewCandidate:
    candidate_id: UUID
    incident_id: str
    project: str
    created_at: datetime
    draft: CandidateDraft


@dataclass(frozen=True)
class FeedbackDelta:
    family_id: UUID
    verdict: str
    occurred_at: datetime


@dataclass(frozen=True)
class MisleadingSignal:
    event_id: UUID
    incident_id: str
    project: str
    signal: str
    reason: str


@dataclass(frozen=True)
class Changes:
    """What one event changes: the episode's new state, a Memory Candidate, tenant-wide misleading signals,
    a feedback count. Built once, at the end of `project`; never mutated afterwards."""

    episode: Episode | None = None
    candidate: NewCandidate | None = None
    misleading: tuple[MisleadingSignal, ...] = ()
    feedback: FeedbackDelta | None = None


def candidate_id_for(tenant: str, incident_id: str, resolved_event_id: UUID) -> UUID:
    return uuid.uuid5(CANDIDATE_NAMESPACE, f"{tenant}/{incident_id}/{resolved_event_id}")


def project(state: Episode | None, event: ledger.LedgerRecord) -> Changes:
    """Decide what one event changes. `state` is the incident's episode before the event, if any; it is
    not modified (the new state is a copy)."""
    return apply(state.model_copy(deep=True) if state is not None else None, event)


def apply(owned: Episode | None, event: ledger.LedgerRecord, payload: ledger.Payload | None = None) -> Changes:
    """`project` for a caller that hands over its episode: the event is folded into `owned` itself (no
    copy), which `Changes.episode` then is. Same result as `project`; the runner uses it for episodes it
    loaded for this batch, so an incident with many events in a batch is not copied once per event.
    `payload`: the event's typed payload when the caller has already validated it."""
    payload = payload if payload is not None else event.typed_payload()
    if isinstance(payload, ledger.BriefingFeedback):
        return Changes(feedback=FeedbackDelta(payload.family_id, payload.verdict, event.occurred_at))
    episode = owned if owned is not None else Episode(tenant=event.tenant, project=event.project,
                                                      incident_id=event.incident_id)
    misleading = _apply(episode, event, payload)
    episode.event_count += 1
    candidate = None
    if episode.status == "resolved" and episode.resolved_event_id and not episode.candidate_ids:
        candidate = _gate(episode, event)
    return Changes(episode=episode, candidate=candidate, misleading=misleading)


def _apply(episode: Episode, event: ledger.LedgerRecord, payload: ledger.Payload) -> tuple[MisleadingSignal, ...]:
    """Fold the event into the episode (a copy this call owns); return the tenant-wide misleading signals."""
    match payload:
        case ledger.IncidentOpened():
            _opened(episode, event, payload)
        case ledger.ObservationRecorded():
            _observed(episode, event, payload)
        case ledger.HypothesisProposed():
            _proposed(episode, event, payload)
        case ledger.HypothesisJudged():
            _judged(episode, event, payload)
        case ledger.SignalMisleading():
            episode.misleading_signals.append(MisleadingItem(
                event_id=event.event_id, signal=payload.signal, reason=payload.reason, trust=event.trust.value))
            if event.trust != ledger.Trust.UNTRUSTED_TEXT:  # untrusted text cannot discredit a signal tenant-wide
                return (MisleadingSignal(event.event_id, episode.incident_id, episode.project, payload.signal,
                                         payload.reason),)
        case ledger.ActionTaken():
            if len(episode.actions) < MAX_ACTIONS:
                episode.actions.append(ActionItem(
                    event_id=event.event_id, action=payload.action, kind=payload.kind,
                    outcome=payload.outcome, runbook_ref=payload.runbook_ref, trust=event.trust.value,
                ))
        case ledger.IncidentResolved():
            _resolved(episode, event, payload)
    return ()


def _opened(episode: Episode, event: ledger.LedgerRecord, p: ledger.IncidentOpened) -> None:
    episode.opened_trust = event.trust.value
    episode.alert_name = p.alert.name
    episode.alert_labels = dict(p.alert.labels)
    episode.title = p.title or episode.title
    episode.services = _merge(episode.services, p.services)
    episode.environment = p.environment or episode.environment
    episode.cluster = p.cluster or episode.cluster
    episode.service_version = p.service_version or episode.service_version
    episode.topology_fingerprint = p.topology_fingerprint or episode.topology_fingerprint
    episode.opened_at = episode.opened_at or event.occurred_at


def _observed(episode: Episode, event: ledger.LedgerRecord, p: ledger.ObservationRecorded) -> None:
    if len(episode.observations) >= MAX_OBSERVATIONS:
        episode.observations_dropped += 1
        return
    episode.observations.append(ObservationItem(
        event_id=event.event_id, source=p.source, summary=p.summary, query=p.query,
        signals=list(p.signals), entities=list(p.entities), trust=event.trust.value,
        writer=f"{event.writer.kind}:{event.writer.id}", occurred_at=event.occurred_at,
    ))


def _proposed(episode: Episode, event: ledger.LedgerRecord, p: ledger.HypothesisProposed) -> None:
    h = episode.hypotheses.setdefault(p.hypothesis_id, HypothesisItem(hypothesis_id=p.hypothesis_id))
    h.statement = p.statement
    h.statement_trust = event.trust.value
    h.root_cause_category = p.root_cause_category or h.root_cause_category


def _judged(episode: Episode, event: ledger.LedgerRecord, p: ledger.HypothesisJudged) -> None:
    h = episode.hypotheses.setdefault(p.hypothesis_id, HypothesisItem(hypothesis_id=p.hypothesis_id))
    h.status = "verified" if event.type == ledger.EventType.HYPOTHESIS_VERIFIED else "refuted"
    h.evidence_refs = list(p.evidence_refs)
    h.judged_at = event.occurred_at


def _resolved(episode: Episode, event: ledger.LedgerRecord, p: ledger.IncidentResolved) -> None:
    episode.status = "resolved"
    episode.resolved_at = event.occurred_at
    episode.root_cause = p.root_cause
    episode.root_cause_category = p.root_cause_category
    episode.resolution_summary = p.summary
    episode.resolution = p.resolution
    episode.resolution_trust = event.trust.value
    episode.resolution_refs = list(p.evidence_refs)
    episode.services = _merge(episode.services, p.services or [])
    episode.resolved_event_id = event.event_id
    episode.candidate_ids = []
    episode.gate_verdict = None
    episode.imported = p.imported


def _gate(episode: Episode, event: ledger.LedgerRecord) -> NewCandidate | None:
    verdict = gate.evaluate(episode)
    episode.gate_verdict = verdict.reason
    if verdict.draft is None or episode.resolved_event_id is None:
        return None
    cid = candidate_id_for(episode.tenant, episode.incident_id, episode.resolved_event_id)
    episode.candidate_ids = [cid]
    return NewCandidate(cid, episode.incident_id, episode.project, event.occurred_at, verdict.draft)


def _merge(current: list[str], extra: list[str]) -> list[str]:
    return current + [s for s in extra if s not in current]
