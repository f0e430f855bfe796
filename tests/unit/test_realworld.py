"""The real-postmortem corpus keeps its shape, and its scoring counts what it claims to."""

from __future__ import annotations

from collections import Counter

from replay import realworld as rw


def test_the_corpus_is_real_sourced_and_split_by_time() -> None:
    pms = rw.load()
    roles = Counter(pm.role for pm in pms)
    assert roles["history"] + roles["question"] >= 60 and roles["novel"] >= 10
    assert len({pm.cls for pm in pms if pm.role != "novel"}) >= 12
    assert sum(1 for pm in pms if pm.lang == "zh") >= 10
    assert all(pm.source.startswith(("http://", "https://")) for pm in pms)
    assert len({pm.id for pm in pms}) == len(pms)
    history_classes = {pm.cls for pm in pms if pm.role == "history"}
    for pm in pms:
        if pm.role == "question":
            older = [h.date for h in pms if h.role == "history" and h.cls == pm.cls]
            assert older and max(older) <= pm.date, pm.id  # history is older than every question
        if pm.role == "novel":
            assert pm.cls not in history_classes, pm.id


def test_questions_send_no_root_cause_and_no_class() -> None:
    for pm in rw.load():
        body = str(pm.request())
        assert pm.root_cause not in body and pm.cls not in body


def test_history_is_replayed_with_trusted_verified_evidence() -> None:
    inc = rw.history_incident(next(pm for pm in rw.load() if pm.role == "history"))
    types = [e.type for e in inc.events]
    assert types == ["incident.opened", "observation.recorded", "hypothesis.proposed", "hypothesis.verified",
                     "incident.resolved"]
    assert inc.events[1].trust == "trusted_tool" and inc.events[3].payload["evidence_refs"] == ["obs"]


def test_scores_count_the_first_hint_of_the_right_class() -> None:
    pms = [
        rw.Postmortem.model_validate({"id": i, "org": "o", "date": d, "source": "https://x", "class": c, "role": r,
                                      "alert": "A", "services": [], "signals": [], "symptoms": "s",
                                      "root_cause": "rc"})
        for i, d, c, r in [("H1", "2020-01-01", "a", "history"), ("H2", "2020-01-01", "b", "history"),
                           ("Q1", "2021-01-01", "a", "question"), ("Q2", "2021-01-01", "b", "question"),
                           ("N1", "2021-01-01", "z", "novel"), ("N2", "2021-01-01", "y", "novel")]
    ]
    rankings = {"Q1": rw.Ranking("Q1", [["H1"], ["H2"]]), "Q2": rw.Ranking("Q2", [["H1"], ["H2"]]),
                "N1": rw.Ranking("N1", []), "N2": rw.Ranking("N2", [["H2"]])}
    sc = rw.score("x", pms, rankings)
    assert (sc.recall_at_1, sc.recall_at_5, sc.mrr, sc.false_hint_rate) == (0.5, 1.0, 0.75, 0.5)
    bm25 = rw.SystemScore("bm25", 0.5, 1.0, 0.75, 1.0)
    assert rw.gate([sc, bm25]) == ["false-hint rate 0.500 is above 0.25"]
    assert rw.gate([rw.SystemScore("o", 0.5, 0.9, 0.6, 0.1), bm25]) == ["Recall@5 0.900 is below BM25's 1.000"]
