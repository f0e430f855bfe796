"""Helpers for governed-store tests: in-process services over a fresh database, seeded candidates."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from schemas.memory import CandidateDraft, EvidenceRef
from services.briefing.semantic import SemanticIndex
from services.briefing.service import BriefingService
from services.common.auth import Principal
from services.common.db import Database
from services.common.settings import Settings
from services.governance.service import GovernanceService
from services.memory.service import MemoryService
from services.projector.policy import NewCandidate
from services.projector.store import _insert_candidate
from services.review.service import ReviewService


def reviewer(tenant: str, role: str = "reviewer") -> Principal:
    return Principal(key_id=uuid.uuid4(), tenant=tenant, project=None, role=role)


def draft(category: str, service: str, *, signal: str = "sig", trust: str = "trusted_tool",
          summary: str | None = None) -> CandidateDraft:
    ev = EvidenceRef(event_id=uuid.uuid4(), incident_id="INC", source="prometheus", summary=f"{signal} seen",
                     trust=trust, signals=[signal])
    return CandidateDraft(summary=summary or f"{category} on {service}", root_cause=f"{category} root cause",
                          root_cause_category=category, alert_name="Alert", services=[service], signals=[signal],
                          source_incidents=[f"INC-{uuid.uuid4().hex[:6]}"], evidence=[ev],
                          trust_mix={trust: 1}, confidence=0.7)


def seed_candidate(db: Database, tenant: str, d: CandidateDraft, project: str = "default") -> uuid.UUID:
    cid = uuid.uuid4()
    with db.tenant_transaction(tenant) as cur:
        _insert_candidate(cur, tenant, NewCandidate(cid, d.source_incidents[0], project,
                                                    datetime(2026, 1, 1, tzinfo=UTC), d))
    return cid


class GovernedServices:
    def __init__(self, db_url: str, semantic: SemanticIndex | None = None) -> None:
        self.db = Database(db_url, max_size=4)
        self.db.open()
        self.memory = MemoryService(self.db, semantic)
        self.review = ReviewService(self.db, self.memory)
        self.briefing = BriefingService(self.db, Settings(), semantic=semantic)
        self.governance = GovernanceService(self.db, Settings(), self.memory, self.review)

    def close(self) -> None:
        self.briefing.close()
        self.db.close()
