"""Fit the shipped causes model: the documented procedure behind `services/briefing/data/causes.json`.

The shipped model is what a tenant with little history answers with, and the centre of the prior every tenant's
own calibration shrinks towards (`services/briefing/causes.py`). It reads the real-incident corpus's history and
its tuning questions (`TUNING`: the ranker's, dev and the spent first fresh set, and fresh12-15); the test split, the
other fresh sets and the within-organisation sets are never seen.

1. The history of `replay/realworld` is learned into a fresh tenant of the live stack through the whole pipeline
   (as `replay realworld` does).
2. Lived questions, exactly as a tenant's own calibration gathers them (`CausesCalibrator.questions`, in process:
   the briefing's retrieval and ranking): every history record asked with its own symptoms against the records
   that happened before it, with the base rates of that earlier history; its cause, or NEW.
3. Tuning questions: every tuning incident asked (in its language and the other, with and without its alert and
   signals) against the whole history; its class, or NEW when the history has none of it.
   With the embedding, each question's concept (`symptoms`): the lived ones with the shipped symptom classifier
   (it never saw the history), the tuning ones with one fitted the same way without their split
   (`fold_classifiers`: the shipped one was trained on them, so theirs would be in sample).
4. `causes.fit` on both (with the embedding also once with the concept held at 0: `causes.WITHOUT_CONCEPT`, a
   young tenant's model), centred on the base rates (all weights 0 but identity's documented prior) with a weak
   prior (`PRECISION`; the identity weight held at `causes.IDENTITY_WEIGHT`), once with the embedding (the
   served model's key) and once without (`lexical`).
The report (written beside the models) gives the mean Brier score of the base rates, and of the fitted model on
the same questions (in sample: the fit's own data, not a held-out figure).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay import realworld as rw
from replay import symptom_fit
from replay.ranker_fit import TUNING as RANKER_TUNING
from schemas.api import BriefingRequest
from services.briefing import causes, history, symptoms
from services.briefing.causes import NEW, CausesModel, Question, TenantHistory
from services.briefing.causes_calibrator import CausesCalibrator, Lived, evaluate
from services.briefing.embedding import MultilingualE5Embedder
from services.briefing.rank import rank
from services.briefing.semantic import SemanticIndex, model_key
from services.briefing.service import BriefingService
from services.briefing.symptoms import SymptomClassifier, concepts, novel_concept
from services.cli.client import OpsloreClient
from services.common.auth import Principal
from services.common.db import Database
from services.common.settings import Settings

OUT = Path(__file__).resolve().parents[1] / "services" / "briefing" / "data" / "causes.json"
# fresh12 (spent 2026-12-04, never seen by the symptom classifier or `replay worse-cost`): on its first run the
# evidence was worth half its shipped weight (the likelihood of its answers peaked with every evidence term times
# 0.5-0.75, where on fresh11 it peaked at 1.0): a set whose symptoms say less, so the weights are fitted on it too
TUNING: tuple[rw.Split, ...] = (*RANKER_TUNING, "fresh12", "fresh13", "fresh14", "fresh15")  # 13-15: after first runs
PRECISION = 1.0
HELD = 1e9  # the precision that holds a weight at its centre (0)


def precisions() -> list[float]:
    """The shipped fit's prior precision per parameter: weak everywhere but on the identity weight, which the
    corpus cannot weigh (`causes.IDENTITY_WEIGHT`)."""
    return [causes.IDENTITY_PRECISION if f == "identity" else PRECISION for f in causes.FEATURES] + [PRECISION] * 3


def tuning_questions(service: BriefingService, tenant: str, pms: list[rw.Postmortem],
                     classifiers: dict[str, SymptomClassifier] | None = None) -> list[Question]:
    """The tuning incidents asked against the whole history (both languages, with and without alert/signals).
    `classifiers`: per tuning split, a symptom classifier that never saw it (the concept feature out of sample)."""
    principal = Principal(key_id=uuid.uuid4(), tenant=tenant, project="default", role="agent")
    now = datetime.now(UTC)
    with service.db.tenant_transaction(tenant) as cur:
        lived = Lived.read(cur)
        cause_history = history.read(cur, None)
        profiles = {split: history.read_profiles(cur, service.semantic.model, None, cause_history, clf)
                    for split, clf in (classifiers or {}).items() if service.semantic is not None}
    base = TenantHistory.of_sequence(lived.causes)
    out = []
    for split in TUNING:
        for pm in rw.questions(pms, split):
            for lang in ("en", "zh"):
                for text_only in (False, True):
                    req = BriefingRequest.model_validate(pm.request(lang, text_only))
                    with service.db.tenant_transaction(tenant) as cur:
                        found = service.retrieve(cur, principal, req, now, service.embed(req))
                    policy = service.policy(now, found.similarities is not None, threshold=0.0)
                    ranked = rank(found.query, found.rows, policy, 10, found.similarities, found.stats)
                    evidence = causes.gather(causes.candidate(lived.cause[str(s.facts.family_id)], s)
                                             for s in ranked.candidates if str(s.facts.family_id) in lived.cause)
                    if split in profiles and found.vector is not None and classifiers is not None:
                        clf = classifiers[split]
                        ratios = clf.ratios(found.vector, service.lexemes(req))
                        evidence = causes.with_concepts(evidence, concepts(ratios, profiles[split].profiles),
                                                        novel_concept(ratios, profiles[split].covered, clf.shares))
                    out.append(Question(base, evidence, cause=pm.cls if pm.cls in base.counts else NEW))
    return out


def fold_classifiers(pms: list[rw.Postmortem], embedder: MultilingualE5Embedder) -> dict[str, SymptomClassifier]:
    """Per tuning split, the symptom classifier fitted as the shipped one is (`replay/symptom_fit.py`) without it."""
    data = symptom_fit.embedded(pms, embedder)
    return {split: symptoms.of_json(symptom_fit.fit(data, model_key(embedder), symptom_fit.roles_of((split,))))
            for split in TUNING}


def shipped(model: CausesModel) -> dict[str, Any]:
    """A fitted model as `data/causes.json` holds it: without `worse_cost` and `max_evidence`, which `replay
    worse-cost` chooses apart (`data/worse_cost.json`; `CausesModel.from_json` reads a model without them at that
    price and cap)."""
    doc = model.to_json()
    doc.pop("worse_cost", None)
    doc.pop("max_evidence", None)
    return doc


def run(settings: Settings, progress: Callable[[str], None] = lambda _: None, out: Path = OUT,
        tenant: str | None = None) -> dict[str, Any]:
    pms = rw.load()
    admin = OpsloreClient(settings.api_url, settings.admin_token)
    fresh = tenant is None
    tenant = tenant or f"causes-fit-{uuid.uuid4().hex[:10]}"
    client = OpsloreClient(settings.api_url, admin.create_key(tenant, "reviewer", "default"))
    if fresh:
        rw.learn_history(client, pms, progress)
    db = Database(settings.database_url, max_size=2)
    db.open()
    models: dict[str, Any] = {}
    report: dict[str, Any] = {}
    try:
        embedder = MultilingualE5Embedder()
        semantic = SemanticIndex(embedder)
        folds = fold_classifiers(pms, embedder)
        progress("fold classifiers")
        for key, index in ((semantic.model, semantic), ("lexical", None)):
            service = BriefingService(db, settings, None, index)
            try:
                lived = CausesCalibrator(service).questions(tenant)[1]
                tuning = tuning_questions(service, tenant, pms, folds if index is not None else None)
            finally:
                service.close()
            questions = [*lived, *tuning]
            fitted = causes.fit(questions, CausesModel(), precision=precisions(), source="shipped")
            models[key] = shipped(fitted)
            if index is not None:  # a young tenant's: the same fit with the concept held at 0
                held = precisions()
                held[causes.FEATURES.index("concept")] = HELD
                held[-1] = HELD  # the novel outcome's concept weight
                plain = causes.fit(questions, CausesModel(), precision=held, source="shipped")
                models[key + causes.WITHOUT_CONCEPT] = shipped(plain)
            report[key] = {"lived": evaluate(lived, {"base_rates": CausesModel.base_rates(), "fitted": fitted}),
                           "tuning": evaluate(tuning, {"base_rates": CausesModel.base_rates(), "fitted": fitted})}
            progress(key)
    finally:
        db.close()
    doc = {"about": "fitted by replay/causes_fit.py (see its docstring for the procedure): the real-incident "
                    f"corpus's history (lived, time order) and its tuning questions ({', '.join(TUNING)}) only",
           "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"), "precision": precisions(),
           "models": models, "report": report}
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"tenant": tenant, "models": models, "report": report}
