"""The API's wire models, as the client reads and writes them. GENERATED from the server's models by
`python -m services.sdk.wire_models > clients/python/opslore/models.py`: do not edit by hand.

Answers keep fields this version does not know; requests refuse unknown fields and check each field's own
bounds; the rest is the server's to check (it answers 422 naming the field).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BriefingAlert(_Request):
    name: str = Field(min_length=1, max_length=200)
    labels: dict[str, str] = Field(default_factory=dict, max_length=64)


class BriefingRequest(_Request):
    alert: BriefingAlert | None = None
    services: list[str] = Field(default_factory=list, max_length=50)
    signals: list[str] = Field(default_factory=list, max_length=50)
    entities: list[str] = Field(default_factory=list, max_length=50)
    text: str | None = Field(None, max_length=4000)
    environment: str | None = None
    cluster: str | None = None
    service_version: str | None = Field(None, validation_alias=AliasChoices('service_version', 'version'))
    topology_fingerprint: str | None = None
    limit: int = Field(5, ge=1, le=10)
    explain: bool = False
    incident_id: str | None = None


class FeedbackRequest(_Request):
    family_id: UUID
    verdict: Literal['adopted', 'refuted', 'ignored']
    incident_id: str = Field('CURRENT', pattern='^[A-Za-z0-9._:-]{1,128}$')
    evidence_refs: list[UUID] = Field(default_factory=list, max_length=100)


class RecordSearchRequest(_Request):
    query: str = Field(min_length=1, max_length=4000)
    services: list[str] = Field(default_factory=list, max_length=50)
    limit: int = Field(5, ge=1, le=10)


class Whoami(_Answer):
    """Who the key is: the scope every call of this caller runs in (GET /v1/whoami, MCP `whoami`)."""

    tenant: str
    project: str | None
    role: Literal['agent', 'reviewer', 'admin']
    status: Literal['ok'] = 'ok'


class EvidenceView(_Answer):
    incident_id: str
    event_id: UUID
    summary: str
    trust: str


class Warning_(_Answer):
    code: str
    message: str


class CheckView(_Answer):
    source: str
    query: str
    expect: str
    signals: list[str] = Field(default_factory=list)


class Hint(_Answer):
    family_id: UUID
    version: int
    memory_type: str
    summary: str
    root_cause: str | None
    root_cause_category: str | None = None
    confidence: float
    authority: Literal['clue'] = 'clue'
    score: float
    source_incidents: list[str]
    evidence: list[EvidenceView]
    warnings: list[Warning_]
    verify_with: list[CheckView]
    valid_until: datetime | None
    last_verified_at: datetime | None
    explain: dict[str, float | str] | None = None


class CauseView(_Answer):
    """One root-cause category of the tenant's history and how likely the current incident's cause is of it
    (CONTRACT v1.3 "Causes")."""

    category: str
    probability: float
    prior: float
    basis: Literal['evidence', 'prior']
    family_ids: list[UUID] = Field(default_factory=list)


class BriefingResponse(_Answer):
    briefing_id: UUID
    hints: list[Hint]
    causes: list[CauseView] = Field(default_factory=list)
    novelty: float = 1.0
    rest: float = 0.0
    causes_explain: dict[str, Any] | None = None
    degraded: list[str] = Field(default_factory=list)
    rendered: str = ''
    token_estimate: int = 0
    token_estimate_json: int = 0


class Accepted(_Answer):
    """Event ids the ledger acknowledged (acks=all, committed): an answer means the events are durable."""

    accepted: list[UUID]


class ObservationItem(_Answer):
    event_id: UUID
    source: str
    summary: str
    query: str | None = None
    signals: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    trust: str
    writer: str
    occurred_at: datetime


class HypothesisItem(_Answer):
    hypothesis_id: str
    statement: str | None = None
    statement_trust: str | None = None
    root_cause_category: str | None = None
    status: Literal['proposed', 'verified', 'refuted'] = 'proposed'
    evidence_refs: list[UUID] = Field(default_factory=list)
    judged_at: datetime | None = None


class MisleadingItem(_Answer):
    event_id: UUID
    signal: str
    reason: str
    trust: str | None = None


class ActionItem(_Answer):
    event_id: UUID
    action: str
    kind: str | None = None
    outcome: str
    runbook_ref: str | None = None
    trust: str


class QuarantinedText(_Answer):
    """Text of an imported postmortem that read like an instruction: quoted for the reviewer, never
    promoted."""

    field: str
    text: str
    reason: str


class ImportedPostmortem(_Answer):
    """The mark of a resolution that a reviewer imported from the team's own postmortem (CONTRACT v1.2): the
    evidence gate's one other way in. Only `POST /v1/postmortems` may write it; the public ledger endpoint
    refuses any payload that carries `imported` (`IMPORTED_FIELD`)."""

    content_sha256: str
    format: Literal['markdown', 'json']
    source_ref: str | None = None
    title: str | None = None
    alert: str | None = None
    severity: str | None = None
    started_at: datetime | None = None
    symptoms_from: str | None = None
    trigger: str | None = None
    detection: str | None = None
    action_items: list[str] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list)
    links: list[str] = Field(default_factory=list)
    sections: list[str] = Field(default_factory=list)
    unparsed: list[str] = Field(default_factory=list)
    quarantined: list[QuarantinedText] = Field(default_factory=list)
    root_cause_withheld: bool = False
    root_cause_from: str | None = None
    document: str | None = None


class TrustedEvidence(_Answer):
    event_id: UUID
    summary: str
    query: str | None = None


class Resume(_Answer):
    """Session memory for an agent that resumes an investigation (another replica, after a crash)."""

    open_hypotheses: list[HypothesisItem]
    judged_hypotheses: list[HypothesisItem]
    trusted_evidence: list[TrustedEvidence]
    misleading_signals: list[MisleadingItem]
    open_questions: list[str]


class EpisodeView(_Answer):
    """GET /v1/incidents/{id}/episode: the projection as stored, plus the resume view derived when read."""

    tenant: str
    project: str
    incident_id: str
    status: Literal['open', 'resolved'] = 'open'
    opened_trust: str | None = None
    alert_name: str | None = None
    alert_labels: dict[str, str] = Field(default_factory=dict)
    title: str | None = None
    services: list[str] = Field(default_factory=list)
    environment: str | None = None
    cluster: str | None = None
    service_version: str | None = Field(None, validation_alias=AliasChoices('service_version', 'version'))
    topology_fingerprint: str | None = None
    opened_at: datetime | None = None
    resolved_at: datetime | None = None
    observations: list[ObservationItem] = Field(default_factory=list)
    observations_dropped: int = 0
    hypotheses: dict[str, HypothesisItem] = Field(default_factory=dict)
    misleading_signals: list[MisleadingItem] = Field(default_factory=list)
    actions: list[ActionItem] = Field(default_factory=list)
    root_cause: str | None = None
    root_cause_category: str | None = None
    resolution_summary: str | None = None
    resolution: str | None = None
    resolution_trust: str | None = None
    resolution_refs: list[UUID] = Field(default_factory=list)
    resolved_event_id: UUID | None = None
    candidate_ids: list[UUID] = Field(default_factory=list)
    gate_verdict: str | None = None
    event_count: int = 0
    imported: ImportedPostmortem | None = None
    resume: Resume


class EvidenceRef(_Answer):
    event_id: UUID
    incident_id: str
    source: str
    summary: str
    trust: str
    query: str | None = None
    signals: list[str] = Field(default_factory=list)


class VerifyCheck(_Answer):
    source: str
    query: str
    expect: str
    signals: list[str] = Field(default_factory=list)


class VersionView(_Answer):
    """One stored version: its immutable content and where it sits in its family (rows carry more columns,
    such as the tenant, which are not shown)."""

    memory_type: Literal['semantic', 'episodic', 'procedural']
    owner: str | None = None
    level: Literal['long', 'permanent'] = 'long'
    authority: Literal['background', 'clue', 'suggestion', 'rule'] = 'clue'
    summary: str
    canonical_content: str
    root_cause: str | None = None
    root_cause_category: str | None = None
    alert_name: str | None = None
    services: list[str] = Field(default_factory=list)
    signals: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    misleading_signals: list[str] = Field(default_factory=list)
    source_incidents: list[str] = Field(default_factory=list)
    evidence: list[EvidenceRef] = Field(default_factory=list)
    verify_with: list[VerifyCheck] = Field(default_factory=list)
    trust_mix: dict[str, int] = Field(default_factory=dict)
    confidence: float
    environment: str | None = None
    cluster: str | None = None
    version_range: str | None = None
    topology_fingerprint: str | None = None
    applicability_restricted: bool = False
    imported: bool = False
    observed_at: datetime | None = None
    valid_from: datetime
    valid_until: datetime | None = None
    last_verified_at: datetime | None = None
    family_id: UUID
    version: int
    project: str
    state: Literal['active', 'superseded', 'retracted', 'expired']
    content_hash: str
    candidate_id: UUID | None = None
    supersedes: int | None = None
    created_by: str
    created_at: datetime
    state_changed_at: datetime | None = None
    family_state: Literal['active', 'retracted', 'expired', 'consolidated'] | None = None


class Usage(_Answer):
    briefings: int
    adopted: int
    refuted: int
    ignored: int
    last_used_at: datetime | None


class AuditEntry(_Answer):
    audit_id: int
    family_id: UUID
    version: int | None
    action: str
    actor: str
    reason: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: datetime


class RecordDetail(_Answer):
    family_id: UUID
    state: Literal['active', 'retracted', 'expired', 'consolidated']
    current_version: int
    current: VersionView
    versions: list[VersionView]
    usage: Usage
    audit: list[AuditEntry]


class CheckOutcome(_Answer):
    source: str
    query: str
    expected: list[str]
    verdict: Literal['supported', 'refuted', 'inconclusive']
    signals_now: list[str] = Field(default_factory=list)
    summary: str = ''
    values: dict[str, Any] | None = None


class HintVerdict(_Answer):
    family_id: UUID
    version: int
    verdict: Literal['supported', 'refuted', 'inconclusive']
    checks: list[CheckOutcome]


class VerifyResult(_Answer):
    """POST /v1/briefings/{id}/verify: each cited hint's live checks and verdict, and the ledger events
    (observations, feedback) appended in one gateway request."""

    briefing_id: UUID
    incident_id: str
    hints: list[HintVerdict]
    appended: list[UUID]


class RecordSearchResponse(_Answer):
    """Approved records matching a free-text query, ranked like a briefing (same hints, same warnings);
    nothing is recorded, so there is nothing to give feedback on."""

    records: list[Hint]
