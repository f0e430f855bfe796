"""What the MCP tools call: the same services as the HTTP routes, scoped by the caller's key.

Two implementations of one protocol:
- `LocalBackend`: inside the API process (streamable HTTP at /mcp) — the services and the `Principal`
  that the Bearer key authenticated to; nothing of the tool arguments can change that scope.
- `services.sdk.Client`: for `opslore mcp` over stdio — the typed SDK against a running API, with the
  key from `OPSLORE_API_KEY`; the API applies the same scope.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol
from uuid import UUID

from schemas.api import BriefingRequest, BriefingResponse, FeedbackRequest, Hint, RecordSearchRequest, Whoami
from schemas.views import EpisodeView, RecordDetail, VerifyResult
from services.common.auth import Principal
from services.container import Services
from services.gateway.keys import whoami_of

Verdict = Literal["adopted", "refuted", "ignored"]


class AgentBackend(Protocol):
    def whoami(self) -> Whoami: ...

    def brief(self, request: BriefingRequest | None = None, **fields: Any) -> BriefingResponse: ...

    def verify(self, briefing_id: UUID | str, incident_id: str, namespace: str | None = None) -> VerifyResult: ...

    def feedback(self, briefing_id: UUID | str, family_id: UUID | str, verdict: Verdict,
                 incident_id: str = "CURRENT") -> UUID: ...

    def append(self, events: list[dict[str, Any]]) -> list[UUID]: ...

    def episode(self, incident_id: str) -> EpisodeView: ...

    def search_records(self, query: str, services: list[str] | None = None, limit: int = 5) -> list[Hint]: ...

    def get_record(self, family_id: UUID | str) -> RecordDetail: ...


class LocalBackend:
    """The API's own services, called for one authenticated principal."""

    def __init__(self, services: Services, principal: Principal) -> None:
        self.svc = services
        self.principal = principal

    def whoami(self) -> Whoami:
        return whoami_of(self.principal)

    def brief(self, request: BriefingRequest | None = None, **fields: Any) -> BriefingResponse:
        return self.svc.briefing.brief(self.principal, request or BriefingRequest.model_validate(fields))

    def verify(self, briefing_id: UUID | str, incident_id: str, namespace: str | None = None) -> VerifyResult:
        return self.svc.verification.verify(self.principal, UUID(str(briefing_id)), incident_id, namespace)

    def feedback(self, briefing_id: UUID | str, family_id: UUID | str, verdict: Verdict,
                 incident_id: str = "CURRENT") -> UUID:
        body = FeedbackRequest(family_id=UUID(str(family_id)), verdict=verdict, incident_id=incident_id)
        return self.svc.briefing.feedback(self.principal, UUID(str(briefing_id)), body).event_id

    def append(self, events: list[dict[str, Any]]) -> list[UUID]:
        return [r.event_id for r in self.svc.gateway.append({"events": events}, self.principal)]

    def episode(self, incident_id: str) -> EpisodeView:
        return self.svc.episodes.episode(self.principal, incident_id)

    def search_records(self, query: str, services: list[str] | None = None, limit: int = 5) -> list[Hint]:
        request = RecordSearchRequest(query=query, services=services or [], limit=limit)
        return self.svc.briefing.search(self.principal, request)

    def get_record(self, family_id: UUID | str) -> RecordDetail:
        return self.svc.memory.get_record(self.principal, UUID(str(family_id)))
