"""Ledger envelope and payload models (CONTRACT section 2).

Everything here is pure: validation, canonical JSON and the content hash. The gateway validates with
`parse_submitted_event`; the projector decodes stored records with `LedgerRecord.model_validate_json`.
Errors are reported as `LedgerValidationError` naming the offending field (`payload.source`, ...).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4

import orjson
from pydantic import (
    AfterValidator,
    AliasChoices,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)

from schemas.guard import unsafe

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def storable(value: datetime) -> bool:
    """In [1970, 9000) once in UTC: every stored time can be read back, shifted and compared (year 1 or 9999 with
    an offset overflows once normalised)."""
    try:
        return EARLIEST <= value.astimezone(UTC) < LATEST
    except (OverflowError, ValueError):
        return False


def _bounded(value: datetime) -> datetime:
    if not storable(value):
        raise ValueError("time out of range (1970-01-01 to 8999-12-31)")
    return value.astimezone(UTC)


# every time that enters through the API or the ledger: timezone-aware, normalised to UTC, bounded
BoundedTime = Annotated[AwareDatetime, AfterValidator(_bounded)]
IncidentId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]{1,128}$")]
TenantName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]{1,64}$")]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=4000)]
EventRefs = Annotated[list[UUID], Field(max_length=100)]
Tags = Annotated[list[ShortText], Field(max_length=50)]


class Trust(StrEnum):
    TRUSTED_TOOL = "trusted_tool"
    USER_STATED = "user_stated"
    MODEL_INFERRED = "model_inferred"
    UNTRUSTED_TEXT = "untrusted_text"


class EventType(StrEnum):
    INCIDENT_OPENED = "incident.opened"
    OBSERVATION_RECORDED = "observation.recorded"
    HYPOTHESIS_PROPOSED = "hypothesis.proposed"
    HYPOTHESIS_VERIFIED = "hypothesis.verified"
    HYPOTHESIS_REFUTED = "hypothesis.refuted"
    SIGNAL_MISLEADING = "signal.misleading"
    ACTION_TAKEN = "action.taken"
    INCIDENT_RESOLVED = "incident.resolved"
    BRIEFING_FEEDBACK = "briefing.feedback"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Payload(BaseModel):
    """Payloads keep fields they do not know (newer writers), but every known field is checked."""

    model_config = ConfigDict(extra="allow", frozen=True)


class Writer(_Strict):
    kind: Literal["tool", "agent", "human"]
    id: ShortText


class Alert(_Strict):
    name: ShortText
    severity: ShortText | None = None
    labels: Annotated[dict[ShortText, Annotated[str, StringConstraints(max_length=1024)]],
                      Field(max_length=64)] = Field(default_factory=dict)


# The software version deployed where the incident happens (or the question is asked) is `service_version`
# (contract extension; v1.2 names it `version`, still accepted on input, and events already on the ledger carry
# that name: they are read the same). Not a memory version number, nor a record's `version_range`.
SERVICE_VERSION = AliasChoices("service_version", "version")


class IncidentOpened(_Payload):
    alert: Alert
    title: Text | None = None
    services: Tags = Field(default_factory=list)
    environment: ShortText | None = None
    cluster: ShortText | None = None
    service_version: ShortText | None = Field(default=None, validation_alias=SERVICE_VERSION)
    topology_fingerprint: ShortText | None = None


ObservationSource = Literal[
    "prometheus", "kubernetes", "logs", "trace", "ci", "cmdb", "ticket", "web", "chat", "other"
]


class ObservationRecorded(_Payload):
    source: ObservationSource
    summary: Text
    query: Text | None = None
    signals: Tags = Field(default_factory=list)
    entities: Tags = Field(default_factory=list)
    values: dict[str, Any] | None = None
    raw_ref: Text | None = None


class HypothesisProposed(_Payload):
    hypothesis_id: ShortText
    statement: Text
    root_cause_category: ShortText | None = None


class HypothesisJudged(_Payload):
    hypothesis_id: ShortText
    evidence_refs: EventRefs


class SignalMisleading(_Payload):
    signal: ShortText
    reason: Text
    evidence_refs: EventRefs = Field(default_factory=list)


class ActionTaken(_Payload):
    action: Text
    kind: Literal["mitigation", "remediation", "rollback", "diagnosis"] | None = None
    outcome: Literal["succeeded", "failed", "no_effect"]
    runbook_ref: Text | None = None


class QuarantinedText(_Strict):
    """Text of an imported postmortem that read like an instruction: quoted for the reviewer, never promoted."""

    field: ShortText
    text: Text
    reason: ShortText


ItemTexts = Annotated[list[Text], Field(max_length=30)]


class ImportedPostmortem(_Strict):
    """The mark of a resolution that a reviewer imported from the team's own postmortem (CONTRACT v1.2): the
    evidence gate's one other way in. Only `POST /v1/postmortems` may write it; the public ledger endpoint
    refuses any payload that carries `imported` (`IMPORTED_FIELD`)."""

    content_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    format: Literal["markdown", "json"]
    source_ref: Text | None = None
    title: ShortText | None = None
    alert: ShortText | None = None  # the alert the document named (the opening's name is a placeholder otherwise)
    severity: ShortText | None = None
    started_at: BoundedTime | None = None
    symptoms_from: ShortText | None = None
    trigger: Text | None = None
    detection: Text | None = None
    action_items: ItemTexts = Field(default_factory=list)
    lessons: ItemTexts = Field(default_factory=list)
    links: ItemTexts = Field(default_factory=list)
    sections: Annotated[list[ShortText], Field(max_length=50)] = Field(default_factory=list)
    unparsed: Annotated[list[ShortText], Field(max_length=100)] = Field(default_factory=list)
    quarantined: Annotated[list[QuarantinedText], Field(max_length=100)] = Field(default_factory=list)
    root_cause_withheld: bool = False
    # where the root cause was read (`postmortems.model.Postmortem.root_cause_from`): `prose` when the document had
    # no root-cause section and one paragraph states the cause, which the reviewer should check
    root_cause_from: ShortText | None = None
    document: Annotated[str, StringConstraints(max_length=65_536)] | None = None  # as imported, for the reviewer


IMPORTED_FIELD = "imported"


class IncidentResolved(_Payload):
    root_cause: Text
    root_cause_category: ShortText | None = None
    summary: Text
    resolution: Text | None = None
    evidence_refs: EventRefs
    services: Tags | None = None
    imported: ImportedPostmortem | None = None  # only from the reviewer's postmortem import (v1.2)


class BriefingFeedback(_Payload):
    briefing_id: UUID
    family_id: UUID
    verdict: Literal["adopted", "refuted", "ignored"]
    evidence_refs: EventRefs = Field(default_factory=list)


Payload = (
    IncidentOpened
    | ObservationRecorded
    | HypothesisProposed
    | HypothesisJudged
    | SignalMisleading
    | ActionTaken
    | IncidentResolved
    | BriefingFeedback
)

PAYLOAD_MODELS: dict[EventType, type[_Payload]] = {
    EventType.INCIDENT_OPENED: IncidentOpened,
    EventType.OBSERVATION_RECORDED: ObservationRecorded,
    EventType.HYPOTHESIS_PROPOSED: HypothesisProposed,
    EventType.HYPOTHESIS_VERIFIED: HypothesisJudged,
    EventType.HYPOTHESIS_REFUTED: HypothesisJudged,
    EventType.SIGNAL_MISLEADING: SignalMisleading,
    EventType.ACTION_TAKEN: ActionTaken,
    EventType.INCIDENT_RESOLVED: IncidentResolved,
    EventType.BRIEFING_FEEDBACK: BriefingFeedback,
}


class SubmittedEvent(_Strict):
    """An envelope as a writer submits it. tenant/project are optional: the gateway binds them."""

    event_id: UUID
    type: EventType
    tenant: TenantName | None = None
    project: TenantName | None = None
    incident_id: IncidentId
    occurred_at: BoundedTime
    writer: Writer
    trust: Trust
    payload: dict[str, Any]


class LedgerEvent(_Strict):
    """A validated envelope bound to its tenant and project (what gets hashed)."""

    event_id: UUID
    type: EventType
    tenant: TenantName
    project: TenantName
    incident_id: IncidentId
    occurred_at: BoundedTime
    writer: Writer
    trust: Trust
    payload: dict[str, Any]

    @property
    def kafka_key(self) -> bytes:
        return f"{self.tenant}/{self.incident_id}".encode()

    def typed_payload(self) -> Payload:
        model = PAYLOAD_MODELS[self.type]
        return model.model_validate(self.payload)  # type: ignore[return-value]

    def compute_hash(self) -> str:
        """SHA-256 of the canonical envelope, never including `recorded_at` and `content_hash` themselves."""
        envelope = self.model_dump(mode="json", exclude={"recorded_at", "content_hash"})
        return hashlib.sha256(canonical_json(envelope)).hexdigest()

    def to_record(self, recorded_at: datetime) -> LedgerRecord:
        return LedgerRecord(
            **self.model_dump(),
            recorded_at=recorded_at.astimezone(UTC),
            content_hash=self.compute_hash(),
        )


class LedgerRecord(LedgerEvent):
    """What is stored on the topic: the bound envelope plus `recorded_at` and `content_hash`."""

    recorded_at: AwareDatetime
    content_hash: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]

    def envelope(self) -> LedgerEvent:
        return LedgerEvent(**self.model_dump(exclude={"recorded_at", "content_hash"}))

    def to_json(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))


class LedgerValidationError(ValueError):
    """A submitted event is invalid; `field` is a dotted path such as `events[2].payload.source`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def prefixed(self, prefix: str) -> LedgerValidationError:
        return LedgerValidationError(f"{prefix}.{self.field}" if self.field else prefix, self.message)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8: the input of `content_hash`."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _first_error(exc: ValidationError, prefix: str = "") -> LedgerValidationError:
    err = exc.errors(include_url=False)[0]
    path = ".".join(str(part) for part in err["loc"])
    field = f"{prefix}.{path}" if prefix and path else (prefix or path)
    return LedgerValidationError(field, str(err["msg"]))


