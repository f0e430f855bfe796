"""`service_version`: the software version deployed where an incident happens or a question is asked (contract
extension of v1.2's `version`, which is still accepted on input). Events already on the ledger, episodes and
drafts already stored carry `version`: they read the same; a new event is written with the new name."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from schemas.api import BriefingRequest
from schemas.ledger import IncidentOpened, LedgerEvent, LedgerRecord
from schemas.memory import CandidateDraft, Episode
from services.briefing.service import build_query
from services.memory.content import from_draft
from services.projector import policy
from tests.factories import T0, raw_event, record, resolved_incident

OPENED = {"alert": {"name": "HighErrorRate"}, "services": ["checkout-api"], "environment": "prod"}


def _as_the_old_gateway_wrote(raw: dict[str, Any], tenant: str = "acme") -> LedgerRecord:
    """The record as it is on the ledger since before the rename: the payload as submitted, `version` and all,
    hashed over that shape (the projector verifies the stored bytes, not a re-serialization)."""
    return LedgerEvent(**{**raw, "tenant": tenant, "project": "default"}).to_record(T0)


@pytest.mark.parametrize("name", ["service_version", "version"])
def test_both_names_are_accepted_on_input_and_mean_the_same(name: str) -> None:
    assert IncidentOpened.model_validate({**OPENED, name: "2.4.1"}).service_version == "2.4.1"
    assert BriefingRequest.model_validate({"services": ["checkout-api"], name: "2.4.1"}).service_version == "2.4.1"
    assert Episode.model_validate({"tenant": "t", "project": "p", "incident_id": "I", name: "2.4.1"}) \
        .service_version == "2.4.1"


def test_a_request_still_refuses_unknown_fields_and_bounds_the_new_name() -> None:
    with pytest.raises(ValidationError, match="verison"):
        BriefingRequest.model_validate({"verison": "2.4.1"})
    with pytest.raises(ValidationError, match="service_version"):
        BriefingRequest.model_validate({"service_version": "x" * 500})


def test_a_new_event_is_written_with_the_new_name() -> None:
    rec = record(raw_event("incident.opened", "INC-1", {**OPENED, "version": "2.4.1"}))
    assert rec.payload["service_version"] == "2.4.1" and "version" not in rec.payload


def test_an_old_shaped_event_projects_as_a_new_one_does() -> None:
    for_old = resolved_incident("INC-1")
    for_old[0]["payload"] = {**OPENED, "version": "2.4.1"}
    for_new = [dict(e) for e in for_old]
    for_new[0] = {**for_old[0], "payload": {**OPENED, "service_version": "2.4.1"}}
    old = [_as_the_old_gateway_wrote(e) for e in for_old]
    new = [record(e) for e in for_new]
    assert old[0].payload["version"] == "2.4.1" and "service_version" not in old[0].payload
    old_episode = new_episode = None
    for o, n in zip(old, new, strict=True):
        old_change, new_change = policy.project(old_episode, o), policy.project(new_episode, n)
        assert old_change == new_change
        old_episode, new_episode = old_change.episode or old_episode, new_change.episode or new_episode
    assert old_episode is not None and old_episode.service_version == "2.4.1"
    assert old_change.candidate is not None
    draft = old_change.candidate.draft
    assert draft.service_version == "2.4.1"
    assert from_draft(draft, None, T0).version_range == "2.4.1"  # the record applies where it was learned


def test_a_stored_draft_of_before_the_rename_reads_the_same() -> None:
    draft = CandidateDraft(summary="s", root_cause="r", confidence=0.5, service_version="2.4.1")
    stored = draft.model_dump(mode="json")
    assert "service_version" in stored and "version" not in stored
    old = {("version" if k == "service_version" else k): v for k, v in stored.items()}
    assert CandidateDraft.model_validate(old) == draft


@pytest.mark.parametrize("name", ["service_version", "version"])
def test_the_question_carries_it_to_the_ranker(name: str) -> None:
    q, _ = build_query(BriefingRequest.model_validate({"services": ["checkout-api"], name: "2.4.1"}))
    assert q.service_version == "2.4.1" and q.scoped


@pytest.mark.parametrize("name", ["service_version", "version"])
def test_the_client_accepts_both_names_and_sends_the_new_one(name: str) -> None:
    from opslore import BriefingRequest as ClientRequest
    from opslore.calls import brief

    assert brief(ClientRequest.model_validate({name: "2.4.1"})).json == {"service_version": "2.4.1"}
