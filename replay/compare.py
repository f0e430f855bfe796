"""Compares opslore with two baselines on the same scenario corpus: Recall@1, Recall@5, false-hint rate.

Positive queries are those with `top1_cites`; negative queries are those with `no_hints` or
`not_cites`. A negative query counts as a false hint when the system returns any hint for a
`no_hints` query or a hint citing a `not_cites` incident. opslore's answers come from a live replay;
the baselines rank the same scenario's raw incident texts.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from replay.baselines import Corpus, bm25_rank, embedding_rank, scenario_corpus
from replay.runner import ScenarioResult
from replay.scenario import Query, Scenario

Ranker = Callable[[Corpus, dict[str, Any]], list[str]]


@dataclass
class Tally:
    positives: int = 0
    top1: int = 0
    top5: int = 0
    negatives: int = 0
    false_hints: int = 0

    def add(self, query: Query, ranked: list[list[str]]) -> None:
        exp = query.expect
        if exp.top1_cites:
            self.positives += 1
            self.top1 += bool(ranked) and exp.top1_cites in ranked[0]
            self.top5 += any(exp.top1_cites in cited for cited in ranked[:5])
        if exp.no_hints or exp.not_cites:
            self.negatives += 1
            bad = (exp.no_hints and bool(ranked)) or any(i in c for c in ranked for i in exp.not_cites)
            self.false_hints += bad

    def to_json(self) -> dict[str, Any]:
        return {"recall_at_1": round(self.top1 / self.positives, 4) if self.positives else None,
                "recall_at_5": round(self.top5 / self.positives, 4) if self.positives else None,
                "false_hint_rate": round(self.false_hints / self.negatives, 4) if self.negatives else None,
                "positive_queries": self.positives, "negative_queries": self.negatives}


@dataclass
class Comparison:
    systems: dict[str, Tally] = field(default_factory=lambda: {n: Tally() for n in ("opslore", "bm25", "embedding")})
    latencies_ms: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    def add(self, scenario: Scenario, result: ScenarioResult) -> None:
        baselines: dict[str, Ranker] = {"bm25": bm25_rank, "embedding": embedding_rank}
        for query, answer in zip(scenario.queries, result.answers, strict=False):
            self.systems["opslore"].add(query, [h["source_incidents"] for h in answer["answer"]["hints"]])
            self.latencies_ms.append(answer["ms"])
            self.tokens.append(answer["answer"]["token_estimate"])
            corpus = scenario_corpus(scenario, query.tenant)
            for name, rank in baselines.items():
                self.systems[name].add(query, [[i] for i in rank(corpus, query.request)])

    def to_json(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else None
        return {"systems": {k: v.to_json() for k, v in self.systems.items()},
                "briefing_latency_ms": {"p50": round(statistics.median(lat), 2) if lat else None,
                                        "p95": round(p95, 2) if p95 is not None else None, "n": len(lat),
                                        "measured": "client-side HTTP round trip on loopback"},
                "token_estimate": {"max": max(self.tokens, default=0),
                                   "mean": round(statistics.fmean(self.tokens), 1) if self.tokens else 0}}
