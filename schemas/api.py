"""Request and response models of the HTTP API (CONTRACT section 4)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints

from schemas.guard import Guarded
from schemas.ledger import SERVICE_VERSION, BoundedTime, ShortText, TenantName
from schemas.memory import ApprovalEdits, FamilyState, ProposalState

LabelValue = Annotated[str, StringConstraints(max_length=1024)]
Labels = Annotated[dict[ShortText, LabelValue], Field(max_length=64)]


IncidentId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]{1,128}$")]


class _Req(Guarded):
    """Every request body: unknown fields rejected, and no control characters, lone surrogates, huge
    integers or deep nesting anywhere in it (schemas.guard); errors name the field."""

    model_config = ConfigDict(extra="forbid")


class ApiKeyRequest(_Req):
    tenant: TenantName
    project: TenantName | None = None
    role: Literal["agent", "reviewer", "admin"]


class ApproveRequest(_Req):
    note: str | None = Field(default=None, max_length=4000)
    edits: ApprovalEdits | None = None
    expected_version: int | None = Field(default=None, ge=0)
    resolution: Literal["auto", "new_family", "new_version"] = "auto"


class RejectRequest(_Req):
    reason: str = Field(min_length=1, max_length=4000)


class RetractRequest(_Req):
    reason: str = Field(min_length=1, max_length=4000)


class SupersedeRequest(_Req):
    summary: str = Field(min_length=1, max_length=4000)
    reason: str = Field(min_length=1, max_length=4000)
    root_cause: str | None = Field(default=None, max_length=4000)
    canonical_content: str | None = Field(default=None, max_length=8000)
    valid_until: BoundedTime | None = None
    environment: str | None = None
    cluster: str | None = None
    version_range: str | None = None
    topology_fingerprint: str | None = None
    expected_version: int | None = Field(default=None, ge=1)

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude={"reason", "expected_version"}, exclude_none=True)


class RollbackRequest(_Req):
    to_version: int = Field(ge=1)
    reason: str = Field(min_length=1, max_length=4000)


class BriefingAlert(_Req):
    name: ShortText
    labels: Labels = Field(default_factory=dict)


class BriefingRequest(_Req):
    alert: BriefingAlert | None = None
    services: list[ShortText] = Field(default_factory=list, max_length=50)
    signals: list[ShortText] = Field(default_factory=list, max_length=50)
    entities: list[ShortText] = Field(default_factory=list, max_length=50)
    text: str | None = Field(default=None, max_length=4000)
    environment: ShortText | None = None
    cluster: ShortText | None = None
    service_version: ShortText | None = Field(default=None, validation_alias=SERVICE_VERSION)  # v1.2: `version`
    topology_fingerprint: ShortText | None = None
    limit: int = Field(default=5, ge=1, le=10)
    explain: bool = False
    incident_id: IncidentId | None = None  # the investigation asking; kept with the stored briefing


class Warning_(BaseModel):
    code: str
    message: str


class EvidenceView(BaseModel):
    incident_id: str
    event_id: UUID
    summary: str
    trust: str


class CheckView(BaseModel):
    source: str
    query: str
    expect: str
    signals: list[str] = Field(default_factory=list)


class Hint(BaseModel):
    family_id: UUID
    version: int
    memory_type: str
    summary: str
    root_cause: str | None
    root_cause_category: str | None = None
    confidence: float
    authority: Literal["clue"] = "clue"
    score: float
    source_incidents: list[str]
    evidence: list[EvidenceView]
    warnings: list[Warning_]
    verify_with: list[CheckView]
    valid_until: datetime | None
    last_verified_at: datetime | None
    explain: dict[str, float | str] | None = None


class CauseView(BaseModel):
    """One root-cause category of the tenant's history and how likely the current incident's cause is of it
    (CONTRACT v1.3 "Causes")."""

    category: str
    probability: float = Field(ge=0, le=1)
    prior: float = Field(ge=0, le=1, description="the category's base rate in the tenant's approved history")
    basis: Literal["evidence", "prior"]
    family_ids: list[UUID] = Field(default_factory=list)


class BriefingResponse(BaseModel):
    briefing_id: UUID
    hints: list[Hint]
    causes: list[CauseView] = Field(default_factory=list)
    novelty: float = Field(default=1.0, ge=0, le=1)
    rest: float = Field(default=0.0, ge=0, le=1)
    causes_explain: dict[str, Any] | None = None
    degraded: list[str] = Field(default_factory=list)
    rendered: str = ""
    token_estimate: int = 0
    token_estimate_json: int = 0
    _wire: dict[str, Any] | None = PrivateAttr(default=None)

    def wire(self) -> dict[str, Any]:
        """The JSON sent to the agent: `explain` only when it was asked for. Built once (the briefing
        stores it, estimates its tokens and sends it); setting a field builds it again. Do not mutate it."""
        if self._wire is None:
            body = self.model_dump(mode="json")
            for hint in body["hints"]:
                if hint.get("explain") is None:
                    hint.pop("explain", None)
            if body.get("causes_explain") is None:
                body.pop("causes_explain", None)
            self._wire = body
        return self._wire

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_"):
            self._wire = None

    def count_wire_tokens(self, count: Callable[[dict[str, Any]], int]) -> None:
        """`token_estimate_json` := `count` of the wire body (taken while the field is 0), the body built once."""
        body = self.wire()
        self.token_estimate_json = count(body)
        body["token_estimate_json"] = self.token_estimate_json
        self._wire = body


class VerifyRequest(_Req):
    incident_id: str = Field(pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    namespace: str | None = Field(default=None, max_length=253)


class FeedbackRequest(_Req):
    family_id: UUID
    verdict: Literal["adopted", "refuted", "ignored"]
    incident_id: str = Field(default="CURRENT", pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    evidence_refs: list[UUID] = Field(default_factory=list, max_length=100)


class Whoami(BaseModel):
    """Who the key is: the scope every call of this caller runs in (GET /v1/whoami, MCP `whoami`)."""

    tenant: str
    project: str | None
    role: Literal["agent", "reviewer", "admin"]
    status: Literal["ok"] = "ok"


class Accepted(BaseModel):
    """Event ids the ledger acknowledged (acks=all, committed): an answer means the events are durable."""

    accepted: list[UUID]


class RecordSearchRequest(_Req):
    query: str = Field(min_length=1, max_length=4000)
    services: list[ShortText] = Field(default_factory=list, max_length=50)
    limit: int = Field(default=5, ge=1, le=10)


class CausesCalibrationView(BaseModel):
    """A tenant's causes model fitted on its lived history (services/briefing/causes_calibrator.py): `model` is
    the ranker model it serves, `causes_model` the fitted weights, `report` the run's Brier scores (in sample)."""

    model: str
    causes_model: dict[str, Any]
    questions: int
    report: dict[str, Any]


