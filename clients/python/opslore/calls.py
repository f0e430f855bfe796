"""What each SDK verb sends and how its answer is parsed, independent of sync or async transport.

`Client` and `AsyncClient` only execute a `Call`; the request shapes and the response models live here
once, so both clients (and the MCP proxy built on `Client`) stay identical by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from uuid import UUID

from pydantic import BaseModel

from opslore.models import (
    Accepted,
    BriefingResponse,
    EpisodeView,
    FeedbackRequest,
    Hint,
    RecordDetail,
    RecordSearchRequest,
    RecordSearchResponse,
    VerifyResult,
    Whoami,
)

T = TypeVar("T")


class ApiError(RuntimeError):
    """An error answer of the API: `status`, and the contract's `code`, `message` and `field`."""

    def __init__(self, status: int, body: Any) -> None:
        err = body.get("error", {}) if isinstance(body, dict) else {}
        if not isinstance(err, dict):  # e.g. the MCP transport's OAuth-style errors
            err = {"code": str(err), "message": str(body.get("error_description", err))}
        super().__init__(f"HTTP {status}: {err.get('message', body)}")
        self.status = status
        self.code: str | None = err.get("code")
        self.field: str | None = err.get("field")


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, str] = field(default_factory=dict)


def _dict(body: Any) -> dict[str, Any]:
    return dict(body)


def _accepted(body: Any) -> list[UUID]:
    return Accepted.model_validate(body).accepted


def _first_accepted(body: Any) -> UUID:
    return _accepted(body)[0]


def whoami() -> Call[Whoami]:
    return Call("GET", "/v1/whoami", Whoami.model_validate)


def brief(request: BaseModel) -> Call[BriefingResponse]:
    """`request`: the client's BriefingRequest, or any pydantic model of the same fields (the server's)."""
    return Call("POST", "/v1/briefings", BriefingResponse.model_validate,
                json=request.model_dump(mode="json", exclude_defaults=True))


def get_briefing(briefing_id: UUID | str) -> Call[dict[str, Any]]:
    """The stored answer as it was given (its JSON, not re-parsed by today's models)."""
    return Call("GET", f"/v1/briefings/{briefing_id}", _dict)


def verify(briefing_id: UUID | str, incident_id: str, namespace: str | None = None) -> Call[VerifyResult]:
    body = {"incident_id": incident_id} | ({"namespace": namespace} if namespace else {})
    return Call("POST", f"/v1/briefings/{briefing_id}/verify", VerifyResult.model_validate, json=body)


def feedback(briefing_id: UUID | str, request: FeedbackRequest | BaseModel) -> Call[UUID]:
    return Call("POST", f"/v1/briefings/{briefing_id}/feedback", _first_accepted,
                json=request.model_dump(mode="json"))


def append(events: list[dict[str, Any]]) -> Call[list[UUID]]:
    return Call("POST", "/v1/ledger/events", _accepted, json={"events": events})


def episode(incident_id: str) -> Call[EpisodeView]:
    return Call("GET", f"/v1/incidents/{incident_id}/episode", EpisodeView.model_validate)


def search_records(request: RecordSearchRequest | BaseModel) -> Call[list[Hint]]:
    return Call("POST", "/v1/records/search", lambda b: RecordSearchResponse.model_validate(b).records,
                json=request.model_dump(mode="json"))


def get_record(family_id: UUID | str) -> Call[RecordDetail]:
    return Call("GET", f"/v1/records/{family_id}", RecordDetail.model_validate)
