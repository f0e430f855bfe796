"""Tokenizer for Chinese and English incident text, and the domain alias dictionary.

`analyze(text)` returns the lexemes used both when a record version is indexed (`services.lexicon.index`)
and when a briefing is asked: lower-cased English words and their `_`/`-` parts, jieba-segmented
Chinese words, and `concept:<id>` tokens for every alias phrase found. Lexemes go into PostgreSQL as
they are (`array_to_tsvector`), so no database-side parser changes them.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jieba
import snowballstemmer
import yaml

CONCEPT_PREFIX = "concept:"
_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")
_CJK = re.compile(r"[\u3400-\u9fff]+")
_SAFE = re.compile(r"^[\w:.\-]+$")
STOPWORDS = frozenset((
    "a an and are as at be by for from in is it of on or that the this to was were with after before "
    "than then all any not no its into over under while when what which who how our we you they"
).split(" "))
_ZH_STOP = frozenset(["的", "了", "和", "是", "在", "有", "与", "及", "被", "把", "将", "后", "前", "中", "时",
                      "大量", "出现", "导致", "一个"])
_jieba_lock = threading.Lock()
_stemmer_local = threading.local()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """English stem of a purely alphabetic word ("connections" -> "connect"); other tokens unchanged.
    Memoised: the pure-Python stemmer costs a quarter of a millisecond per word."""
    if not word.isascii() or not word.isalpha():
        return word
    stemmer = getattr(_stemmer_local, "stemmer", None)
    if stemmer is None:
        stemmer = _stemmer_local.stemmer = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))


@dataclass(frozen=True)
class Concept:
    id: str
    category: str | None
    terms: tuple[str, ...]


class AliasDictionary:
    def __init__(self, concepts: list[Concept]) -> None:
        self.concepts = concepts
        self._terms: list[tuple[str, str, bool]] = []  # (normalized term, concept id, has cjk)
        for c in concepts:
            for t in c.terms:
                norm = normalize(t)
                self._terms.append((norm, c.id, bool(_CJK.search(norm))))
        self._terms.sort(key=lambda t: -len(t[0]))
        self._cjk_terms = [(t, cid) for t, cid, cjk in self._terms if cjk]
        latin = [(t, cid) for t, cid, cjk in self._terms if not cjk]
        self._latin_concept = dict(reversed(latin))  # first (longest) wins for a repeated term
        alternation = "|".join(re.escape(t) for t, _ in latin) or r"(?!x)x"
        self._latin_re = re.compile(rf"(?<![a-z0-9])(?:{alternation})(?![a-z0-9])")
        self.category_of = {c.id: c.category for c in concepts}

    def concepts_in(self, normalized_text: str) -> list[str]:
        return self.match(normalized_text)[0]

    def match(self, normalized_text: str) -> tuple[list[str], str]:
        """Concepts found, and the text with every matched phrase blanked out (so that a phrase counts
        once, as its concept, and its words do not count again). Longer phrases are matched first."""
        found: list[str] = []
        residual = normalized_text
        for term, cid in self._cjk_terms:
            if term in residual:
                residual = residual.replace(term, " ")
                if cid not in found:
                    found.append(cid)

        def consume(m: re.Match[str]) -> str:
            cid = self._latin_concept[m.group(0)]
            if cid not in found:
                found.append(cid)
            return " "

        residual = self._latin_re.sub(consume, residual)
        return found, residual.strip()

    def cjk_terms(self) -> list[str]:
        return [t for t, _, cjk in self._terms if cjk]


def normalize(text: str) -> str:
    text = text.lower().replace("，", " ").replace("。", " ").replace("、", " ")
    return re.sub(r"[\s\"'`()\[\]{}<>,;!?]+", " ", text).strip()


def load_aliases(extra_file: str | None = None) -> AliasDictionary:
    base = resources.files("services.lexicon") / "data" / "aliases.yaml"
    docs = [yaml.safe_load(base.read_text(encoding="utf-8"))]
    if extra_file:
        docs.append(yaml.safe_load(Path(extra_file).read_text(encoding="utf-8")))
    merged: dict[str, Concept] = {}
    for doc in docs:
        for cid, spec in (doc.get("concepts") or {}).items():
            prior = merged.get(cid)
            terms = tuple(dict.fromkeys((*(prior.terms if prior else ()), *map(str, spec.get("terms", [])))))
            merged[cid] = Concept(cid, spec.get("category") or (prior.category if prior else None), terms)
    return AliasDictionary(list(merged.values()))


@lru_cache(maxsize=1)
def default_aliases() -> AliasDictionary:
    """The shipped dictionary merged with the deployment's OPSLORE_ALIAS_FILE, if one is set."""
    from services.common.settings import get_settings

    aliases = load_aliases(get_settings().alias_file)
    _prime_jieba(aliases)
    return aliases


def warm() -> None:
    """Load jieba's dictionary and the aliases now, not on the first question (a server calls it at start)."""
    analyze("预热 warm-up")


def _prime_jieba(aliases: AliasDictionary) -> None:
    jieba.setLogLevel(logging.WARNING)
    with _jieba_lock:
        for term in aliases.cjk_terms():
            if " " not in term:
                jieba.add_word(term, freq=50000)


def _cjk_words(segment: str) -> list[str]:
    with _jieba_lock:
        words = jieba.lcut_for_search(segment)
    return [w for w in words if len(w) >= 2 and w not in _ZH_STOP]


def analyze(text: str, aliases: AliasDictionary | None = None) -> list[str]:
    """Lexemes of `text` in first-seen order, without duplicates."""
    aliases = aliases or default_aliases()
    normalized = normalize(text)
    concepts, residual = aliases.match(normalized)
    # identifiers such as `tls_handshake_errors` also name concepts; they stay lexemes themselves too
    spaced, _ = aliases.match(re.sub(r"[_\-]+", " ", normalized))
    concepts += [c for c in spaced if c not in concepts]
    tokens: list[str] = [CONCEPT_PREFIX + c for c in concepts]
    for word in _WORD.findall(residual):
        if word in STOPWORDS or len(word) < 2:
            continue
        tokens.append(stem(word))
        tokens.extend(stem(p) for p in re.split(r"[_.\-]", word) if len(p) >= 2 and p not in STOPWORDS)
    for segment in _CJK.findall(residual):
        tokens.extend(_cjk_words(segment))
    return [t for t in dict.fromkeys(tokens) if _SAFE.match(t)]


# Words almost every incident text has: they may match, but count for little (the ranker weighs them
# down). Stemmed like the analyzer's output.
_GENERIC_EN = (
    "error errors fail failed failing failure failures service services request requests latency high rate "
    "spike down outage timeout timeouts user users api server servers issue problem app application system "
    "systems site traffic return returned returning prod production cluster node nodes instance instances "
    "increase increased alert alarm start started stop stopped went became every all many some across "
    "customer customers time minutes hours global worldwide"
)
GENERIC_TERMS = frozenset([*(stem(w) for w in _GENERIC_EN.split()), "服务", "故障", "异常", "报错", "失败", "请求",
                           "用户", "系统", "无法", "全部", "不可", "可用", "不可用", "全面", "问题", "告警"])


def concepts_of(tokens: list[str]) -> list[str]:
    return [t[len(CONCEPT_PREFIX):] for t in tokens if t.startswith(CONCEPT_PREFIX)]
