"""Baselines for the replay comparison: BM25 over raw incident texts, and plain embedding top-k.

Both see every incident's raw text (including untrusted text and lessons later retracted, superseded
or expired) because they have no governance; neither abstains unless nothing at all matches. That is
the point of the comparison: what a plain RAG setup over incident history would hand an agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import bm25s
import jieba

from replay.scenario import Scenario, ScenarioIncident
from services.briefing.embedding import Embedder, HashingNgramEmbedder, cosine_top_k

_WORDS = re.compile(r"[a-z0-9_\-]+")
_CJK = re.compile(r"[\u3400-\u9fff]+")


def plain_tokens(text: str) -> list[str]:
    """Lower-cased words and jieba-segmented Chinese; no stemming, no alias concepts."""
    text = text.lower()
    tokens = _WORDS.findall(text)
    for seg in _CJK.findall(text):
        tokens += [w for w in jieba.lcut(seg) if w.strip()]
    return tokens


def incident_text(inc: ScenarioIncident) -> str:
    parts: list[str] = []
    for e in inc.events:
        p = e.payload
        for key in ("title", "summary", "statement", "root_cause", "resolution", "action", "reason", "query"):
            if isinstance(p.get(key), str):
                parts.append(p[key])
        parts += [str(s) for s in p.get("signals", []) + p.get("services", [])]
        if isinstance(p.get("alert"), dict):
            parts.append(str(p["alert"].get("name", "")))
    return "\n".join(parts)


def query_text(request: dict[str, Any]) -> str:
    alert = request.get("alert") or {}
    return " ".join([request.get("text") or "", alert.get("name", ""), *request.get("services", []),
                     *request.get("signals", [])])


@dataclass
class Corpus:
    ids: list[str]
    texts: list[str]


def scenario_corpus(scenario: Scenario, tenant: str) -> Corpus:
    incs = [i for i in scenario.incidents if i.tenant == tenant]
    return Corpus([i.id for i in incs], [incident_text(i) for i in incs])


def bm25_rank(corpus: Corpus, request: dict[str, Any], k: int = 5) -> list[str]:
    if not corpus.ids:
        return []
    retriever = bm25s.BM25()
    retriever.index([plain_tokens(t) for t in corpus.texts], show_progress=False)
    scores = retriever.get_scores(plain_tokens(query_text(request)))
    order = sorted(range(len(corpus.ids)), key=lambda i: (-float(scores[i]), i))
    return [corpus.ids[i] for i in order[:k] if float(scores[i]) > 0]


EMBEDDER = HashingNgramEmbedder()


_DOC_VECTORS: dict[tuple[int, tuple[str, ...]], Any] = {}


def embedding_rank_with(embedder: Embedder, corpus: Corpus, request: dict[str, Any], k: int = 5) -> list[str]:
    if not corpus.ids:
        return []
    key = (id(embedder), tuple(corpus.texts))
    if key not in _DOC_VECTORS:  # a corpus is embedded once per embedder, not once per question
        _DOC_VECTORS[key] = embedder.embed(corpus.texts)
    docs = _DOC_VECTORS[key]
    query = embedder.embed_query(query_text(request))
    return [corpus.ids[i] for i, _ in cosine_top_k(query, docs, k)]


def embedding_rank(corpus: Corpus, request: dict[str, Any], k: int = 5) -> list[str]:
    return embedding_rank_with(EMBEDDER, corpus, request, k)