class CalibrationView(BaseModel):
    """A tenant's abstention point, calibrated from its own approved history (leave-one-out; see
    services/briefing/calibration.py): `insufficient` keeps the shipped model's point."""

    model: str
    min_relevance: float
    status: Literal["calibrated", "insufficient"]
    records: int
    questions: int
    recurrences: int
    novel: int
    curve: list[dict[str, float]]


class RecordSearchResponse(BaseModel):
    """Approved records matching a free-text query, ranked like a briefing (same hints, same warnings);
    nothing is recorded, so there is nothing to give feedback on."""

    records: list[Hint]


GovernanceJob = Literal["expire", "stale", "duplicate", "never_hit", "low_confidence", "promote"]




class GovernancePreviewRequest(_Req):
    jobs: list[GovernanceJob] | None = Field(default=None, max_length=6)


class DismissRequest(_Req):
    reason: str = Field(min_length=1, max_length=4000)


class BasedOn(BaseModel):
    family_id: UUID
    version: int


class ProposalView(BaseModel):
    proposal_id: UUID
    run_id: UUID
    kind: GovernanceJob
    project: str
    family_ids: list[UUID]
    reason: str
    change: dict[str, Any]
    based_on: list[BasedOn]
    state: ProposalState
    created_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    decision_note: str | None = None
    result: dict[str, Any] | None = None


class PreviewResponse(BaseModel):
    run_id: UUID
    proposals: list[ProposalView]


class ProposalList(BaseModel):
    proposals: list[ProposalView]


class Wrote(BaseModel):
    family_id: UUID
    version: int
    state: FamilyState


class ExecuteResponse(BaseModel):
    proposal_id: UUID
    kind: GovernanceJob
    state: Literal["executed", "reverted"]
    wrote: list[Wrote]
    already_executed: bool = False
