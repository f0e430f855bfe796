"""The ranker is a pure function: the same question and records give bit-identical scores in every process.

A float sum depends on its order, and a frozenset of strings iterates in an order set by the process's string
hash seed (PYTHONHASHSEED), so summing the question's term weights in set order made the lexical channel differ
in its last bits between API workers (seen when comparing captured rankings across processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from services.briefing.rank import RankQuery, TermWeights
from services.lexicon.index import CorpusStats

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import uuid
from services.briefing.facts import RecordFacts
from services.briefing.rank import Evidence, RankQuery, TermWeights
from services.lexicon.index import CorpusStats
terms = [f"term{i}" for i in range(24)]
stats = CorpusStats(docs=100_003, avg_length=37.3, df={t: 3 + 7 * i * i for i, t in enumerate(terms)})
q = RankQuery(alert=None, services=frozenset(), signals=frozenset(), entities=frozenset(), tokens=frozenset(terms))
row = RecordFacts(family_id=uuid.UUID(int=1), version=1, memory_type="episodic", root_cause_category=None,
                  alert_name=None, services=(), signals=frozenset(), entities=frozenset(),
                  misleading_signals=frozenset(), lexemes=frozenset(terms), doc_length=41, confidence=0.7)
print(repr(Evidence.of(row, stats, TermWeights.of(q, stats), None).words))
"""


def _lexical_in_process(seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=ROOT, capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.strip()


def test_lexical_channel_is_bit_identical_across_hash_seeds() -> None:
    values = {_lexical_in_process(seed) for seed in (1, 2, 3, 4, 5, 6)}
    assert len(values) == 1, values
    assert float(values.pop()) > 0.0  # the BM25 mass itself (unbounded): what the text model reads


def test_term_weights_are_in_term_order() -> None:
    stats = CorpusStats(docs=1000, avg_length=10.0, df={"zeta": 5, "alpha": 50, "concept:x": 2})
    q = RankQuery(alert=None, services=frozenset(), signals=frozenset(), entities=frozenset(),
                  tokens=frozenset({"zeta", "alpha", "mid", "concept:x"}))
    weights = TermWeights.of(q, stats)
    assert [t for t, _ in weights.words] == ["alpha", "mid", "zeta"]
    assert [t for t, _ in weights.concepts] == ["concept:x"]
    assert dict(weights.words)["mid"] == 0.0  # no indexed version has it
    assert dict(weights.words)["zeta"] > dict(weights.words)["alpha"]  # rarer weighs more
