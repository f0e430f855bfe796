"""Request and answer of `POST /v1/postmortems` (CONTRACT v1.2 "Postmortem import")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from schemas.guard import Guarded
from schemas.ledger import IncidentId


class PostmortemImportRequest(Guarded):
    """`content` is the Markdown text (`markdown`), or the json object or its text (`json`). Its size is
    checked before this model (413 above the limit); tenant and project come from the key."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["markdown", "json"]
    content: str | dict[str, Any]
    source_ref: Annotated[str, StringConstraints(min_length=1, max_length=1000)] | None = None
    incident_id: IncidentId | None = None


class PostmortemImportAnswer(BaseModel):
    """202: the incident the document became, the events appended for it (none new when `status` is
    `unchanged`), whether a candidate comes of it, and the sections no field took."""

    incident_id: str
    event_ids: list[str]
    candidate: bool
    unparsed: list[str]
    status: Literal["imported", "unchanged"] = "imported"
    quarantined: int = 0  # blocks that read like instructions: quoted for the reviewer, never promoted
    root_cause_withheld: bool = False