def parse_submitted_event(raw: object) -> SubmittedEvent:
    """Validate the envelope and its type-specific payload, or raise LedgerValidationError."""
    if not isinstance(raw, dict):
        raise LedgerValidationError("", "an event must be a JSON object")
    problem = unsafe(raw)
    if problem is not None:
        raise LedgerValidationError(problem.path, problem.reason)
    try:
        event = SubmittedEvent.model_validate(raw)
    except ValidationError as exc:
        raise _first_error(exc) from None
    try:
        PAYLOAD_MODELS[event.type].model_validate(event.payload)
    except ValidationError as exc:
        raise _first_error(exc, "payload") from None
    return event


def bind_event(event: SubmittedEvent, tenant: str, project: str) -> LedgerEvent:
    """Attach the tenant and project that the caller's key grants (checked by the gateway)."""
    data = event.model_dump()
    data.update(tenant=tenant, project=project)
    typed = PAYLOAD_MODELS[event.type].model_validate(event.payload)
    data["payload"] = typed.model_dump(mode="json", exclude_none=True)
    return LedgerEvent(**data)


def envelope(event_type: EventType | str, incident_id: str, payload: dict[str, Any], *, writer_kind: str,
             writer_id: str, trust: Trust | str, at: datetime | None = None,
             event_id: UUID | None = None) -> dict[str, Any]:
    """A submitted envelope as JSON (CONTRACT section 2), before the gateway binds tenant and project:
    the one builder every producer of events uses (collectors, verification, feedback, MCP, the SDK)."""
    return {"event_id": str(event_id or uuid4()), "type": str(EventType(event_type).value),
            "incident_id": incident_id, "occurred_at": (at or datetime.now(UTC)).isoformat(),
            "writer": {"kind": writer_kind, "id": writer_id}, "trust": str(Trust(trust).value), "payload": payload}
