"""The typed SDK (`from opslore import Client, AsyncClient`) against the live stack: the five verbs an agent
framework reaches for first, answered as the API's own pydantic models."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from opslore import ApiError, AsyncClient, BriefingResponse, Client, Hint
from pydantic import ValidationError

from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def test_sync_client_briefs_records_and_gives_feedback(tenant_client: TenantFactory, settings: Settings) -> None:
    reviewer = tenant_client(role="reviewer")
    reviewer.append(resolved_incident("INC-SDK-PAST"))
    cand = eventually(lambda: reviewer.candidates(incident_id="INC-SDK-PAST", state="pending"))[0]
    family = uuid.UUID(reviewer.approve(str(cand["candidate_id"]))["family_id"])
    agent = tenant_client(role="agent", tenant=getattr(reviewer, "tenant"))  # noqa: B009
    with Client(settings.api_url, agent.key) as ol:
        assert ol.whoami().role == "agent"
        answer = ol.brief(services=["checkout-api"], signals=["db_pool_saturation"], incident_id="INC-SDK")
        assert isinstance(answer, BriefingResponse) and answer.hints[0].family_id == family
        found = ol.search_records("connection pool exhausted by slow queries")
        assert isinstance(found[0], Hint) and found[0].family_id == family
        event_id = ol.record_observation("INC-SDK", "prometheus", "pool at 100%", signals=["db_pool_saturation"])
        assert isinstance(event_id, uuid.UUID)
        assert isinstance(ol.feedback(answer.briefing_id, family, "adopted", incident_id="INC-SDK"), uuid.UUID)
        assert ol.get_record(family).family_id == family
        assert "pool at 100%" in str(eventually(lambda: ol.episode("INC-SDK")))
        with pytest.raises(ValidationError):
            ol.brief(limit=50)  # the request model is checked before anything is sent
        bad_event = {**resolved_incident("INC-SDK")[0], "trust": "gospel"}
        with pytest.raises(ApiError) as rejected:
            ol.append([bad_event])
        assert rejected.value.status == 422 and rejected.value.field == "events[0].trust"


def test_async_client_has_the_same_verbs(tenant_client: TenantFactory, settings: Settings) -> None:
    agent = tenant_client(role="agent")

    async def run() -> tuple[str, BriefingResponse, int]:
        async with AsyncClient(settings.api_url, agent.key) as ol:
            who = await ol.whoami()
            answer = await ol.brief(text="checkout latency after deploy")
            with pytest.raises(ApiError) as missing:
                await ol.get_record(uuid.uuid4())
            return who.tenant, answer, missing.value.status

    tenant, answer, status = asyncio.run(run())
    assert tenant == getattr(agent, "tenant") and answer.hints == [] and status == 404  # noqa: B009
