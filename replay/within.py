"""Within one organisation: its own published incidents in time order, the way a team lives them.

`replay/realworld/within/split.yaml` froze each organisation's history (its first 55% by date) and the incidents
asked after it (`freeze`, once per organisation, before anything is asked). GitLab is the within-organisation dev
set; Google Cloud was held out until its first run (design a9acf73) and design choices have looked at it since;
Slack, Fly.io, Microsoft Azure and Heroku were frozen on 2026-12-02 and asked once (design 981559b): their first run
is spent too (docs/evaluation.md). CircleCI and the Wikimedia Foundation (the third generation) were frozen on
2026-12-03 and asked once, with design 1953859 (the young tenant's evidence floor). Two runs per organisation:

static      the history learned into a fresh tenant through the whole pipeline, then every later incident asked
            (in English, and again with its symptoms in Chinese): the causes' outcome (`replay/outcome.py`:
            the planner's checks against the base rates, Brier skill, top cause, novelty AUC), the hints' Recall@5
            against BM25, e5 top-5 and the base rates' top five classes, and e5 top-1's class.
sequential  the first 40% learned, then each later incident asked, then learned (approved) in turn, optionally
            with feedback on its briefing (adopted on the first hint of the true class, refuted on a wrong first
            hint), the tenant's causes calibrated every `CALIBRATE_EVERY` incidents as briefings would start it:
            checks against the base rates known at that point and Brier skill, per third of the sequence.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from replay import realworld as rw
from replay.outcome import Asked, OutcomeScore, reliability_png, score, score_each
from replay.runner import learn_incident
from services.briefing.causes import NEW, TenantHistory
from services.cli.client import OpsloreClient

ROOT = Path(__file__).parent / "realworld" / "within"
SPLIT = ROOT / "split.yaml"
WARMUP_SHARE = 0.4
CALIBRATE_EVERY = 10


def frozen() -> dict[str, Any]:
    return dict(yaml.safe_load(SPLIT.read_text(encoding="utf-8")))


def incidents(files: list[str]) -> list[rw.Postmortem]:
    """The incidents of these files under `ROOT`, as written."""
    pms: list[rw.Postmortem] = []
    for name in files:
        doc = yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))
        pms += [rw.Postmortem.model_validate(i) for i in doc["incidents"]]
    return pms


def freeze(org: str, files: list[str], role: str, about: str, path: Path = SPLIT) -> dict[str, Any]:
    """Freeze one organisation's history into the split file, once, before anything is asked of it: its incidents
    in time order (date, id), the split's `history_share` its history, the rest asked. The entry is appended, so the
    split's earlier bytes stay as they were frozen."""
    split = dict(yaml.safe_load(path.read_text(encoding="utf-8")))
    if org in split["orgs"]:
        raise ValueError(f"{org} is frozen already")
    ids = [pm.id for pm in sorted(incidents(files), key=lambda p: (p.date, p.id))]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{org}: duplicate incident ids")
    n = round(len(ids) * float(split["history_share"]))
    entry = {"role": role, "about": about, "files": files, "incidents": len(ids), "history": n,
             "ids_sha256": hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16],
             "history_ids": ids[:n], "asked_ids": ids[n:]}
    text = yaml.safe_dump({org: entry}, allow_unicode=True, sort_keys=False, width=120)
    with path.open("a", encoding="utf-8") as out:
        out.write("".join(f"  {line}\n" for line in text.splitlines()))
    return entry


def load(org: str) -> tuple[list[rw.Postmortem], int]:
    """The organisation's incidents in time order with their frozen roles, and how many are history."""
    spec = frozen()["orgs"][org]
    by_id = {pm.id: pm for pm in incidents(spec["files"])}
    ordered = [by_id[i] for i in [*spec["history_ids"], *spec["asked_ids"]]]
    seen = {pm.cls for pm in ordered[:spec["history"]]}
    later: list[rw.Role] = ["test" if pm.cls in seen else "test_novel" for pm in ordered[spec["history"]:]]
    first: list[rw.Role] = ["history" for _ in range(spec["history"])]
    roles = [*first, *later]
    return [pm.model_copy(update={"role": r}) for pm, r in zip(ordered, roles, strict=True)], int(spec["history"])


def _tenant(admin: OpsloreClient, api_url: str, label: str) -> OpsloreClient:
    return OpsloreClient(api_url, admin.create_key(f"within-{label}-{uuid.uuid4().hex[:8]}", "reviewer", "default"))


