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


_ZH_BELOW_E5 = (
    "with the classifier and causes model refitted on fresh14-15 (2026-12-04, thirteenth session) the dev set's "
    "Chinese hints recall 8 of 31 (0.258) against e5 top-5's 10 (0.323); on fresh16, which that fit never saw, its "
    "hints recall more than the files before it in three conditions of four and as much in the fourth (0.155 / "
    "0.138 / 0.138 / 0.103 against 0.138 / 0.138 / 0.121 / 0.086) and its causes cost fewer checks in English "
    "(0.84x against 0.89x), so the refit ships and this stays a known miss, strict: a pass means something changed "
    "(docs/evaluation.md)")


_EN_BELOW_E5 = (
    "with the price of a longer investigation re-chosen on nine spent sets (3.0 -> 3.5 checks, 2026-12-05: the first "
    "runs of fresh19-21 made 12-16% of the English questions worse at 3.0), the dev set's English hints recall 11 of "
    "31 (0.355) against e5 top-5's 12 (0.387): one question's cause is no longer marked, so it sends no hint. The "
    "price trades that recall for fewer investigations made longer; a known miss, strict (docs/evaluation.md)")


@pytest.mark.parametrize("lang", [pytest.param("en", marks=pytest.mark.xfail(strict=True, reason=_EN_BELOW_E5)),
                                  pytest.param("zh", marks=pytest.mark.xfail(strict=True, reason=_ZH_BELOW_E5))])
def test_on_dev_hints_recall_at_least_what_e5_top_k_recalls(dev: dict[str, Any], lang: str) -> None:
    """Hints follow the evidence causes (v1.3); with the symptom classifier's concept (f5f4ba3) more causes are backed,
    and the hints recall at least what e5's top five recall. A regression check, not a held-out figure: the shipped
    classifier was trained on dev (the held-out first runs are fresh7-fresh9, docs/evaluation.md). Until f5f4ba3 this
    was a strict xfail: Recall@5 0.16 against e5's 0.39 (en) and 0.16 against 0.32 (zh). In Chinese it is one again
    since the fresh14-15 refit (`_ZH_BELOW_E5`), in English since the price rose to 3.5 (`_EN_BELOW_E5`); across
    organisations neither file set's hints reach e5's on fresh16 (0.09-0.16 against 0.34-0.40)."""
    ours, theirs = dev[lang]["hints"], dev[lang]["e5"]
    assert ours.recall_at_5 >= theirs.recall_at_5, (lang, ours.to_json(), theirs.to_json())
