"""The contract's `json` postmortem format (the shape an exporter from another incident tool writes), parsed
into `Postmortem`. Pure.

`{title, started_at, services[], alert?, symptoms, root_cause, root_cause_category?, resolution?,
action_items[]?, links[]?}`, plus the optional `resolved_at, severity, environment, summary, lessons[]`.
`symptoms` is one text or a list of them. `content` may be the object or its JSON text. Instruction-like text
in any field is quarantined exactly as in Markdown documents.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from schemas.ledger import BoundedTime
from services.common.errors import InvalidInput
from services.postmortems.instructions import instruction_reason, withheld_hint
from services.postmortems.model import (
    FIELD_LIMIT,
    MAX_DOCUMENT_CHARS,
    MAX_ITEMS,
    MAX_SYMPTOMS,
    SHORT_LIMIT,
    DocumentTooLarge,
    NotAPostmortem,
    Postmortem,
    Quarantined,
    clip,
)
from services.postmortems.times import parse_time

Short = Annotated[str, StringConstraints(max_length=SHORT_LIMIT)]
Long = Annotated[str, StringConstraints(max_length=MAX_DOCUMENT_CHARS)]


class PostmortemJson(BaseModel):
    """CONTRACT v1.2: the `json` format of `POST /v1/postmortems`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Short | None = None
    started_at: BoundedTime | None = None
    resolved_at: BoundedTime | None = None
    services: Annotated[list[Short], Field(max_length=50)] = Field(default_factory=list)
    alert: Short | None = None
    severity: Short | None = None
    environment: Short | None = None
    summary: Long | None = None
    symptoms: Long | Annotated[list[Long], Field(max_length=100)] | None = None
    root_cause: Long | None = None
    root_cause_category: Short | None = None
    resolution: Long | None = None
    action_items: Annotated[list[Long], Field(max_length=200)] = Field(default_factory=list)
    lessons: Annotated[list[Long], Field(max_length=200)] = Field(default_factory=list)
    links: Annotated[list[Long], Field(max_length=200)] = Field(default_factory=list)

    @field_validator("started_at", "resolved_at", mode="before")
    @classmethod
    def _time_as_written(cls, value: Any) -> Any:
        """A date or a time without a zone, as spreadsheets and incident tools export them ("2025-03-01",
        "2025-03-01 10:00", "2025/03/01", "March 1, 2025"): read as the Markdown importer reads it, in UTC. What
        cannot be read is left for the field's own check, which names it."""
        if isinstance(value, str) and (parsed := parse_time(value)) is not None:
            return parsed
        return value


def parse_json(content: str | dict[str, Any]) -> Postmortem:
    """Raises DocumentTooLarge (413), InvalidInput naming the field (422) or NotAPostmortem (422)."""
    if isinstance(content, str):
        if len(content) > MAX_DOCUMENT_CHARS:
            raise DocumentTooLarge(len(content))
        try:
            content = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise InvalidInput(f"content is not JSON: {exc}", field="content") from None
    if not isinstance(content, dict):
        raise InvalidInput("a json postmortem is an object", field="content")
    if len(orjson.dumps(content)) > MAX_DOCUMENT_CHARS * 4:
        raise DocumentTooLarge(len(orjson.dumps(content)))
    try:
        doc = PostmortemJson.model_validate(content)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path = ".".join(str(p) for p in err["loc"])
        raise InvalidInput(f"content.{path}: {err['msg']}", field=f"content.{path}") from None
    return from_document(doc)


def from_document(doc: PostmortemJson) -> Postmortem:
    quarantined: list[Quarantined] = []

    def clean(where: str, text: str | None, limit: int = FIELD_LIMIT) -> str | None:
        if text is None or not text.strip():
            return None
        reason = instruction_reason(text)
        if reason:
            quarantined.append(Quarantined(field=where, text=clip(text), reason=reason))
            return None
        return clip(text, limit)

    def cleaned(where: str, texts: list[str]) -> list[str]:
        return [t for x in texts if (t := clean(where, x))][:MAX_ITEMS]

    raw_symptoms = [doc.symptoms] if isinstance(doc.symptoms, str) else list(doc.symptoms or [])
    symptoms = cleaned("symptoms", raw_symptoms)[:MAX_SYMPTOMS]
    summary = clean("summary", doc.summary)
    root_cause = clean("root_cause", doc.root_cause)
    withheld = bool(doc.root_cause and doc.root_cause.strip()) and root_cause is None
    pm = Postmortem(
        format="json", title=clean("title", doc.title, SHORT_LIMIT), started_at=doc.started_at,
        resolved_at=doc.resolved_at, services=cleaned("services", list(doc.services)),
        alert=clean("alert", doc.alert, SHORT_LIMIT), severity=clean("severity", doc.severity, SHORT_LIMIT),
        environment=clean("environment", doc.environment, SHORT_LIMIT), summary=summary,
        symptoms=symptoms or ([summary] if summary else []),
        symptoms_from="json" if symptoms else ("summary" if summary else "none"),
        root_cause=root_cause, root_cause_category=clean("root_cause_category", doc.root_cause_category, SHORT_LIMIT),
        resolution=clean("resolution", doc.resolution), action_items=cleaned("action_items", list(doc.action_items)),
        lessons=cleaned("lessons", list(doc.lessons)),
        links=[x for x in doc.links if not instruction_reason(x)][:MAX_ITEMS],
        sections=[k for k in ("symptoms", "root_cause", "resolution", "action_items") if getattr(doc, k)],
        quarantined=quarantined, root_cause_withheld=withheld, root_cause_from="json" if root_cause else None,
    )
    missing = pm.missing()
    if missing:
        raise NotAPostmortem(missing, "".join(f" ({h})" for h in withheld_hint(pm)))
    return pm
