"""The candidate function checks each version's validity window in every branch (migration 0019), against
the real PostgreSQL: a version outside its window is never a candidate and never takes one of a branch's
places from a version inside it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from schemas.api import BriefingRequest
from schemas.memory import ApprovalEdits
from tests.integration.governed import GovernedServices, draft, reviewer, seed_candidate

pytestmark = pytest.mark.integration


def approve(svc: GovernedServices, tenant: str, category: str, verified: datetime, until: datetime | None) -> str:
    d = draft(category, "render", signal="cpu_throttled", summary=f"render pods throttled: {category}")
    d = d.model_copy(update={"last_verified_at": verified})
    edits = ApprovalEdits(valid_until=until) if until else None
    return str(svc.review.approve(reviewer(tenant), seed_candidate(svc.db, tenant, d), note=None,
                                  edits=edits).family_id)


def candidates(svc: GovernedServices, tenant: str, limit: int, at: datetime) -> list[str]:
    with svc.db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT family_id::text AS f FROM opslore_briefing_matches("
                    "'{render}', '{}', NULL, '{}', NULL, %s, 200, %s, '{}')", (limit, at))
        return [r["f"] for r in cur.fetchall()]


def test_an_expired_version_takes_no_place_from_a_valid_one(svc: GovernedServices) -> None:
    tenant = f"cv-{uuid.uuid4().hex[:8]}"
    lasting = approve(svc, tenant, "cpu_limit", datetime(2026, 1, 1, tzinfo=UTC), None)
    expiring = approve(svc, tenant, "noisy_neighbour", datetime(2026, 2, 1, tzinfo=UTC),
                       datetime.now(UTC) + timedelta(hours=1))
    now = datetime.now(UTC)
    assert sorted(candidates(svc, tenant, 2, now)) == sorted([lasting, expiring])
    assert candidates(svc, tenant, 1, now) == [expiring]  # while valid, the more recent one comes first
    later = now + timedelta(hours=2)
    assert candidates(svc, tenant, 1, later) == [lasting]  # the expired one is more recent, yet not picked
    answer = svc.briefing.brief(reviewer(tenant), BriefingRequest(services=["render"], signals=["cpu_throttled"]),
                                now=later)
    assert expiring not in {str(h.family_id) for h in answer.hints}
    assert lasting in {str(h.family_id) for h in answer.hints}
