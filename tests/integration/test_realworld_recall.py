"""Real public postmortems through the running stack, on the dev split (the held-out sets are run by
`replay realworld --split test|fresh2|...|fresh9` once a design is frozen; see replay/realworld.py and
docs/evaluation.md). Dev is tuning data: the ranker, the causes model and the symptom classifier were fitted on it.

The history is learned through the gateway, projector, evidence gate and review into a fresh tenant, then the
dev questions are asked as briefings, in English and in Chinese, once for every test of this module."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from replay import realworld as rw
from replay.outcome import Asked, score
from services.briefing.causes import NEW, TenantHistory
from services.cli.client import OpsloreClient
from services.common.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dev(api: OpsloreClient, settings: Settings) -> dict[str, Any]:
    client = OpsloreClient(settings.api_url, api.create_key(f"rw-{uuid.uuid4().hex[:10]}", "reviewer", "default"))
    pms = rw.load()
    rw.learn_history(client, pms, lambda _: None)
    asked = rw.questions(pms, "dev")
    history = TenantHistory.of_sequence([pm.cls for pm in sorted(rw.history(pms), key=lambda p: (p.date, p.id))])
    e5_name, e5 = rw.embedding_baseline()
    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        ours = rw.opslore_rankings(client, asked, lang)
        causes = score("causes", [Asked.of_answer(pm.id, ours[pm.id].answer or {},
                                                  pm.cls if pm.cls in history.counts else NEW, lang) for pm in asked],
                       history)
        out[lang] = {"hints": rw.score("opslore", pms, asked, ours), "causes": causes,
                     "e5": rw.score(e5_name, pms, asked, rw.baseline_rankings(pms, asked, e5, lang))}
    return out


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_dev_the_causes_shorten_investigations_and_beat_the_base_rates(dev: dict[str, Any], lang: str) -> None:
    causes = dev[lang]["causes"]
    assert causes.checks_on <= causes.checks_off, causes.to_json()  # never slower than the base rates
    assert causes.brier_skill > 0, causes.to_json()  # the probabilities are worth sending
    assert causes.top1 >= causes.top1_base, causes.to_json()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_dev_hints_recall_at_least_what_e5_top_k_recalls(dev: dict[str, Any], lang: str) -> None:
    """Hints follow the evidence causes (v1.3); with the symptom classifier's concept (f5f4ba3) more causes are backed,
    and the hints recall at least what e5's top five recall. A regression check, not a held-out figure: the shipped
    classifier was trained on dev (the held-out first runs are fresh7-fresh9, docs/evaluation.md). Until f5f4ba3 this
    was a strict xfail: Recall@5 0.16 against e5's 0.39 (en) and 0.16 against 0.32 (zh). It was one again in Chinese
    from the fresh14-15 refit (8 of 31 against 10) and in English from the price of 3.5 (11 of 31 against 12), until
    the classifier read the question's lexemes beside its vector (2026-12-05): 15 of 31 against 12 (en), 13 of 31
    against 10 (zh), on a set the classifier was trained on. Across organisations the hints still recall less than
    e5's top five (docs/evaluation.md)."""
    ours, theirs = dev[lang]["hints"], dev[lang]["e5"]
    assert ours.recall_at_5 >= theirs.recall_at_5, (lang, ours.to_json(), theirs.to_json())
