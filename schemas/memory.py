"""Read models of the memory pipeline: episode, candidate draft, record version.

Episodes and candidates are projections (rebuilt from the ledger alone); records are governed.
These models are the JSON bodies stored in PostgreSQL and returned by the API.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from schemas.ledger import SERVICE_VERSION, BoundedTime, ImportedPostmortem

MAX_OBSERVATIONS = 200
MAX_ACTIONS = 50

MemoryType = Literal["semantic", "episodic", "procedural"]
Authority = Literal["background", "clue", "suggestion", "rule"]


class FamilyState(StrEnum):
    """`memory_families.state` (its CHECK constraint lists exactly these)."""

    ACTIVE = "active"
    RETRACTED = "retracted"
    EXPIRED = "expired"
    CONSOLIDATED = "consolidated"


class VersionState(StrEnum):
    """`memory_versions.state`: a version is active until superseded, or retracted/expired with its family."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    EXPIRED = "expired"


class CandidateState(StrEnum):
    """A Memory Candidate's review state: pending until a `candidate_reviews.decision` row exists."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class ProposalState(StrEnum):
    """`governance_proposals.state`."""

    PROPOSED = "proposed"
    EXECUTED = "executed"
    DISMISSED = "dismissed"
    STALE = "stale"
    REVERTED = "reverted"


TERMINAL_FAMILY_STATES = frozenset({FamilyState.RETRACTED, FamilyState.EXPIRED})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObservationItem(_Model):
    event_id: UUID
    source: str
    summary: str
    query: str | None = None
    signals: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    trust: str
    writer: str
    occurred_at: datetime


class HypothesisItem(_Model):
    hypothesis_id: str
    statement: str | None = None
    statement_trust: str | None = None  # trust of the event that wrote the statement
    root_cause_category: str | None = None
    status: Literal["proposed", "verified", "refuted"] = "proposed"
    evidence_refs: list[UUID] = Field(default_factory=list)
    judged_at: datetime | None = None


class ActionItem(_Model):
    event_id: UUID
    action: str
    kind: str | None = None
    outcome: str
    runbook_ref: str | None = None
    trust: str


class MisleadingItem(_Model):
    event_id: UUID
    signal: str
    reason: str
    trust: str | None = None


class Episode(_Model):
    """One bounded, structured summary of an incident (the projection of its ledger events)."""

    tenant: str
    project: str
    incident_id: str
    status: Literal["open", "resolved"] = "open"
    opened_trust: str | None = None  # trust of the incident.opened event (its alert, services, scope)
    alert_name: str | None = None
    alert_labels: dict[str, str] = Field(default_factory=dict)
    title: str | None = None
    services: list[str] = Field(default_factory=list)
    environment: str | None = None
    cluster: str | None = None
    # stored episodes and drafts written before the rename say `version`
    service_version: str | None = Field(default=None, validation_alias=SERVICE_VERSION)
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
    resolution_trust: str | None = None  # trust of the incident.resolved event (its text's provenance)
    resolution_refs: list[UUID] = Field(default_factory=list)
    resolved_event_id: UUID | None = None
    candidate_ids: list[UUID] = Field(default_factory=list)
    gate_verdict: str | None = None
    event_count: int = 0
    imported: ImportedPostmortem | None = None  # the resolution came from an imported postmortem (v1.2)


class EvidenceRef(_Model):
    event_id: UUID
    incident_id: str
    source: str
    summary: str
    trust: str
    query: str | None = None
    signals: list[str] = Field(default_factory=list)


class QuotedText(_Model):
    """Authored text from an untrusted event: shown to reviewers as a quote, never promoted or indexed."""

    event_id: UUID | None = None
    field: str
    text: str
    trust: str


class VerifyCheck(_Model):
    source: str
    query: str
    expect: str
    signals: list[str] = Field(default_factory=list)  # what would support the hint if seen again


class CandidateDraft(_Model):
    """What a candidate proposes to remember. Built by the evidence gate, reviewed by people."""

    memory_type: MemoryType = "episodic"
    authority: Authority = "clue"
    summary: str
    root_cause: str
    root_cause_category: str | None = None
    alert_name: str | None = None
    services: list[str] = Field(default_factory=list)
    signals: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    misleading_signals: list[str] = Field(default_factory=list)
    environment: str | None = None
    cluster: str | None = None
    service_version: str | None = Field(default=None, validation_alias=SERVICE_VERSION)
    topology_fingerprint: str | None = None
    source_incidents: list[str] = Field(default_factory=list)
    evidence: list[EvidenceRef] = Field(default_factory=list)
    verify_with: list[VerifyCheck] = Field(default_factory=list)
    procedure: list[str] = Field(default_factory=list)
    verified_hypotheses: list[str] = Field(default_factory=list)
    trust_mix: dict[str, int] = Field(default_factory=dict)
    confidence: float
    observed_at: datetime | None = None
    last_verified_at: datetime | None = None
    resolution: str | None = None
    # set when authored text (resolution, hypothesis) came from untrusted_text: the reviewer must write
    # the summary; the text itself is only quoted
    untrusted_text_quoted: bool = False
    quoted: list[QuotedText] = Field(default_factory=list)
    # from a postmortem the team wrote, imported by a reviewer (v1.2): not verified by this system; the
    # source's parsed fields (without the document) for the review queue
    imported: bool = False
    imported_from: ImportedPostmortem | None = None


class VersionContent(_Model):
    """The immutable content of one record version (columns of `memory_versions`)."""

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: object) -> object:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("text must not contain NUL characters")
        return value

    memory_type: MemoryType
    owner: str | None = None
    level: Literal["long", "permanent"] = "long"
    authority: Authority = "clue"
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
    imported: bool = False  # learned from an imported postmortem (v1.2): hints warn `imported_unverified`
    observed_at: BoundedTime | None = None
    valid_from: BoundedTime
    valid_until: BoundedTime | None = None
    last_verified_at: BoundedTime | None = None


class Applicability(_Model):
    environment: str | None = None
    cluster: str | None = None
    version_range: str | None = None
    topology_fingerprint: str | None = None


class ApprovalEdits(_Model):
    """What a reviewer changes while approving (v1.2 has summary, valid_until, applicability; the rest extend
    it). The reviewer's words are the record's: root cause, category, services and resolution edited here
    replace the draft's before the record is matched against existing families and written. The candidate
    keeps the draft as proposed, so version 1 against its candidate is the edit's diff."""

    summary: str | None = Field(default=None, min_length=1, max_length=4000)
    root_cause: str | None = Field(default=None, min_length=1, max_length=4000)
    root_cause_category: str | None = Field(default=None, min_length=1, max_length=200,
                                            pattern=r"^[^\s]+$")
    services: list[Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]] | None = \
        Field(default=None, max_length=50)
    resolution: str | None = Field(default=None, min_length=1, max_length=4000)
    valid_until: BoundedTime | None = None
    applicability: Applicability | None = None
    level: Literal["long", "permanent"] | None = None
    authority: Authority | None = None
    owner: str | None = Field(default=None, min_length=1, max_length=200)
