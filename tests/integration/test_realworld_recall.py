"""Recall on real public postmortems, through the running stack, on the dev split (the test split is run by
`replay realworld --split test` once a design is frozen; see replay/realworld.py and the README).

The history is learned through the gateway, projector, evidence gate and review into a fresh tenant, then the
dev questions are asked as briefings, in English and in Chinese."""

from __future__ import annotations

import pytest

from replay import realworld as rw
from tests.conftest import TenantFactory

pytestmark = pytest.mark.integration

# learning 89 incidents through the pipeline (each approval embeds its record) and asking 88 questions twice


@pytest.mark.timeout(1500)
def test_on_dev_opslore_recalls_at_least_what_e5_top_k_recalls_in_both_languages(
        tenant_client: TenantFactory) -> None:
    client = tenant_client("reviewer")
    pms = rw.load()
    rw.learn_history(client, pms, lambda _: None)
    asked = rw.questions(pms, "dev")
    e5_name, e5 = rw.embedding_baseline()
    for lang in ("en", "zh"):
        ours = rw.score("opslore", pms, asked, rw.opslore_rankings(client, asked, lang))
        theirs = rw.score(e5_name, pms, asked, rw.baseline_rankings(pms, asked, e5, lang))
        assert ours.recall_at_5 >= theirs.recall_at_5, (lang, ours.to_json(), theirs.to_json())
        assert ours.checks_on < ours.checks_off, (lang, ours.to_json())  # memory helps the planner overall
