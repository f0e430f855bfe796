"""Recall on real public postmortems, through the running stack: the targets and the release gate.

The whole corpus is learned through the gateway, projector, evidence gate and review into a fresh
tenant, then every later incident is asked as a briefing (see replay/realworld.py).
"""

from __future__ import annotations

import pytest

from replay import realworld as rw
from tests.conftest import TenantFactory

pytestmark = pytest.mark.integration


def test_real_incidents_are_recalled_and_novel_ones_get_no_hint(tenant_client: TenantFactory) -> None:
    scores = rw.evaluate(tenant_client("reviewer"), rw.load())
    ours = scores[0]
    assert ours.recall_at_5 >= 0.70 and ours.recall_at_1 >= 0.40, ours.to_json()
    assert ours.false_hint_rate <= 0.25, ours.to_json()
    assert rw.gate(scores) == [], [s.to_json() for s in scores]
