"""What a postmortem parses to, and the errors of a document that is not one. Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.common.errors import InvalidInput, TooLarge

# the request guard's limit for any string (schemas.guard.MAX_STRING): a longer document is 413
MAX_DOCUMENT_CHARS = 65_536
MAX_SYMPTOMS = 5
MAX_ITEMS = 30  # action items, lessons, links, timeline entries kept
FIELD_LIMIT = 4000  # the ledger's Text fields
SHORT_LIMIT = 200  # the ledger's ShortText fields

Section = Literal["summary", "impact", "timeline", "root_cause", "trigger", "detection", "resolution",
                  "action_items", "lessons", "metadata"]
RootCauseFrom = Literal["section", "metadata", "trigger", "prose", "json"]


class TimelineEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: str | None = None  # the time as the document wrote it ("10:32 UTC", "2023-01-02 10:32")
    text: str


class Quarantined(BaseModel):
    """Text of the document that reads like an instruction (to an agent, a reviewer, the memory): kept only
    as a quote for the reviewer, never promoted into any field of a record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str  # where it was: "root_cause", "impact", "metadata services", ...
    text: str
    reason: str  # what made it look like an instruction


class Postmortem(BaseModel):
    """A parsed postmortem: the fields an import turns into ledger events. Every text here is clean of
    instruction-like text (moved to `quarantined`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["markdown", "json"]
    title: str | None = None
    started_at: datetime | None = None
    resolved_at: datetime | None = None
    services: list[str] = Field(default_factory=list)
    alert: str | None = None
    severity: str | None = None
    environment: str | None = None
    summary: str | None = None
    symptoms: list[str] = Field(default_factory=list)
    symptoms_from: Literal["impact", "summary", "timeline", "prose", "json", "none"] = "none"
    root_cause: str | None = None
    root_cause_category: str | None = None
    trigger: str | None = None
    detection: str | None = None
    resolution: str | None = None
    action_items: list[str] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    links: list[str] = Field(default_factory=list)
    sections: list[str] = Field(default_factory=list)  # recognized sections, in document order
    unparsed: list[str] = Field(default_factory=list)  # headings of sections no field took
    quarantined: list[Quarantined] = Field(default_factory=list)
    root_cause_withheld: bool = False  # the root cause read like an instruction: only quoted
    # where the root cause was read: its section, a metadata line, the trigger standing in, or the paragraph of a
    # document without a root-cause section that states the cause (`prose.causal_paragraph`)
    root_cause_from: RootCauseFrom | None = None

    def missing(self) -> list[str]:
        """What a postmortem must have and this one lacks (a root cause, symptoms)."""
        out = []
        if not self.root_cause and not self.root_cause_withheld:
            out.append("root_cause")
        if not self.symptoms and not self.summary:
            out.append("symptoms")
        return out


class NotAPostmortem(InvalidInput):
    """422: the document lacks what every postmortem has; `missing` names it."""

    def __init__(self, missing: list[str], hint: str = "") -> None:
        names = " and ".join(missing)
        super().__init__(f"not a postmortem: no {names} found{hint}", field=f"content.{missing[0]}")
        self.missing = missing


class DocumentTooLarge(TooLarge):
    """413: the document is longer than MAX_DOCUMENT_CHARS."""

    def __init__(self, length: int) -> None:
        super().__init__(f"the document has {length} characters; an import takes at most {MAX_DOCUMENT_CHARS}",
                         field="content")


def clip(text: str, limit: int = FIELD_LIMIT) -> str:
    """At most `limit` characters, cut at a word where one is near."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.8 else cut).rstrip() + "…"
