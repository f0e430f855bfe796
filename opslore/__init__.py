"""opslore's Python SDK: `from opslore import Client, AsyncClient`.

The implementation lives in `services.sdk`; this package is the stable import path for agent code.
"""

from schemas.api import BriefingRequest, BriefingResponse, Hint, Whoami
from services.sdk.calls import ApiError
from services.sdk.client import AsyncClient, Client, observation_event

__all__ = ["ApiError", "AsyncClient", "BriefingRequest", "BriefingResponse", "Client", "Hint", "Whoami",
           "observation_event"]
