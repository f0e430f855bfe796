"""A full default briefing (5 hints) stays under 600 estimated tokens; `limit` is respected."""

from __future__ import annotations

from functools import partial

import pytest

from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def test_five_hint_briefing_fits_the_token_budget(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    for i in range(7):
        events = resolved_incident(f"INC-{i}", service="checkout-api")
        events[-1]["payload"]["summary"] = f"checkout-api errors from pool exhaustion, variant {i} of the lesson"
        client.append(events)
    for i in range(7):
        cand = eventually(partial(client.candidates, incident_id=f"INC-{i}"))[0]
        client.approve(str(cand["candidate_id"]), edits={"summary": cand["summary"]}, resolution="new_family")
    request = {"alert": {"name": "HighErrorRate"}, "services": ["checkout-api"], "signals": ["db_pool_saturation"],
               "text": "checkout-api errors, connection pool exhausted"}
    answer = client.briefing(request)
    assert len(answer["hints"]) == 5
    assert answer["token_estimate"] < 600, answer["token_estimate"]
    assert answer["rendered"].count("\n1. ") == 1 and "\n5. " in answer["rendered"]
    assert answer["token_estimate_json"] > answer["token_estimate"]  # the JSON is reported, not hidden
    assert all("explain" not in h for h in answer["hints"])
    assert len(client.briefing(request | {"limit": 2})["hints"]) == 2
    explained = client.briefing(request | {"explain": True})["hints"][0]["explain"]
    assert explained["match_signal"] == 1.0 and explained["relevance"] > 0
