"""Incident tools' API answers converted to the contract's json postmortem (`PostmortemJson`). Pure.

- incident.io: `GET /v2/incidents/{id}` (`{"incident": {...}}`) and, optionally, `GET /v2/follow_ups`
  (`{"follow_ups": [...]}`). Name, summary, severity, the `Impact started` / `Resolved at` timestamps, and
  custom fields by their names (`Affected services`, `Alert`, `Customer impact`, `Root cause`,
  `Root cause category`, `Mitigation` / `Resolution`); follow-ups become action items.
- PagerDuty: `GET /incidents/{id}` (`{"incident": {...}}`) and `GET /incidents/{id}/notes`
  (`{"notes": [...]}`). PagerDuty has no root-cause field: notes that begin `Root cause:`, `Resolution:`,
  `Action item:` (or 根因：, 处理：, 改进：) carry them; the description is the symptom.
An export without a stated root cause converts, and the import then refuses it with 422 naming it.
"""

from __future__ import annotations

import re
from typing import Any

from services.postmortems.json_format import PostmortemJson

_Fields = dict[str, list[str]]


def _field_values(entry: dict[str, Any]) -> list[str]:
    out = []
    for v in entry.get("values") or []:
        if v.get("value_text"):
            out.append(str(v["value_text"]))
        elif v.get("value_catalog_entry"):
            out.append(str(v["value_catalog_entry"].get("name", "")))
        elif v.get("value_option"):
            out.append(str(v["value_option"].get("value", "")))
        elif v.get("value_link"):
            out.append(str(v["value_link"]))
        elif v.get("value_numeric") is not None:
            out.append(str(v["value_numeric"]))
    return [x for x in out if x]


def _custom_fields(incident: dict[str, Any]) -> _Fields:
    return {str(e.get("custom_field", {}).get("name", "")).strip().lower(): _field_values(e)
            for e in incident.get("custom_field_entries") or []}


def _first(fields: _Fields, *names: str) -> str | None:
    return next((fields[n][0] for n in names if fields.get(n)), None)


def _timestamp(incident: dict[str, Any], *names: str) -> str | None:
    for t in incident.get("incident_timestamp_values") or []:
        name = str(t.get("incident_timestamp", {}).get("name", "")).lower()
        if name in names and (t.get("value") or {}).get("value"):
            return str(t["value"]["value"])
    return None


def from_incident_io(incident_answer: dict[str, Any],
                     follow_ups_answer: dict[str, Any] | None = None) -> PostmortemJson:
    inc = incident_answer.get("incident", incident_answer)
    fields = _custom_fields(inc)
    services = [s for n in ("affected services", "services", "affected service", "service") for s in fields.get(n, [])]
    category = _first(fields, "root cause category", "category")
    return PostmortemJson.model_validate({
        "title": inc.get("name"), "summary": inc.get("summary"),
        "started_at": _timestamp(inc, "impact started", "reported at") or inc.get("created_at"),
        "resolved_at": _timestamp(inc, "resolved at", "closed at"),
        "services": list(dict.fromkeys(services)), "alert": _first(fields, "alert", "alert name"),
        "severity": (inc.get("severity") or {}).get("name"),
        "symptoms": _first(fields, "customer impact", "impact", "symptoms") or inc.get("summary"),
        "root_cause": _first(fields, "root cause", "root causes", "cause"),
        "root_cause_category": re.sub(r"\W+", "_", category.strip().lower()).strip("_") if category else None,
        "resolution": _first(fields, "resolution", "mitigation", "fix"),
        "action_items": [str(f["title"]) for f in (follow_ups_answer or {}).get("follow_ups", []) if f.get("title")],
        "links": [u for u in (inc.get("permalink"), inc.get("postmortem_document_url")) if u],
    })


_NOTE = re.compile(r"^\s*(root cause|cause|resolution|mitigation|action item|follow[- ]up|根因|原因|处理|改进)"
                   r"\s*[:：]\s*", re.IGNORECASE)
_KIND = {"root cause": "root_cause", "cause": "root_cause", "根因": "root_cause", "原因": "root_cause",
         "resolution": "resolution", "mitigation": "resolution", "处理": "resolution",
         "action item": "action_items", "follow-up": "action_items", "follow up": "action_items",
         "改进": "action_items"}


def from_pagerduty(incident_answer: dict[str, Any], notes_answer: dict[str, Any] | None = None) -> PostmortemJson:
    inc = incident_answer.get("incident", incident_answer)
    said: dict[str, list[str]] = {"root_cause": [], "resolution": [], "action_items": []}
    for note in sorted((notes_answer or {}).get("notes", []), key=lambda n: str(n.get("created_at", ""))):
        content = str(note.get("content") or "")
        m = _NOTE.match(content)
        if m:
            said[_KIND[m[1].lower()]].append(content[m.end():].strip())
    service = (inc.get("service") or {}).get("summary")
    severity = (inc.get("priority") or {}).get("summary") or inc.get("urgency")
    resolved = inc.get("last_status_change_at") if inc.get("status") == "resolved" else None
    return PostmortemJson.model_validate({
        "title": inc.get("title") or inc.get("summary"), "started_at": inc.get("created_at"), "resolved_at": resolved,
        "services": [service] if service else [], "alert": inc.get("incident_key"), "severity": severity,
        "symptoms": inc.get("description") or inc.get("title"),
        "root_cause": " ".join(said["root_cause"]) or None, "resolution": " ".join(said["resolution"]) or None,
        "action_items": said["action_items"], "links": [inc["html_url"]] if inc.get("html_url") else [],
    })
