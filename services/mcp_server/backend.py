"""What the MCP tools call: the same services as the HTTP routes, scoped by the caller's key.

Two implementations of one protocol:
- `LocalBackend`: inside the API process (streamable HTTP at /mcp) — the services and the `Principal`
  that the Bearer key authenticated to; nothing of the tool arguments can change that scope.
- `RemoteBackend`: for `opslore mcp` over stdio — the typed client (`opslore.Client`) against a running
  API, with the key from `OPSLORE_API_KEY`; the API applies the same scope. The client answers with its
  wire models (`opslore.models`); they are read into the server's models the tools declare.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, Protocol, TypeVar
from uuid import UUID

from opslore import Client
from pydantic import BaseModel

from schemas.api import BriefingRequest, BriefingResponse, FeedbackRequest, Hint, RecordSearchRequest, Whoami
from schemas.views import EpisodeView, RecordDetail, VerifyResult
from services.common.auth import Principal
from services.container import Services
from services.gateway.keys import whoami_of

Verdict = Literal["adopted", "refuted", "ignored"]
# the API process's fair share (services.api.fairness.FairShare.admit): a briefing, a record search or an append
# through MCP is admitted against the same per-key and per-tenant budgets as over HTTP, or refused (429)
Admit = Callable[[Principal, Literal["briefing", "ingest"]], AbstractContextManager[None]]


def _admit_all(_: Principal, __: Literal["briefing", "ingest"]) -> AbstractContextManager[None]:
    return nullcontext()


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
    """The API's own services, called for one authenticated principal, within the process's fair share."""

    def __init__(self, services: Services, principal: Principal, admit: Admit = _admit_all) -> None:
        self.svc = services
        self.principal = principal
        self.admit = admit

    def whoami(self) -> Whoami:
        return whoami_of(self.principal)

    def brief(self, request: BriefingRequest | None = None, **fields: Any) -> BriefingResponse:
        question = request or BriefingRequest.model_validate(fields)
        with self.admit(self.principal, "briefing"):
            return self.svc.briefing.brief(self.principal, question)

    def verify(self, briefing_id: UUID | str, incident_id: str, namespace: str | None = None) -> VerifyResult:
        return self.svc.verification.verify(self.principal, UUID(str(briefing_id)), incident_id, namespace)

    def feedback(self, briefing_id: UUID | str, family_id: UUID | str, verdict: Verdict,
                 incident_id: str = "CURRENT") -> UUID:
        body = FeedbackRequest(family_id=UUID(str(family_id)), verdict=verdict, incident_id=incident_id)
        return self.svc.briefing.feedback(self.principal, UUID(str(briefing_id)), body).event_id

    def append(self, events: list[dict[str, Any]]) -> list[UUID]:
        with self.admit(self.principal, "ingest"):
            return [r.event_id for r in self.svc.gateway.append({"events": events}, self.principal)]

    def episode(self, incident_id: str) -> EpisodeView:
        return self.svc.episodes.episode(self.principal, incident_id)

    def search_records(self, query: str, services: list[str] | None = None, limit: int = 5) -> list[Hint]:
        request = RecordSearchRequest(query=query, services=services or [], limit=limit)
        with self.admit(self.principal, "briefing"):
            return self.svc.briefing.search(self.principal, request)

    def get_record(self, family_id: UUID | str) -> RecordDetail:
        return self.svc.memory.get_record(self.principal, UUID(str(family_id)))


M = TypeVar("M", bound=BaseModel)


def _as(model: type[M], answer: BaseModel) -> M:
    return model.model_validate(answer.model_dump(mode="json"))


class RemoteBackend:
    """The API over HTTP through the typed client, answering with the server's models."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def whoami(self) -> Whoami:
        return _as(Whoami, self.client.whoami())

    def brief(self, request: BriefingRequest | None = None, **fields: Any) -> BriefingResponse:
        return _as(BriefingResponse, self.client.brief(request, **fields))

    def verify(self, briefing_id: UUID | str, incident_id: str, namespace: str | None = None) -> VerifyResult:
        return _as(VerifyResult, self.client.verify(briefing_id, incident_id, namespace))

    def feedback(self, briefing_id: UUID | str, family_id: UUID | str, verdict: Verdict,
                 incident_id: str = "CURRENT") -> UUID:
        return self.client.feedback(briefing_id, family_id, verdict, incident_id)

    def append(self, events: list[dict[str, Any]]) -> list[UUID]:
        return self.client.append(events)

    def episode(self, incident_id: str) -> EpisodeView:
        return _as(EpisodeView, self.client.episode(incident_id))

    def search_records(self, query: str, services: list[str] | None = None, limit: int = 5) -> list[Hint]:
        return [_as(Hint, h) for h in self.client.search_records(query, services, limit)]

    def get_record(self, family_id: UUID | str) -> RecordDetail:
        return _as(RecordDetail, self.client.get_record(family_id))
