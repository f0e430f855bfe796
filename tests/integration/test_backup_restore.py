"""Backup of a populated installation (fresh database and topic) and restore into another empty pair:
every governed table's checksum matches, the projection is rebuilt from the ledger, and a fixed set of
briefings answers the same hints. Real PostgreSQL and Kafka; the services run in this process."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from schemas.api import BriefingRequest
from services.briefing.service import BriefingService
from services.common.auth import Principal
from services.common.db import Database
from services.common.kafka import producer_factory
from services.common.settings import Settings
from services.gateway.keys import ApiKeyService
from services.gateway.service import LedgerGateway
from services.governance.service import GovernanceService
from services.memory.service import MemoryService
from services.operations.backup import GOVERNED_TABLES, RestoreError, backup, restore
from services.operations.catchup import project_until_caught_up
from services.review.service import ReviewService
from tests.factories import resolved_incident

pytestmark = pytest.mark.integration
BOOTSTRAP = Principal(key_id=None, tenant=None, project=None, role="admin", bootstrap=True)
QUESTIONS = [BriefingRequest(alert={"name": "HighErrorRate"}, services=["checkout-api"],
                             signals=["db_pool_saturation"]),
             BriefingRequest(text="payments pool exhausted by slow queries", services=["payments"]),
             BriefingRequest(text="dns nxdomain for the edge")]


def installation(settings: Settings, app_url: str, topic: str) -> Settings:
    name = urlsplit(app_url).path.lstrip("/")
    owner = settings.owner_database_url.rsplit("/", 1)[0] + f"/{name}"
    return settings.model_copy(update={"database_url": app_url, "owner_database_url": owner, "topic": topic,
                                       "topic_partitions": 3, "dlq_topic": f"{topic}-dlq",
                                       "consumer_group": f"restore-test-{uuid.uuid4().hex[:6]}"})


def populate(s: Settings) -> dict[str, list[dict[str, Any]]]:
    """Two tenants learn incidents through gateway, projector and review; agents ask; governance previews."""
    db = Database(s.database_url, max_size=4)
    db.open()
    gateway = LedgerGateway(producer_factory(s, "restore-test"), s.topic)
    memory = MemoryService(db)
    review, briefing = ReviewService(db, memory), BriefingService(db, s, gateway)
    keys = ApiKeyService(db, "")
    answers: dict[str, list[dict[str, Any]]] = {}
    try:
        for tenant in ("alpha", "beta"):
            who = keys.authenticate(keys.create(BOOTSTRAP, tenant, "default", "reviewer").key)
            for i, service in enumerate(("checkout-api", "payments")):
                gateway.append({"events": resolved_incident(f"INC-{tenant}-{i}", service=service)}, who)
        project_until_caught_up(s)
        for tenant in ("alpha", "beta"):
            who = keys.authenticate(keys.create(BOOTSTRAP, tenant, "default", "reviewer").key)
            for cand in review.list_candidates(who, "pending", None).candidates:
                review.approve(who, cand.candidate_id, note="ok", edits=None, resolution="new_family")
            answers[tenant] = [briefing.brief(who, q).model_dump(mode="json") for q in QUESTIONS]
            GovernanceService(db, s, memory, review).preview(who)
    finally:
        gateway.close()
        db.close()
    return answers


def hints_of(s: Settings) -> dict[str, list[list[tuple[str, int, float, str]]]]:
    db = Database(s.database_url, max_size=2)
    db.open()
    out = {}
    try:
        svc = BriefingService(db, s)
        for tenant in ("alpha", "beta"):
            who = Principal(key_id=uuid.uuid4(), tenant=tenant, project="default", role="agent")
            out[tenant] = [[(str(h.family_id), h.version, h.score, h.summary) for h in svc.brief(who, q).hints]
                           for q in QUESTIONS]
    finally:
        db.close()
    return out


def test_backup_then_restore_into_an_empty_installation(settings: Settings, fresh_database: Callable[[], str],
                                                        fresh_topic: Callable[..., str], tmp_path: Path) -> None:
    source = installation(settings, fresh_database(), fresh_topic(3))
    populate(source)
    before = hints_of(source)
    manifest = backup(source, tmp_path / "b")
    assert manifest["tenants"] == ["alpha", "beta"] and manifest["ledger_records"] == 20
    assert manifest["checksums"]["memory_families"]["alpha"]["rows"] == 2
    assert manifest["checksums"]["api_keys"]["rows"] == 4 and manifest["index"]["lexical_analyzer"]
    assert all(manifest["checksums"][t] for t in ("memory_versions", "memory_audit", "briefings",
                                                 "governance_proposals", "lineage_edges"))

    target = installation(settings, fresh_database(), fresh_topic(3))
    report = restore(target, tmp_path / "b", project=project_until_caught_up)
    assert report == {"ledger_records": 20, "tenants": 2, "tables_verified": len(GOVERNED_TABLES) + 1}
    assert hints_of(target) == before  # the same hints, versions and scores for the fixed questions
    with pytest.raises(RestoreError, match="API keys"):
        restore(target, tmp_path / "b", project=project_until_caught_up)  # never over existing data
