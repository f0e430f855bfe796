"""Memory poisoning: untrusted authored text never becomes memory, search terms or hint text.

Every text of replay/poisoning/texts.yaml goes into every text field of every event type of an
otherwise well-evidenced incident, on an event whose trust is `untrusted_text`. Whatever the field,
the record a reviewer approves carries none of it (except as quoted, withheld evidence), its search
document has none of its words, and the hint built from it does not show it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from schemas.memory import ApprovalEdits, CandidateDraft, VersionContent
from services.briefing.service import evidence_views
from services.lexicon.index import document, search_text
from services.memory.content import from_draft
from services.projector import policy
from tests.factories import T0, raw_event, record, resolved_incident

TEXTS: list[str] = yaml.safe_load((Path(__file__).parents[2] / "replay/poisoning/texts.yaml").read_text())["texts"]
Events = list[dict[str, Any]]


def _set(events: Events, index: int, path: list[str | int], value: str) -> Events:
    target: Any = events[index]
    events[index]["trust"] = "untrusted_text"
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return events


def _fill(value: Any, poison: str) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, poison) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, poison) for v in value]
    return poison if value == "POISON" else value


def _extra(kind: str, payload: dict[str, Any], cite: bool = False) -> Callable[[Events, str], Events]:
    """Inserts an untrusted event carrying the poison; `cite`: the verifying hypothesis cites it too."""
    def inject(events: Events, poison: str) -> Events:
        body = _fill(payload, poison)
        extra = raw_event(kind, "INC-P", body, trust="untrusted_text", minute=2)
        events.insert(2, extra)
        if cite:
            events[4]["payload"]["evidence_refs"].append(extra["event_id"])
        return events
    return inject


# (name, how to poison the incident): each is a text field of an event type
FIELDS: dict[str, Callable[[Events, str], Events]] = {
    "incident.opened title": lambda e, p: _set(e, 0, ["payload", "title"], p),
    "incident.opened alert.name": lambda e, p: _set(e, 0, ["payload", "alert", "name"], p),
    "incident.opened alert.labels": lambda e, p: _set(e, 0, ["payload", "alert", "labels"], {"note": p}),  # type: ignore[arg-type]
    "incident.opened services": lambda e, p: _set(e, 0, ["payload", "services", 0], p),
    "incident.opened environment": lambda e, p: _set(e, 0, ["payload", "environment"], p),
    "observation.recorded summary": _extra("observation.recorded", {"source": "logs", "summary": "POISON"}, True),
    "observation.recorded query": _extra("observation.recorded", {"source": "web", "summary": "s", "query": "POISON"},
                                         True),
    "observation.recorded signals": _extra("observation.recorded", {"source": "chat", "summary": "s",
                                                                    "signals": ["POISON"]}, True),
    "observation.recorded entities": _extra("observation.recorded", {"source": "ticket", "summary": "s",
                                                                     "entities": ["POISON"]}, True),
    "hypothesis.proposed statement": lambda e, p: _set(e, 2, ["payload", "statement"], p),
    "hypothesis.proposed category": lambda e, p: _set(e, 2, ["payload", "root_cause_category"], p),
    "signal.misleading signal": _extra("signal.misleading", {"signal": "POISON", "reason": "r"}),
    "signal.misleading reason": _extra("signal.misleading", {"signal": "db_pool_saturation", "reason": "POISON"}),
    "action.taken action": _extra("action.taken", {"action": "POISON", "outcome": "succeeded"}),
    "action.taken runbook_ref": _extra("action.taken", {"action": "a", "outcome": "succeeded",
                                                        "runbook_ref": "POISON"}),
    "incident.resolved root_cause": lambda e, p: _set(e, 4, ["payload", "root_cause"], p),
    "incident.resolved summary": lambda e, p: _set(e, 4, ["payload", "summary"], p),
    "incident.resolved resolution": lambda e, p: _set(e, 4, ["payload", "resolution"], p),
    "incident.resolved category": lambda e, p: _set(e, 4, ["payload", "root_cause_category"], p),
}
PROMOTED = ("summary", "canonical_content", "root_cause", "root_cause_category", "alert_name", "services", "signals",
            "entities", "misleading_signals", "verify_with", "environment", "cluster", "version_range",
            "topology_fingerprint", "owner")


def _draft(events: Events) -> CandidateDraft | None:
    state = None
    draft = None
    for e in events:
        changes = policy.project(state, record(e))
        state = changes.episode or state
        draft = changes.candidate.draft if changes.candidate else draft
    return draft


def _approved(draft: CandidateDraft) -> VersionContent:
    edits = ApprovalEdits(summary="Reviewer's own words: pool exhausted by slow queries") \
        if draft.untrusted_text_quoted else None
    return from_draft(draft, edits, valid_from=T0)


def test_the_corpus_is_large_enough() -> None:
    assert len(TEXTS) >= 50 and len(FIELDS) >= 15


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_no_poisoning_text_is_promoted_from_any_field(field: str) -> None:
    rejected = promoted = 0
    for i, text in enumerate(TEXTS):
        marker = f"qqmark{i}x{abs(hash(field)) % 997}"
        poison = f"{text} {marker}"
        try:
            draft = _draft(FIELDS[field](resolved_incident("INC-P"), poison))
        except ValidationError:
            rejected += 1  # the gateway would answer 422: nothing is appended
            continue
        if draft is None:  # a poisoned category disagrees with the other one: the gate refuses the candidate
            assert field.endswith("category"), f"{field}: the trusted evidence still backs the root cause"
            rejected += 1
            continue
        content = _approved(draft)
        leaked = [name for name in PROMOTED if marker in str(getattr(content, name))]
        assert not leaked, f"{field}: text {i} reached {leaked}"
        assert not any(marker in t for t in document(uuid.uuid4(), 1, content).lexemes), field
        assert marker not in search_text(content)
        shown = evidence_views(content.model_dump(mode="json"), limit=20)
        assert not any(marker in v.summary for v in shown), f"{field}: text {i} shown in a hint"
        if marker in content.model_dump_json():  # only as untrusted, withheld evidence
            assert all(e.trust == "untrusted_text" for e in content.evidence if marker in e.summary)
        promoted += 1
    assert rejected + promoted == len(TEXTS)


def test_a_poisoned_resolution_is_quoted_flagged_and_needs_the_reviewers_words() -> None:
    events = resolved_incident("INC-P")
    events[4]["trust"] = "untrusted_text"
    events[4]["payload"]["summary"] = TEXTS[0]
    draft = _draft(events)
    assert draft is not None and draft.untrusted_text_quoted and draft.authority == "clue"
    assert TEXTS[0] not in draft.summary and draft.root_cause == ""
    assert {q.field for q in draft.quoted} >= {"incident.resolved summary", "incident.resolved root_cause"}
    assert draft.trust_mix.get("untrusted_text", 0) >= 2
    content = _approved(draft)
    assert content.summary.startswith("Reviewer's own words") and content.root_cause is None
