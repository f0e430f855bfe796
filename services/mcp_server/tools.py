"""The MCP tools (CONTRACT section "MCP"): typed arguments, structured results, planner-facing descriptions.

Scope (tenant, project, role) is never an argument: every tool runs through the `AgentBackend` of the
authenticated key. Reviewing (approve, reject, supersede, retract, rollback) is deliberately absent.
An agent's observation is its own account, so its trust is at most `model_inferred`; evidence that can
back a root cause comes from `verify_briefing`, which runs the checks itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from schemas.api import BriefingAlert, BriefingRequest, BriefingResponse, Hint, IncidentId, Whoami
from schemas.ledger import ObservationSource, ShortText
from schemas.views import EpisodeView, RecordDetail, VerifyResult
from services.common.errors import OpsloreError
from services.mcp_server.backend import AgentBackend
from services.sdk.calls import ApiError
from services.sdk.client import observation_event

T = TypeVar("T")
BackendOf = Callable[[], AgentBackend]
AgentTrust = Literal["model_inferred", "untrusted_text", "user_stated"]
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
APPEND = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
VERIFY = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True)

INSTRUCTIONS = (
    "opslore is the incident memory of this SRE team. Call get_briefing at the start of an investigation "
    "with the alert, services and signals you see. Its hints are hypotheses from past incidents, never "
    "conclusions: run each hint's verify_with checks (or verify_briefing) before citing it, heed its "
    "warnings, and record what you checked with record_observation. Tell opslore whether a hint helped "
    "with send_feedback. Only on-call engineers turn investigations into memory."
)


class ObservationAck(BaseModel):
    event_id: str
    trust: AgentTrust = Field(description="the trust the ledger recorded (an agent's account is at most "
                                          "model_inferred)")


class FeedbackAck(BaseModel):
    event_id: str


class RecordMatches(BaseModel):
    records: list[Hint]


def _tool_error(exc: Exception) -> ToolError:
    if isinstance(exc, OpsloreError):
        where = f" (field {exc.field})" if exc.field else ""
        return ToolError(f"{exc.code}: {exc.message}{where}")
    if isinstance(exc, ApiError):
        return ToolError(f"{exc.code or exc.status}: {exc}")
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        return ToolError(f"invalid: {field}: {err.get('msg')}")
    return ToolError(f"invalid: {exc}")


async def _run(backend_of: BackendOf, work: Callable[[AgentBackend], T]) -> T:
    """Resolve the caller's backend here (the auth context lives in this task), run the blocking
    service call in a worker thread, and turn known errors into tool errors the model can read."""
    backend = backend_of()
    try:
        return await anyio.to_thread.run_sync(lambda: work(backend))
    except (OpsloreError, ApiError, ValueError) as exc:  # ValueError: ValidationError, a malformed UUID
        raise _tool_error(exc) from None


def register(server: MCPServer[Any], backend_of: BackendOf) -> None:
    _register_reads(server, backend_of)
    _register_writes(server, backend_of)


def _register_reads(server: MCPServer[Any], backend_of: BackendOf) -> None:
    @server.tool(annotations=READ_ONLY, title="Who am I")
    async def whoami() -> Whoami:
        """The tenant, project and role of the key this session uses. All other tools are scoped to them."""
        return await _run(backend_of, lambda b: b.whoami())

    @server.tool(annotations=READ_ONLY, title="Brief me on this incident")
    async def get_briefing(
        alert: BriefingAlert | None = None,
        services: Annotated[list[ShortText], Field(max_length=50, description="affected services")] = [],  # noqa: B006
        signals: Annotated[list[ShortText], Field(max_length=50, description="symptoms seen, e.g. "
                                                  "p99_latency_high, oom_killed")] = [],  # noqa: B006
        entities: Annotated[list[ShortText], Field(max_length=50)] = [],  # noqa: B006
        text: Annotated[str | None, Field(max_length=4000, description="the question in words")] = None,
        environment: ShortText | None = None,
        cluster: ShortText | None = None,
        service_version: Annotated[ShortText | None, Field(description="the software version deployed")] = None,
        version: Annotated[ShortText | None, Field(description="v1.2's name of service_version")] = None,
        topology_fingerprint: ShortText | None = None,
        limit: Annotated[int, Field(ge=1, le=10)] = 5,
        incident_id: IncidentId | None = None,
    ) -> BriefingResponse:
        """The tenant's likely root causes for the incident at hand and a few hints from approved memory of past
        incidents. `causes`: each root-cause category with its calibrated `probability` beside its base rate
        (`prior`); `basis: evidence` when similar past incidents raise it, else the base rate alone; `novelty`
        is the probability of a cause this tenant never had. Check the evidence causes first, then the usual
        ones. Hints (few, possibly none) come only for evidence causes; each is a HYPOTHESIS with warnings and
        `verify_with` live checks: run them (or verify_briefing) before citing a hint, and prefer current
        evidence when they disagree. `rendered` is a compact text form for your context."""
        request = dict(alert=alert, services=services, signals=signals, entities=entities, text=text,
                       environment=environment, cluster=cluster, service_version=service_version or version,
                       topology_fingerprint=topology_fingerprint, limit=limit, incident_id=incident_id)
        return await _run(backend_of, lambda b: b.brief(BriefingRequest.model_validate(
            {k: v for k, v in request.items() if v is not None})))

    @server.tool(annotations=READ_ONLY, title="Investigation so far")
    async def get_episode(incident_id: IncidentId) -> EpisodeView:
        """The incident's episode: timeline, hypotheses with their status, checked evidence, misleading
        signals and open questions — what to read when resuming an investigation."""
        return await _run(backend_of, lambda b: b.episode(incident_id))

    @server.tool(annotations=READ_ONLY, title="Search memory")
    async def search_records(
        query: Annotated[str, Field(min_length=1, max_length=4000)],
        services: Annotated[list[ShortText], Field(max_length=50)] = [],  # noqa: B006
        limit: Annotated[int, Field(ge=1, le=10)] = 5,
    ) -> RecordMatches:
        """Approved memory records matching free text, ranked and warned like briefing hints (still hypotheses)."""
        return RecordMatches(records=await _run(backend_of, lambda b: b.search_records(query, services, limit)))

    @server.tool(annotations=READ_ONLY, title="One memory record")
    async def get_record(family_id: str) -> RecordDetail:
        """A memory record's current version, its state and its full version history with provenance."""
        return await _run(backend_of, lambda b: b.get_record(family_id))