def static(admin: OpsloreClient, api_url: str, org: str, progress: Callable[[str], None] = lambda _: None
           ) -> dict[str, Any]:
    pms, n = load(org)
    client = _tenant(admin, api_url, org)
    rw.learn_history(client, pms, progress)
    history = TenantHistory.of_sequence([pm.cls for pm in pms[:n]])
    asked = pms[n:]
    emb_name, emb_rank = rw.embedding_baseline()
    out: dict[str, Any] = {"org": org, "history": n, "asked": len(asked),
                           "novel": sum(1 for pm in asked if pm.role == "test_novel")}
    reliability: dict[str, list[tuple[float, int]]] = {}
    for lang in ("en", "zh"):
        answers = {pm.id: client.briefing(pm.request(lang)) for pm in asked}
        outcome = score("opslore causes", [
            Asked.of_answer(pm.id, answers[pm.id], pm.cls if pm.cls in history.counts else NEW, lang)
            for pm in asked], history)
        hints = {pm.id: rw.Ranking(pm.id, [list(h["source_incidents"]) for h in answers[pm.id]["hints"]],
                                   [h.get("root_cause_category") for h in answers[pm.id]["hints"]]) for pm in asked}
        systems = [rw.score("opslore hints", pms, asked, hints)]
        e5 = rw.baseline_rankings(pms, asked, emb_rank, lang)
        systems += [rw.score(emb_name, pms, asked, e5),
                    rw.score("BM25", pms, asked, rw.baseline_rankings(pms, asked, rw._bm25, lang))]
        recurring = [pm for pm in asked if pm.role == "test"]
        e5_top1 = sum(1 for pm in recurring if e5[pm.id].classes[:1] == [pm.cls])
        out[lang] = {"outcome": outcome.to_json(), "recall": [{"system": s.name, **s.to_json()} for s in systems],
                     "e5_top1_class": e5_top1, "recurrences": len(recurring)}
        reliability[f"{org} {lang}"] = outcome.reliability
        progress(f"{org} {lang}")
    out["reliability"] = reliability
    return out


def sequential(admin: OpsloreClient, api_url: str, org: str, feedback: bool,
               progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Asked, then learned, in time order after a warm-up; per third of the asked sequence."""
    pms, _ = load(org)
    pms = [pm.model_copy(update={"role": "history"}) for pm in pms]
    warm = round(len(pms) * WARMUP_SHARE)
    client = _tenant(admin, api_url, f"{org}-seq")
    sc = rw.scenario(pms)
    incidents = {i.id: i for i in sc.incidents}
    for pm in pms[:warm]:
        learn_incident(sc, incidents[pm.id], client)
    client.calibrate_causes()
    lived: list[tuple[Asked, TenantHistory]] = []
    for i, pm in enumerate(pms[warm:], start=1):
        history = TenantHistory.of_sequence([p.cls for p in pms[:warm + i - 1]])
        answer = client.briefing(pm.request("en"))
        truth = pm.cls if pm.cls in history.counts else NEW
        lived.append((Asked.of_answer(pm.id, answer, truth, "en"), history))
        learn_incident(sc, incidents[pm.id], client)
        if feedback and answer["hints"]:
            first = answer["hints"][0]
            right = next((h for h in answer["hints"] if h.get("root_cause_category") == pm.cls), None)
            if right is not None:
                client.feedback(answer["briefing_id"], right["family_id"], "adopted", pm.id)
            elif first.get("root_cause_category") != pm.cls:
                client.feedback(answer["briefing_id"], first["family_id"], "refuted", pm.id)
        if i % CALIBRATE_EVERY == 0:
            client.calibrate_causes()
        progress(pm.id)
    third = max(len(lived) // 3, 1)
    parts = {"first": lived[:third], "second": lived[third:2 * third], "last": lived[2 * third:]}
    scores: dict[str, OutcomeScore] = {k: score_each(k, v) for k, v in parts.items()}
    return {"org": org, "feedback": feedback, "warmup": warm, "asked": len(lived),
            "thirds": {k: s.to_json() for k, s in scores.items()},
            "all": score_each("all", lived).to_json()}


def report(admin: OpsloreClient, api_url: str, orgs: list[str], png_dir: Path,
           progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    out: dict[str, Any] = {"split": {o: frozen()["orgs"][o]["role"] for o in orgs}, "static": {}, "sequential": {}}
    for org in orgs:
        result = static(admin, api_url, org, progress)
        reliability = result.pop("reliability")
        png = reliability_png(reliability, png_dir / f"reliability-within-{org}.png",
                              f"causes, within {org} (history {result['history']}, asked {result['asked']})")
        result["reliability_png"] = str(png) if png else None
        out["static"][org] = result
        out["sequential"][org] = {str(fb): sequential(admin, api_url, org, fb, progress) for fb in (False, True)}
    return out
