"""A parsed postmortem as ledger envelopes, with ids from its content. Pure (the caller passes `now`).

An import appends what an investigation would have (writer `human`, trust `user_stated`): the opening with
the document's alert, services and environment; one observation per symptom (`raw_ref`: the source or its
first link); the resolution with the root cause, category, resolution and the mark `imported` (the
document's other fields, its quarantined text, and the document itself for the reviewer). Event ids are
UUID v5 of tenant, project, incident and the document's SHA-256, so the same document imported twice names
the same events (a no-op everywhere) and an edited one names new ones (a new resolution, hence a new
candidate, never an overwrite).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import datetime
from typing import Any

from schemas.ledger import EventType, ImportedPostmortem, QuarantinedText, Trust, canonical_json, envelope
from services.postmortems.model import FIELD_LIMIT, SHORT_LIMIT, Postmortem, clip

NAMESPACE = uuid.UUID("4d1e3c2b-7a6f-4f0e-9b8d-2c5a1e7f3b90")
PLACEHOLDER_ALERT = "postmortem-import"  # incident.opened needs an alert name; the mark says whether one was named
WITHHELD_ROOT_CAUSE = "(withheld at import: the root cause read like an instruction; see the quoted text)"
SUMMARY_LIMIT = 1000


def document_sha256(format: str, content: str | dict[str, Any]) -> str:
    """The document's identity: its text with line endings and outer whitespace normalised, or its object's
    canonical JSON."""
    data = canonical_json(content) if isinstance(content, dict) else content.replace("\r\n", "\n").strip().encode()
    return hashlib.sha256(format.encode() + b"\0" + data).hexdigest()


def incident_id_for(source_ref: str | None, content_sha256: str) -> str:
    """`pm-<slug>-<hash>`: of the source when given (an edited document stays the same incident), else of the
    content."""
    if source_ref:
        base = re.sub(r"\.(md|markdown|json)$", "", source_ref.rstrip("/").split("/")[-1], flags=re.I)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.")[:60]
        digest = hashlib.sha256(source_ref.encode()).hexdigest()[:12]
        return f"pm-{slug}-{digest}" if slug else f"pm-{digest}"
    return f"pm-{content_sha256[:16]}"


def _id(tenant: str, project: str, incident_id: str, sha: str, part: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{tenant}/{project}/{incident_id}/{sha}/{part}")


def mark_of(pm: Postmortem, content_sha256: str, source_ref: str | None, document: str | None) -> ImportedPostmortem:
    return ImportedPostmortem(
        content_sha256=content_sha256, format=pm.format, source_ref=source_ref, title=pm.title, alert=pm.alert,
        severity=pm.severity, started_at=pm.started_at, symptoms_from=pm.symptoms_from, trigger=pm.trigger,
        detection=pm.detection, action_items=pm.action_items, lessons=pm.lessons,
        links=[clip(x, FIELD_LIMIT) for x in pm.links], sections=pm.sections,
        unparsed=[clip(u, SHORT_LIMIT) for u in pm.unparsed][:100],
        quarantined=[QuarantinedText(field=clip(q.field, SHORT_LIMIT), text=q.text, reason=q.reason)
                     for q in pm.quarantined][:100],
        root_cause_withheld=pm.root_cause_withheld, root_cause_from=pm.root_cause_from, document=document)


def build_events(pm: Postmortem, *, tenant: str, project: str, incident_id: str, content_sha256: str,
                 source_ref: str | None, document: str | None, actor: str, now: datetime) -> list[dict[str, Any]]:
    """The submitted envelopes of one import, in ledger order (opening, symptoms, resolution)."""
    started = pm.started_at or now
    resolved = max(pm.resolved_at or started, started)
    common: dict[str, Any] = {"writer_kind": "human", "writer_id": clip(f"postmortem-import {actor}", SHORT_LIMIT),
                              "trust": Trust.USER_STATED}

    def ev(kind: EventType, part: str, payload: dict[str, Any], at: datetime) -> dict[str, Any]:
        return envelope(kind, incident_id, payload, at=at,
                        event_id=_id(tenant, project, incident_id, content_sha256, part), **common)

    opened: dict[str, Any] = {"alert": {"name": pm.alert or PLACEHOLDER_ALERT}, "services": pm.services}
    if pm.severity:
        opened["alert"]["severity"] = pm.severity
    if pm.title:
        opened["title"] = pm.title
    if pm.environment:
        opened["environment"] = pm.environment
    events = [ev(EventType.INCIDENT_OPENED, "opened", opened, started)]
    raw_ref = source_ref or (pm.links[0] if pm.links else None)
    symptom_ids = []
    for i, symptom in enumerate(pm.symptoms):
        payload: dict[str, Any] = {"source": "ticket", "summary": clip(symptom)}
        if raw_ref:
            payload["raw_ref"] = clip(raw_ref)
        events.append(ev(EventType.OBSERVATION_RECORDED, f"symptom/{i}", payload, started))
        symptom_ids.append(events[-1]["event_id"])
    root_cause = pm.root_cause if pm.root_cause and not pm.root_cause_withheld else WITHHELD_ROOT_CAUSE
    summary = pm.summary or (pm.symptoms[0] if pm.symptoms else root_cause)
    resolved_payload: dict[str, Any] = {
        "root_cause": clip(root_cause), "summary": clip(summary, SUMMARY_LIMIT), "evidence_refs": symptom_ids,
        "services": pm.services,
        "imported": mark_of(pm, content_sha256, source_ref, document).model_dump(mode="json", exclude_none=True),
    }
    if pm.root_cause_category:
        resolved_payload["root_cause_category"] = pm.root_cause_category
    if pm.resolution:
        resolved_payload["resolution"] = clip(pm.resolution)
    events.append(ev(EventType.INCIDENT_RESOLVED, "resolved", resolved_payload, resolved))
    return events
