"""SymptomClassifier: what many organisations' incidents say a question's symptoms point at. Pure.

A tenant's history is small (tens to hundreds of records over a dozen or more causes): its nearest records are a
weak vote on the cause of a new incident. The corpus of real incidents from many organisations is larger, and the
way symptoms point at causes carries across organisations (TLS handshake failures at a certificate, "no space left"
at a full disk). The shipped classifier (`data/symptoms.json`, fitted by `replay/symptom_fit.py`: a multinomial
logistic regression on the e5 vectors, over the corpus's root-cause classes) holds that knowledge as data.

A tenant's categories are its own words, not the corpus's classes, so the classifier reaches them through their
records: `profile` is a category's class distribution P(k | category), read from its records (their stored vectors:
symptoms, summary and root cause), and the `concept` of a category for a question is log sum_k ratio_k profile_k
(the likelihood ratio P(question | category) / P(question) through the classes), where ratio_k =
P(k | question) / share_k, the classifier's probability over the class's share of its training rows: how much
better than average the class explains what on-call sees. 0 means no information; a category the classifier
cannot tell apart from any other gets about 0. `causes` weighs it beside the records' relevance, with a weight
fitted like the others (shipped, then the tenant's own lived questions).

The profile is half the mean of the records' readings and half the posterior of one class given them all
(share_k prod_i P(k | record_i) / share_k, normalised: `profile_of`, `POSTERIOR_SHARE`). The mean alone blurs twice:
each record's reading already spreads over the classes the classifier confuses with its own, and the question's
ratios spread again. The posterior reads a category as the one class its records agree on, and sharpens as they
accumulate; the mean keeps a category that spans several classes from being read as one. Chosen in the eighteenth
session on the pool `replay worse-cost` chooses its price on (fresh7-9 and fresh16-21, 442 recurring questions, the
concept alone beside the base rates, its weight fitted per variant): log loss of the true category 2.578 (the mean)
-> 2.501 at a half share (English), 2.622 -> 2.575 (Chinese); the posterior alone 2.504 and 2.586, a quarter 2.517
and 2.581, three quarters 2.499 and 2.578; the true category among five 0.577 -> 0.606 and 0.536 -> 0.561.

Beside the vectors, the question's own words: `LexicalClassifier`, a second logistic regression over the corpus's
classes on the analyzer's lexemes (stems, jieba words and the alias dictionary's `concept:*` lexemes, which name one
concept in both languages), tf-idf weighted (sublinear tf, L2 norm, as scikit-learn's `TfidfVectorizer` computes
it), over the lexemes in at least `min_df` training rows. A question's class distribution is the geometric mix of the
two, P ~ P_vector^(1-w) P_lexemes^w with the shipped w: on the spent sets neither was fitted on (fresh16-23, 459
questions), it lowers the log loss of the true class from 2.865 to 2.807 (English) and 2.918 to 2.870 (Chinese) and
ranks it first 0.229 -> 0.235 and 0.211 -> 0.224 (`replay/symptom_fit.py` says how w, C and min_df were chosen).
A record's profile stays the vectors' alone: its stored vector is what each lived and served briefing reads.

The novel outcome has a concept too (`novel_concept`): the same log ratio over the classes the tenant's history
lacks, those no record of it is read as (its most probable class). Without it, a question about a kind of incident
the tenant never had could only lower every known cause's concept; with it, the classifier's reading that the
symptoms are of such a kind raises the novel outcome, at its own weight (`causes.CausesModel.novel_concept`).
(Coverage by the profiles themselves, each class's share less the base-rate-weighted profiles, said little when it
was tried: the mean profile of then, a mean of soft readings, reached about 1.04 times a covered class's share and
0.93 times an uncovered one's.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from numpy.typing import NDArray

RATIO_FLOOR = 1e-6  # a concept is never log 0: a category whose records no class explains at all says nothing
READING_FLOOR = 1e-12  # a record's reading of a class, in a profile's posterior: one record never rules a class out
POSTERIOR_SHARE = 0.5  # a profile's share that is the posterior of one class given the records (module docstring)


@dataclass(frozen=True, eq=False)
class LexicalClassifier:
    """P(class | the question's lexemes): multinomial logistic regression on tf-idf weighted lexemes (module
    docstring); `weight` is its share of the geometric mix with the vector classifier."""

    index: Mapping[str, int]  # lexeme -> column
    idf: NDArray[np.float64]
    coef: NDArray[np.float64]  # classes x lexemes
    intercept: NDArray[np.float64]
    weight: float

    def log_probabilities(self, lexemes: Iterable[str]) -> NDArray[np.float64] | None:
        """log P(class | lexemes), or None when no lexeme of the question is in the vocabulary (nothing to say:
        the vectors answer alone)."""
        counts: dict[int, int] = {}
        for lexeme in lexemes:
            if (column := self.index.get(lexeme)) is not None:
                counts[column] = counts.get(column, 0) + 1
        if not counts:
            return None
        columns = np.fromiter(counts, dtype=np.int64, count=len(counts))
        x = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * self.idf[columns]
        x /= np.linalg.norm(x)
        z = self.coef[:, columns] @ x + self.intercept
        z -= z.max()
        return np.asarray(z - math.log(float(np.exp(z).sum())))


@dataclass(frozen=True, eq=False)
class SymptomClassifier:
    """The shipped classifier for one embedding model (`embedding`, the semantic index's model key)."""

    embedding: str
    classes: tuple[str, ...]
    shares: NDArray[np.float64]  # each class's share of the training rows
    coef: NDArray[np.float64]  # classes x dims
    intercept: NDArray[np.float64]
    lexical: LexicalClassifier | None = None

    def probabilities(self, vectors: NDArray[np.float32]) -> NDArray[np.float64]:
        """P(class | vector) per row of `vectors` (one vector: one row)."""
        z = np.atleast_2d(np.asarray(vectors, dtype=np.float64)) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return np.asarray(p / p.sum(axis=1, keepdims=True))

    def question_probabilities(self, question: NDArray[np.float32],
                               lexemes: Iterable[str] = ()) -> NDArray[np.float64]:
        """P(class | question): its vector's, mixed with its lexemes' when the classifier has a lexical part and
        the question a known lexeme (module docstring)."""
        p: NDArray[np.float64] = self.probabilities(question)[0]
        lexical = self.lexical
        words = None if lexical is None else lexical.log_probabilities(lexemes)
        if lexical is None or words is None:
            return p
        w = lexical.weight
        z = (1.0 - w) * np.log(np.maximum(p, 1e-300)) + w * words
        z -= z.max()
        mixed = np.exp(z)
        return np.asarray(mixed / mixed.sum())

    def ratios(self, question: NDArray[np.float32], lexemes: Iterable[str] = ()) -> NDArray[np.float64]:
        """P(class | question) / the class's training share, per class (`question_probabilities`)."""
        return np.asarray(self.question_probabilities(question, lexemes) / self.shares)

    def covered(self, probabilities: NDArray[np.float64]) -> NDArray[np.bool_]:
        """`covered` over this classifier's classes."""
        return covered(probabilities, len(self.classes))

    def profiles(self, members: Iterable[tuple[str, NDArray[np.float32]]]) -> dict[str, NDArray[np.float64]]:
        """`profile` per category of (category, record vector) pairs (a record of several incidents counts once per
        incident when it is listed once per incident)."""
        pairs = list(members)
        if not pairs:
            return {}
        return profiles_of([c for c, _ in pairs], self.probabilities(np.stack([v for _, v in pairs])), self.shares)


def covered(readings: NDArray[np.float64], classes: int) -> NDArray[np.bool_]:
    """The classes some record is read as (the most probable class of a row of `readings`, one row per record, over
    `classes` classes): what the tenant's history has seen, for `novel_concept`."""
    out = np.zeros(classes, dtype=bool)
    if len(readings):
        out[np.asarray(readings).argmax(axis=1)] = True
    return out


def profile_of(readings: NDArray[np.float64], shares: NDArray[np.float64]) -> NDArray[np.float64]:
    """A category's class distribution from its records' class distributions (`readings`, one row per record; module
    docstring): `POSTERIOR_SHARE` of the posterior of one class given them all, the rest their mean."""
    mean = np.asarray(readings.mean(axis=0))
    z = np.log(shares) + (np.log(np.maximum(readings, READING_FLOOR)) - np.log(shares)).sum(axis=0)
    z -= z.max()
    posterior = np.exp(z)
    posterior /= posterior.sum()
    return np.asarray((1.0 - POSTERIOR_SHARE) * mean + POSTERIOR_SHARE * posterior)


def profiles_of(categories: Sequence[str], readings: NDArray[np.float64],
                shares: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Each category's profile (`profile_of`) from its records' class distributions (`readings`, one row per entry
    of `categories`)."""
    rows: dict[str, list[int]] = {}
    for i, category in enumerate(categories):
        rows.setdefault(category, []).append(i)
    return {c: profile_of(readings[i], shares) for c, i in rows.items()}


def concepts(ratios: NDArray[np.float64], profiles: Mapping[str, NDArray[np.float64]]) -> dict[str, float]:
    """The concept of each category for a question (module docstring): log (ratios . its profile)."""
    return {c: math.log(max(float(ratios @ p), RATIO_FLOOR)) for c, p in profiles.items()}


def novel_concept(ratios: NDArray[np.float64], covered: NDArray[np.bool_], shares: NDArray[np.float64]
                  ) -> float | None:
    """The concept of a cause the tenant has not seen (module docstring): log sum_k ratio_k u_k over the classes no
    record of the tenant's history is read as (`covered`: `SymptomClassifier.covered`), u_k their training shares,
    normalised. A question the classifier reads as such a class gets a high one. None when the history covers every
    class or has no record (nothing to tell a new kind of incident from)."""
    if not covered.any():
        return None
    lacking = np.where(covered, 0.0, shares)
    mass = float(lacking.sum())
    if mass <= 1e-9:
        return None
    return math.log(max(float(ratios @ lacking) / mass, RATIO_FLOOR))


def of_json(doc: Mapping[str, object]) -> SymptomClassifier:
    classes = tuple(str(c) for c in doc["classes"])  # type: ignore[attr-defined]
    coef = np.asarray(doc["coef"], dtype=np.float64)
    intercept = np.asarray(doc["intercept"], dtype=np.float64)
    shares = np.asarray(doc["shares"], dtype=np.float64)
    if coef.shape[0] != len(classes) or intercept.shape != (len(classes),) or shares.shape != (len(classes),):
        raise ValueError("symptom classifier: classes, coef, intercept and shares disagree")
    lexical = doc.get("lexical")
    return SymptomClassifier(str(doc["embedding"]), classes, shares, coef, intercept,
                             None if lexical is None else _lexical_of_json(lexical, len(classes)))  # type: ignore[arg-type]


def _lexical_of_json(doc: Mapping[str, object], classes: int) -> LexicalClassifier:
    """The lexical part: `lexemes` (column order), `idf`, `coef` as integers in units of `scale` (rows per class),
    `intercept`, `weight`."""
    lexemes = [str(t) for t in doc["lexemes"]]  # type: ignore[attr-defined]
    idf = np.asarray(doc["idf"], dtype=np.float64)
    coef = np.asarray(doc["coef"], dtype=np.float64) * float(doc["scale"])  # type: ignore[arg-type]
    intercept = np.asarray(doc["intercept"], dtype=np.float64)
    if coef.shape != (classes, len(lexemes)) or idf.shape != (len(lexemes),) or intercept.shape != (classes,):
        raise ValueError("symptom classifier: the lexical part's lexemes, idf, coef and intercept disagree")
    weight = float(doc["weight"])  # type: ignore[arg-type]
    if not 0.0 <= weight <= 1.0:
        raise ValueError("symptom classifier: the lexical weight is not in [0, 1]")
    return LexicalClassifier({t: i for i, t in enumerate(lexemes)}, idf, coef, intercept, weight)


@cache
def shipped_classifiers() -> dict[str, SymptomClassifier]:
    """The shipped classifiers by embedding model key (one today: the served e5)."""
    path = resources.files("services.briefing") / "data" / "symptoms.json"
    if not path.is_file():
        return {}
    model = of_json(json.loads(path.read_text(encoding="utf-8")))
    return {model.embedding: model}


def shipped_classifier(embedding: str | None) -> SymptomClassifier | None:
    """The classifier for vectors of `embedding` (the semantic index's model key); None without one (lexical
    answers, another embedder): the causes then have no concept evidence."""
    return None if embedding is None else shipped_classifiers().get(embedding)
