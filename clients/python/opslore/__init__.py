"""opslore's Python client: `from opslore import Client, AsyncClient` (distribution `opslore-client`).

Typed verbs over the HTTP API (briefings, evidence, feedback, episodes, record search, verification);
answers are the wire models of `opslore.models`; errors are `ApiError` with the contract's status, code
and field. Depends on httpx and pydantic only.
"""

from opslore.calls import ApiError
from opslore.client import AsyncClient, Client, observation_event
from opslore.events import envelope
from opslore.models import (
    BriefingRequest,
    BriefingResponse,
    EpisodeView,
    FeedbackRequest,
    Hint,
    RecordDetail,
    RecordSearchRequest,
    VerifyResult,
    Whoami,
)

__all__ = ["ApiError", "AsyncClient", "BriefingRequest", "BriefingResponse", "Client", "EpisodeView",
           "FeedbackRequest", "Hint", "RecordDetail", "RecordSearchRequest", "VerifyResult", "Whoami", "envelope",
           "observation_event"]
