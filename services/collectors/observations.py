"""Envelopes that collectors and adapters append: trust decided by the source, never by the text.

Metric and API collectors are `trusted_tool`. Free text (tickets, chats, web pages, log lines) is
`untrusted_text` unless the adapter was configured as trusted by an operator.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from schemas.ledger import EventType, Trust, envelope

FREE_TEXT_SOURCES = {"ticket", "chat", "web", "logs", "other"}


def observation(incident_id: str, source: str, summary: str, *, writer: str, query: str | None = None,
                signals: list[str] | None = None, entities: list[str] | None = None,
                values: dict[str, Any] | None = None, trust: Trust = Trust.TRUSTED_TOOL,
                at: datetime | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"source": source, "summary": summary[:4000], "signals": signals or [],
                               "entities": entities or []}
    if query:
        payload["query"] = query[:4000]
    if values is not None:
        payload["values"] = values
    return envelope(EventType.OBSERVATION_RECORDED, incident_id, payload, writer_kind="tool", writer_id=writer,
                    trust=trust, at=at)


class TextAdapter:
    """Generic adapter for tools that produce free text (ticketing, chat, log search, web pages)."""

    def __init__(self, source: str, writer: str, *, trusted: bool = False) -> None:
        if source not in FREE_TEXT_SOURCES | {"trace", "ci", "cmdb"}:
            raise ValueError(f"unknown source {source!r}")
        self.source = source
        self.writer = writer
        self.trusted = trusted

    def event(self, incident_id: str, text: str, *, signals: list[str] | None = None,
              raw_ref: str | None = None) -> dict[str, Any]:
        trust = Trust.TRUSTED_TOOL if self.trusted else Trust.UNTRUSTED_TEXT
        event = observation(incident_id, self.source, text, writer=self.writer,
                            signals=signals if self.trusted else [], trust=trust)
        if raw_ref:
            event["payload"]["raw_ref"] = raw_ref
        return event
