"""End to end: incident opened -> collectors append -> briefing -> verify live -> feedback moves confidence.

The API runs in-process (same code as `opslore api`) with OPSLORE_PROMETHEUS_URL pointing at a real
Prometheus; Kafka, the running projector and PostgreSQL are the real ones.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from schemas.ledger import envelope
from services.api.app import create_app
from services.briefing.causes_calibrator import lived_feedback
from services.cli.client import OpsloreClient
from services.collectors.observations import observation
from services.collectors.prometheus import PrometheusCollector
from services.collectors.signals import load_rules
from services.common.db import Database
from services.common.settings import Settings
from tests.integration.helpers import eventually
from tests.integration.prom import LivePrometheus

pytestmark = pytest.mark.integration
QUERY = 'db_pool_pending{service="checkout-api"}'



@pytest.fixture(scope="module")
def client(settings: Settings, prom: LivePrometheus) -> Iterator[OpsloreClient]:
    app = create_app(settings.model_copy(update={"prometheus_url": prom.url}))
    with TestClient(app) as http:
        admin = OpsloreClient("", settings.admin_token, http=http)
        tenant = f"e2e-{uuid.uuid4().hex[:8]}"
        reviewer = OpsloreClient("", admin.create_key(tenant, "reviewer"), http=http)
        reviewer.tenant = tenant  # type: ignore[attr-defined]
        yield reviewer


def event(kind: str, incident: str, payload: dict[str, Any], trust: str = "trusted_tool") -> dict[str, Any]:
    return envelope(kind, incident, payload, writer_kind="agent", writer_id="sre-agent", trust=trust)


def collect(prom: LivePrometheus, incident: str) -> dict[str, Any]:
    result = PrometheusCollector(prom.url, load_rules()).instant(QUERY)
    return observation(incident, "prometheus", result.summary, writer="opslore-collector", query=QUERY,
                       signals=result.signals, entities=["checkout-api"], values=result.values())


def hint_for(client: OpsloreClient, incident: str) -> tuple[str, dict[str, Any]]:
    answer = client.briefing({"alert": {"name": "CheckoutErrors"}, "services": ["checkout-api"],
                              "signals": ["db_pool_saturation"]})
    return answer["briefing_id"], next(h for h in answer["hints"] if incident in h["source_incidents"])


def test_collect_brief_verify_feedback(client: OpsloreClient, prom: LivePrometheus, settings: Settings) -> None:
    prom.pool_pending.labels(service="checkout-api").set(240)
    prom.wait_for(QUERY, 240)
    opened = {"alert": {"name": "CheckoutErrors"}, "services": ["checkout-api"], "environment": "prod"}
    past = "INC-PAST"
    obs = collect(prom, past)
    assert obs["payload"]["signals"] == ["db_pool_saturation"]
    client.append([event("incident.opened", past, opened), obs,
                   event("hypothesis.proposed", past, {"hypothesis_id": "h1", "statement": "pool exhausted",
                                                       "root_cause_category": "db_connection_pool"}, "model_inferred"),
                   event("hypothesis.verified", past, {"hypothesis_id": "h1", "evidence_refs": [obs["event_id"]]}),
                   event("incident.resolved", past, {"root_cause": "slow queries held every DB connection",
                                                     "root_cause_category": "db_connection_pool",
                                                     "summary": "checkout errors from pool exhaustion",
                                                     "evidence_refs": [obs["event_id"]]}, "user_stated")])
    candidate = eventually(lambda: client.candidates(incident_id=past))[0]
    assert "values" not in str(candidate["content"]) and "240" not in str(candidate["content"]["signals"])
    client.approve(str(candidate["candidate_id"]))

    now = "INC-NOW"
    client.append([event("incident.opened", now, opened), collect(prom, now)])
    briefing_id, hint = hint_for(client, past)
    assert hint["verify_with"][0]["query"] == QUERY and hint["verify_with"][0]["signals"] == ["db_pool_saturation"]
    confidence = hint["confidence"]

    verdict = client.verify(briefing_id, now)
    assert verdict["hints"][0]["verdict"] == "supported"
    assert verdict["hints"][0]["checks"][0]["signals_now"] == ["db_pool_saturation"]
    assert len(verdict["appended"]) == 2  # the live observation and an `adopted` feedback event

    def confidence_raised() -> dict[str, Any] | None:
        hint_now = hint_for(client, past)[1]
        return hint_now if hint_now["confidence"] > confidence else None

    raised = eventually(confidence_raised)
    def episode_with_verifier_observation() -> dict[str, Any] | None:
        found = client.episode(now)
        return found if found and len(found["observations"]) == 2 else None

    episode = eventually(episode_with_verifier_observation)
    assert episode["observations"][1]["writer"] == "tool:opslore-verifier"

    family = str(hint_for(client, past)[1]["family_id"])
    usage = client.record(family)["usage"]
    assert usage["adopted"] == 1 and usage["briefings"] >= 3 and usage["last_used_at"]

    prom.pool_pending.labels(service="checkout-api").set(2)
    prom.wait_for(QUERY, 2)
    refuted_id, _ = hint_for(client, past)
    assert client.verify(refuted_id, now)["hints"][0]["verdict"] == "refuted"
    eventually(lambda: hint_for(client, past)[1]["confidence"] < raised["confidence"])

    # both verdicts are the tenant's causes calibration data: the question each briefing asked, its cause
    # confirmed (adopted) or ruled out (refuted), as an agent's feedback would be
    db = Database(settings.database_url, max_size=1)
    db.open()
    try:
        def judged() -> set[tuple[str, str, str]] | None:
            with db.tenant_transaction(getattr(client, "tenant")) as cur:  # noqa: B009
                rows = lived_feedback(cur)
            found = {(str(r["family_id"]), r["verdict"], str(r["request"]["alert"]["name"])) for r in rows}
            return found if len(found) == 2 else None

        assert eventually(judged) == {(family, "adopted", "CheckoutErrors"), (family, "refuted", "CheckoutErrors")}
    finally:
        db.close()


def test_verifying_an_unknown_briefing_is_404(client: OpsloreClient) -> None:
    from services.cli.client import ApiError

    with pytest.raises(ApiError) as err:
        client.verify(str(uuid.uuid4()), "INC-X")
    assert err.value.status == 404
