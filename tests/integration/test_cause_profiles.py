"""The concept path of the causes (services/briefing/symptoms.py) through the live stack: each cause's class profile
from its records' stored e5 vectors, read under RLS; what a question's symptoms say of each cause through it; and
the calibrator's lived profiles, which must be the briefing's once the whole history is before them."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

from schemas.api import BriefingRequest
from services.briefing import history, symptoms
from services.briefing.causes_calibrator import Lived, LivedProfiles
from services.briefing.embedding import MultilingualE5Embedder
from services.briefing.semantic import SemanticIndex
from services.briefing.service import BriefingService
from services.cli.client import OpsloreClient
from services.common.db import Database
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import raw_event
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration

# the tenant's own category names, none of them a class of the shipped classifier
INCIDENTS = [  # incident, category, what on-call saw, root cause
    ("INC-P1", "tls-expiry", "edge-proxy clients fail with x509: certificate has expired",
     "the edge certificate expired: its renewal job had been failing for weeks"),
    ("INC-P2", "tls-expiry", "partner API calls fail the TLS handshake: certificate not valid after yesterday",
     "the mTLS client certificate for the partner API expired"),
    ("INC-P3", "full-volume", "ledger-db writes fail with No space left on device on the WAL volume",
     "the WAL volume filled up: archiving had stopped and segments piled up"),
    ("INC-P4", "pool-starvation", "orders-api requests time out waiting for a database connection from the pool",
     "slow queries held every pooled database connection"),
]


def incident_events(incident: str, category: str, seen: str, cause: str) -> list[dict[str, Any]]:
    obs = uuid.uuid4()
    return [
        raw_event("incident.opened", incident, {"alert": {"name": f"Alert{incident}"}, "services": ["svc"],
                                                "environment": "prod"}, minute=0),
        raw_event("observation.recorded", incident, {"source": "logs", "summary": seen, "entities": ["svc"]},
                  minute=1, event_id=obs),
        raw_event("hypothesis.proposed", incident, {"hypothesis_id": "h1", "statement": cause,
                                                    "root_cause_category": category}, trust="model_inferred",
                  minute=2),
        raw_event("hypothesis.verified", incident, {"hypothesis_id": "h1", "evidence_refs": [str(obs)]}, minute=3),
        raw_event("incident.resolved", incident, {"root_cause": cause, "root_cause_category": category,
                                                  "summary": seen, "evidence_refs": [str(obs)]},
                  trust="user_stated", minute=4),
    ]


def learned(client: OpsloreClient) -> None:
    for incident, category, seen, cause in INCIDENTS:
        client.append(incident_events(incident, category, seen, cause))

        def pending(incident: str = incident) -> list[dict[str, Any]]:
            return client.candidates(incident_id=incident, state="pending")
        client.approve(str(eventually(pending)[0]["candidate_id"]))


def test_causes_reach_the_classifier_through_their_records(tenant_client: TenantFactory, settings: Settings) -> None:
    client = tenant_client()
    learned(client)
    tenant = getattr(client, "tenant")  # noqa: B009
    semantic = SemanticIndex(MultilingualE5Embedder())
    classifier = symptoms.shipped_classifier(semantic.model)
    assert classifier is not None
    db = Database(settings.database_url, max_size=2)
    db.open()
    try:
        def embedded() -> bool:
            with db.tenant_transaction(tenant) as cur:
                cur.execute("SELECT count(*) AS n FROM version_vectors WHERE model = %s", (semantic.model,))
                row = cur.fetchone()
                return row is not None and int(row["n"]) >= len(INCIDENTS)
        eventually(embedded, timeout=120.0)
        with db.tenant_transaction(tenant) as cur:
            got = history.read_profiles(cur, semantic.model, None, history.read(cur, None), classifier)
        assert set(got.profiles) == {"tls-expiry", "full-volume", "pool-starvation"}
        assert all(p.sum() == pytest.approx(1.0) for p in got.profiles.values())
        # each cause's records (the two expiries may be one family: a recurrence merges into it)
        assert all(got.members[c] for c in got.profiles) and len(got.members["full-volume"]) == 1
        top = {c: classifier.classes[int(p.argmax())] for c, p in got.profiles.items()}
        assert top["tls-expiry"] == "certificate_expired"
        assert top["full-volume"] == "disk_space_exhausted"

        text = "checkout calls to the payments gateway fail: certificate verify failed, expired"
        question = semantic.embed_question(text)
        assert question is not None
        concept = symptoms.concepts(classifier.ratios(question), got.profiles)
        assert max(concept, key=lambda c: concept[c]) == "tls-expiry" and concept["tls-expiry"] > 0
        assert concept["full-volume"] < 0
        # the question's own words (the analyzer's lexemes, as a briefing reads them) say the same, more surely
        words = BriefingService.lexemes(BriefingRequest(text=text))
        cert = classifier.classes.index("certificate_expired")
        vector_alone = classifier.question_probabilities(question)
        assert classifier.question_probabilities(question, words)[cert] > vector_alone[cert]
        worded = symptoms.concepts(classifier.ratios(question, words), got.profiles)
        assert max(worded, key=lambda c: worded[c]) == "tls-expiry" and worded["full-volume"] < 0

        other = getattr(tenant_client(), "tenant")  # noqa: B009
        with db.tenant_transaction(other) as cur:  # RLS: another tenant's profiles are empty
            assert history.read_profiles(cur, semantic.model, None, history.read(cur, None), classifier).profiles == {}

        service = BriefingService(db, settings, None, semantic)
        try:
            with db.tenant_transaction(tenant) as cur:
                lived = Lived.read(cur)
            walked = LivedProfiles.read(tenant, service, lived, classifier, 0)
            assert walked.at(0) == {}
            whole = walked.at(len(lived.rows))
            assert set(whole) == set(got.profiles)
            # a family of one version: the same vector either way; a recurrence merged into a family is, lived, each
            # version's own vector as it was, and to a briefing the current version's once per incident
            for cause in ("full-volume", "pool-starvation"):
                assert np.allclose(whole[cause], got.profiles[cause], atol=1e-6)
            assert classifier.classes[int(whole["tls-expiry"].argmax())] == "certificate_expired"
        finally:
            service.close()
    finally:
        db.close()
