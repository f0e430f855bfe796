"""Thin routers: parse, call one service method, shape the answer. No SQL, no transactions here."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST

from schemas.alerts import AlertmanagerWebhook, IntakeAnswer
from schemas.api import (
    Accepted,
    ApiKeyRequest,
    ApproveRequest,
    BriefingRequest,
    BriefingResponse,
    CalibrationView,
    CausesCalibrationView,
    DismissRequest,
    ExecuteResponse,
    FeedbackRequest,
    GovernanceJob,
    GovernancePreviewRequest,
    PreviewResponse,
    ProposalList,
    ProposalView,
    RecordSearchRequest,
    RecordSearchResponse,
    RejectRequest,
    RetractRequest,
    RollbackRequest,
    SupersedeRequest,
    VerifyRequest,
    Whoami,
)
from schemas.memory import ProposalState
from schemas.postmortems import PostmortemImportAnswer
from schemas.views import (
    Approved,
    CandidatePage,
    CandidateView,
    EpisodeView,
    FamilyChange,
    Health,
    IssuedKey,
    Lineage,
    RecordDetail,
    RecordPage,
    Rejected,
    VerifyResult,
)
from services.api.briefing_threads import BriefingThreads
from services.api.deps import Caller, Svc
from services.api.fairness import FairShare
from services.api.lean_route import LeanJsonRoute
from services.api.metrics import EVENTS_ACCEPTED, exposition, observe_briefing
from services.common.paging import DEFAULT_LIMIT, MAX_LIMIT, PageRequest
from services.gateway.keys import whoami_of

router = APIRouter()


Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="page size")]
Cursor = Annotated[str | None, Query(max_length=400, description="next_cursor of the previous page")]


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """Liveness: the process answers. Dependencies are /readyz's business."""
    return Health()


@router.get("/readyz")
def readyz(svc: Svc) -> JSONResponse:
    """200 only when PostgreSQL and Kafka answer and the projector's lag is under the threshold."""
    result = svc.readiness.check()
    return JSONResponse(result.to_json(), status_code=200 if result.ready else 503)