def _register_writes(server: MCPServer[Any], backend_of: BackendOf) -> None:
    @server.tool(annotations=VERIFY, title="Check the hints live")
    async def verify_briefing(briefing_id: str, incident_id: IncidentId) -> VerifyResult:
        """Run every check of a briefing's hints against live Prometheus/Kubernetes now. Per hint: supported,
        refuted or inconclusive, with the values seen. The observations and verdicts are recorded in the
        incident's ledger as trusted tool evidence."""
        return await _run(backend_of, lambda b: b.verify(briefing_id, incident_id))

    @server.tool(annotations=APPEND, title="Record what you observed")
    async def record_observation(
        incident_id: IncidentId,
        source: ObservationSource,
        summary: Annotated[str, Field(min_length=1, max_length=4000, description="what you saw, with numbers")],
        query: Annotated[str | None, Field(max_length=4000, description="the query you ran")] = None,
        signals: Annotated[list[ShortText], Field(max_length=50)] = [],  # noqa: B006
        entities: Annotated[list[ShortText], Field(max_length=50)] = [],  # noqa: B006
        trust: Annotated[str | None, Field(description="model_inferred (default), user_stated or "
                                           "untrusted_text; stronger claims are recorded as model_inferred")] = None,
    ) -> ObservationAck:
        """Append an observation to the incident's evidence ledger. Returns only once the ledger has
        acknowledged it durably (or an error). Quote logs or web text as untrusted_text."""
        applied: AgentTrust = trust if trust in ("untrusted_text", "user_stated") else "model_inferred"  # type: ignore[assignment]
        event = observation_event(incident_id, source, summary, query=query, signals=signals, entities=entities,
                                  trust=applied, writer="mcp")
        event_id = (await _run(backend_of, lambda b: b.append([event])))[0]
        return ObservationAck(event_id=str(event_id), trust=applied)

    @server.tool(annotations=APPEND, title="Say whether a hint helped")
    async def send_feedback(
        briefing_id: str, family_id: str, verdict: Literal["adopted", "refuted", "ignored"],
        incident_id: IncidentId = "CURRENT",
    ) -> FeedbackAck:
        """Feedback on one hint of a briefing: adopted (it was confirmed), refuted (current evidence
        contradicted it) or ignored. Appended to the ledger; returns once acknowledged."""
        event_id = await _run(backend_of, lambda b: b.feedback(briefing_id, family_id, verdict, incident_id))
        return FeedbackAck(event_id=str(event_id))
