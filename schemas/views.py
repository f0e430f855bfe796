"""Response models of the review queue and the governed store (CONTRACT section 4: candidates, records,
lineage, episodes). Repositories build them from rows; services return them; routes declare them as
`response_model`; the SDK parses them. Fields beyond the contract's are additive."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from schemas.memory import (
    CandidateState,
    Episode,
    FamilyState,
    HypothesisItem,
    MisleadingItem,
    VersionContent,
    VersionState,
)


class _View(BaseModel):
    """A read model: frozen once built."""

    model_config = ConfigDict(frozen=True)


class Proposal(_View):
    """What approving a pending candidate would do: start a family, add a version, or resolve a conflict."""

    kind: Literal["new_family", "new_version", "conflict"]
    family_id: UUID | None = None
    current_version: int | None = None
    current_summary: str | None = None
    contradicting_signals: list[str] = []


class ReviewDecision(_View):
    reviewer: str | None
    note: str | None
    decided_at: datetime | None
    family_id: UUID | None
    version: int | None


class CandidateView(_View):
    candidate_id: UUID
    incident_id: str
    project: str
    memory_type: str
    summary: str
    state: CandidateState
    created_at: datetime
    content: dict[str, Any]
    untrusted_text_quoted: bool
    imported: bool = False  # from an imported postmortem (v1.2)
    review: ReviewDecision | None = None
    proposal: Proposal | None = None  # pending candidates only
    episode: dict[str, Any] | None = None  # GET /v1/candidates/{id} only


class CandidatePage(_View):
    candidates: list[CandidateView]
    next_cursor: str | None


class Approved(_View):
    family_id: UUID
    version: int


class Rejected(_View):
    candidate_id: UUID
    state: Literal[CandidateState.REJECTED]


class VersionView(VersionContent):
    """One stored version: its immutable content and where it sits in its family (rows carry more columns,
    such as the tenant, which are not shown)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    family_id: UUID
    version: int
    project: str
    state: VersionState
    content_hash: str
    candidate_id: UUID | None = None
    supersedes: int | None = None
    created_by: str
    created_at: datetime
    state_changed_at: datetime | None = None
    family_state: FamilyState | None = None  # in lists of current versions


class RecordPage(_View):
    records: list[VersionView]
    next_cursor: str | None


class Usage(_View):
    briefings: int
    adopted: int
    refuted: int
    ignored: int
    last_used_at: datetime | None


class AuditEntry(_View):
    model_config = ConfigDict(extra="ignore", frozen=True)

    audit_id: int
    family_id: UUID
    version: int | None
    action: str
    actor: str
    reason: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: datetime


class RecordDetail(_View):
    family_id: UUID
    state: FamilyState
    current_version: int
    current: VersionView
    versions: list[VersionView]
    usage: Usage
    audit: list[AuditEntry]


class FamilyChange(_View):
    """The version a transition wrote or moved (retract/expire also name the family's new state)."""

    family_id: UUID
    version: int
    state: FamilyState | None = None


class Edge(_View):
    src_kind: str
    src_id: str
    relation: str
    dst_kind: str
    dst_id: str


class Lineage(_View):
    family_id: UUID
    edges: list[Edge]


class TrustedEvidence(_View):
    event_id: UUID
    summary: str
    query: str | None = None


class Resume(_View):
    """Session memory for an agent that resumes an investigation (another replica, after a crash)."""

    open_hypotheses: list[HypothesisItem]
    judged_hypotheses: list[HypothesisItem]
    trusted_evidence: list[TrustedEvidence]
    misleading_signals: list[MisleadingItem]
    open_questions: list[str]


class EpisodeView(Episode):
    """GET /v1/incidents/{id}/episode: the projection as stored, plus the resume view derived when read."""

    resume: Resume


class CheckOutcome(_View):
    source: str
    query: str
    expected: list[str]
    verdict: Literal["supported", "refuted", "inconclusive"]
    signals_now: list[str] = []
    summary: str = ""
    values: dict[str, Any] | None = None


class HintVerdict(_View):
    family_id: UUID
    version: int
    verdict: Literal["supported", "refuted", "inconclusive"]
    checks: list[CheckOutcome]


class VerifyResult(_View):
    """POST /v1/briefings/{id}/verify: each cited hint's live checks and verdict, and the ledger events
    (observations, feedback) appended in one gateway request."""

    briefing_id: UUID
    incident_id: str
    hints: list[HintVerdict]
    appended: list[UUID]


class IssuedKey(_View):
    key: str
    tenant: str
    project: str | None
    role: str


class Health(_View):
    status: Literal["ok"] = "ok"