@router.get("/metrics")
def metrics(svc: Svc) -> Response:
    """Prometheus text: every API process's samples and the review queue read from PostgreSQL."""
    return PlainTextResponse(exposition(svc.db).decode(), media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/whoami", response_model=Whoami)
def whoami(caller: Caller) -> Whoami:
    """The scope of the calling key (what MCP's `whoami` answers too)."""
    return whoami_of(caller)


@router.post("/v1/admin/api-keys", status_code=201, response_model=IssuedKey)
def create_api_key(body: ApiKeyRequest, svc: Svc, caller: Caller) -> IssuedKey:
    return svc.keys.create(caller, body.tenant, body.project, body.role)


def fair(request: Request) -> FairShare:
    share: FairShare = request.app.state.fairness
    return share


@router.post("/v1/ledger/events", status_code=202, response_model=Accepted)
def append_events(svc: Svc, caller: Caller, request: Request, body: Any = Body(...)) -> Accepted:
    with fair(request).admit(caller, "ingest"):  # a limited append says 429 before anything is appended
        records = svc.gateway.append(body, caller)
    EVENTS_ACCEPTED.inc(len(records))
    return Accepted(accepted=[r.event_id for r in records])


@router.post("/v1/postmortems", status_code=202, response_model=PostmortemImportAnswer)
def import_postmortem(svc: Svc, caller: Caller, body: Any = Body(...)) -> PostmortemImportAnswer:
    """A postmortem the team wrote (reviewer): parsed, appended as an investigation's events, reviewed as a
    candidate flagged `imported` (CONTRACT v1.2). The body is read raw so an oversized document is 413."""
    return svc.postmortems.import_document(caller, body)


@router.get("/v1/ledger/export")
def export_ledger(svc: Svc, caller: Caller, since: datetime | None = None,
                  incident_id: str | None = None) -> StreamingResponse:
    caller.require("admin")  # fail before the stream starts
    return StreamingResponse(svc.episodes.export(caller, since, incident_id), media_type="application/x-ndjson")


@router.get("/v1/incidents/{incident_id}/episode", response_model=EpisodeView)
def get_episode(incident_id: str, svc: Svc, caller: Caller) -> EpisodeView:
    return svc.episodes.episode(caller, incident_id)


@router.get("/v1/candidates", response_model=CandidatePage)
def list_candidates(svc: Svc, caller: Caller, state: str | None = None, incident_id: str | None = None,
                    limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None, imported: bool | None = None) -> CandidatePage:
    return svc.review.list_candidates(caller, state, incident_id, PageRequest.parse(limit, cursor), imported)


@router.get("/v1/candidates/{candidate_id}", response_model=CandidateView)
def get_candidate(candidate_id: UUID, svc: Svc, caller: Caller) -> CandidateView:
    return svc.review.get_candidate(caller, candidate_id)


@router.post("/v1/candidates/{candidate_id}/approve", response_model=Approved)
def approve(candidate_id: UUID, svc: Svc, caller: Caller, body: ApproveRequest | None = None) -> Approved:
    body = body or ApproveRequest()
    return svc.review.approve(caller, candidate_id, note=body.note, edits=body.edits,
                              expected_version=body.expected_version, resolution=body.resolution)


@router.post("/v1/candidates/{candidate_id}/reject", response_model=Rejected)
def reject(candidate_id: UUID, body: RejectRequest, svc: Svc, caller: Caller) -> Rejected:
    return svc.review.reject(caller, candidate_id, body.reason)


@router.get("/v1/records", response_model=RecordPage)
def list_records(svc: Svc, caller: Caller, incident_id: str | None = None, state: str | None = None,
                 limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> RecordPage:
    return svc.memory.list_records(caller, incident_id, state, PageRequest.parse(limit, cursor))


@router.post("/v1/calibration", response_model=CalibrationView)
def calibrate(svc: Svc, caller: Caller) -> CalibrationView:
    """Calibrate the tenant's abstention point from its approved history now (reviewer; briefings also start it
    in the background when the tenant's size moved); a few seconds per hundred records."""
    return svc.briefing.calibrate(caller)


@router.post("/v1/causes/calibration", response_model=CausesCalibrationView)
def calibrate_causes(svc: Svc, caller: Caller) -> CausesCalibrationView:
    """Fit the tenant's causes model on its lived history now (reviewer; briefings also start it in the background
    when the tenant's size moved): every approved incident asked against what was approved before it, and its
    briefings' adopted and refuted feedback."""
    return svc.briefing.calibrate_causes(caller)


@router.post("/v1/records/search", response_model=RecordSearchResponse)
def search_records(body: RecordSearchRequest, svc: Svc, caller: Caller, request: Request) -> RecordSearchResponse:
    with fair(request).admit(caller, "briefing"):
        return RecordSearchResponse(records=svc.briefing.search(caller, body))


@router.get("/v1/records/{family_id}", response_model=RecordDetail)
def get_record(family_id: UUID, svc: Svc, caller: Caller) -> RecordDetail:
    return svc.memory.get_record(caller, family_id)


@router.get("/v1/records/{family_id}/lineage", response_model=Lineage)
def lineage(family_id: UUID, svc: Svc, caller: Caller) -> Lineage:
    return svc.memory.lineage(caller, family_id)


@router.post("/v1/records/{family_id}/retract", response_model=FamilyChange)
def retract(family_id: UUID, body: RetractRequest, svc: Svc, caller: Caller) -> FamilyChange:
    return svc.memory.retract(caller, family_id, body.reason)


@router.post("/v1/records/{family_id}/expire", response_model=FamilyChange)
def expire(family_id: UUID, body: RetractRequest, svc: Svc, caller: Caller) -> FamilyChange:
    return svc.memory.expire(caller, family_id, body.reason)


@router.post("/v1/records/{family_id}/supersede", response_model=FamilyChange)
def supersede(family_id: UUID, body: SupersedeRequest, svc: Svc, caller: Caller) -> FamilyChange:
    return svc.memory.supersede(caller, family_id, body.changes(), body.reason, body.expected_version)


@router.post("/v1/records/{family_id}/correct", response_model=FamilyChange)
def correct(family_id: UUID, body: SupersedeRequest, svc: Svc, caller: Caller) -> FamilyChange:
    return svc.memory.supersede(caller, family_id, body.changes(), body.reason, body.expected_version,
                                action="correct")


@router.post("/v1/records/{family_id}/rollback", response_model=FamilyChange)
def rollback(family_id: UUID, body: RollbackRequest, svc: Svc, caller: Caller) -> FamilyChange:
    return svc.memory.rollback(caller, family_id, body.to_version, body.reason)


async def briefing(body: BriefingRequest, svc: Svc, caller: Caller, request: Request) -> Response:
    """Serialized once, by orjson, from the model (`explain` only when asked): the read path's hot spot.
    Computed on the process's briefing threads (`BriefingThreads`), apart from every other sync route's."""
    start = time.perf_counter()
    threads: BriefingThreads = request.app.state.briefing_threads
    with fair(request).admit(caller, "briefing"):  # per key and tenant: 429 before any work
        response = await threads.run(svc.briefing.brief, caller, body)
    observe_briefing(response, time.perf_counter() - start)
    return Response(orjson.dumps(response.wire()), media_type="application/json")


router.add_api_route("/v1/briefings", briefing, methods=["POST"], response_model=BriefingResponse,
                     route_class_override=LeanJsonRoute)  # parameters solved by hand: the read path's hot spot
BRIEFING_ROUTE = next(r for r in router.routes if isinstance(r, LeanJsonRoute))  # served by `HotRoute`


@router.post("/v1/alerts/alertmanager", response_model=IntakeAnswer)
def alertmanager(body: AlertmanagerWebhook, svc: Svc, caller: Caller) -> IntakeAnswer:
    """Prometheus Alertmanager's webhook (version 4), as it sends it: firing alerts open incidents with a
    briefing waiting; resolved ones are recorded, never resolving the incident."""
    return svc.intake.receive(caller, body, datetime.now(UTC))


@router.get("/v1/briefings/{briefing_id}")
def get_briefing(briefing_id: UUID, svc: Svc, caller: Caller) -> dict[str, Any]:
    """The answer exactly as it was given when the briefing was made (stored JSON, not re-shaped by
    today's models, so an old briefing reads as it was)."""
    return svc.briefing.get(caller, briefing_id)


@router.post("/v1/briefings/{briefing_id}/verify", response_model=VerifyResult)
def verify(briefing_id: UUID, body: VerifyRequest, svc: Svc, caller: Caller) -> VerifyResult:
    return svc.verification.verify(caller, briefing_id, body.incident_id, body.namespace)


@router.post("/v1/briefings/{briefing_id}/feedback", status_code=202, response_model=Accepted)
def feedback(briefing_id: UUID, body: FeedbackRequest, svc: Svc, caller: Caller) -> Accepted:
    return Accepted(accepted=[svc.briefing.feedback(caller, briefing_id, body).event_id])


# ---------------------------------------------------------------- governance (CONTRACT "Governance")
@router.post("/v1/governance/preview", response_model=PreviewResponse)
def governance_preview(svc: Svc, caller: Caller, body: GovernancePreviewRequest | None = None) -> PreviewResponse:
    """Run the jobs and write proposals only; no family, version or pointer changes."""
    return svc.governance.preview(caller, list((body or GovernancePreviewRequest()).jobs or []) or None)


@router.get("/v1/governance/proposals", response_model=ProposalList)
def governance_proposals(svc: Svc, caller: Caller, state: ProposalState | None = None,
                         kind: GovernanceJob | None = None) -> ProposalList:
    return ProposalList(proposals=svc.governance.proposals(caller, state, kind))


@router.get("/v1/governance/proposals/{proposal_id}", response_model=ProposalView)
def governance_proposal(proposal_id: UUID, svc: Svc, caller: Caller) -> ProposalView:
    return svc.governance.get(caller, proposal_id)


@router.post("/v1/governance/proposals/{proposal_id}/execute", response_model=ExecuteResponse)
def governance_execute(proposal_id: UUID, svc: Svc, caller: Caller) -> ExecuteResponse:
    """Execute under per-family leases; 409 when a family moved since the preview or another worker holds it."""
    return svc.governance.execute(caller, proposal_id)


@router.post("/v1/governance/proposals/{proposal_id}/dismiss", response_model=ProposalView)
def governance_dismiss(proposal_id: UUID, body: DismissRequest, svc: Svc, caller: Caller) -> ProposalView:
    return svc.governance.dismiss(caller, proposal_id, body.reason)


@router.post("/v1/governance/proposals/{proposal_id}/revert", response_model=ExecuteResponse)
def governance_revert(proposal_id: UUID, body: DismissRequest, svc: Svc, caller: Caller) -> ExecuteResponse:
    """Undo an executed proposal (a consolidation's keeper returns to its previous content byte for byte)."""
    return svc.governance.revert(caller, proposal_id, body.reason)
