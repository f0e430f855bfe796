"""The one builder and writer of the lexical search index of record versions (derived data).

`search_text` and `document` are pure: what a version is found by, and its lexemes. `write` stores
documents in `version_search` (lexemes verbatim, `array_to_tsvector`, so no database-side parser splits
`concept:db_pool_exhausted` or `db_pool_saturation`; the full-text terms are tenant-qualified,
`<tenant>/<lexeme>`, by the database's `opslore_search_terms`, so one GIN posting list holds one tenant's
versions: migration 0015) and keeps the BM25 statistics (`lexeme_stats`,
`search_corpus`) in step, all in the caller's transaction. Production writes, the benchmark loader and
the tests call these same functions. `corpus_stats` reads the statistics for a query's lexemes.

The statistics count every indexed version (superseded ones too): idf is a corpus statistic, and a
family's handful of versions barely moves it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from schemas.ledger import Trust
from schemas.memory import VersionContent
from services.common.db import Cursor
from services.lexicon.analyzer import AliasDictionary, analyze

ANALYZER = "lexicon/2"
UNTRUSTED = Trust.UNTRUSTED_TEXT


def search_text(c: VersionContent) -> str:
    """The text a version is found by. Untrusted evidence is never indexed: it cannot steer recall."""
    trusted_evidence = [e.summary for e in c.evidence if e.trust != UNTRUSTED]
    parts = [c.summary, c.canonical_content, c.root_cause or "", c.root_cause_category or "",
             c.alert_name or "", *c.services, *c.signals, *c.misleading_signals, *c.entities, *trusted_evidence]
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class SearchDocument:
    family_id: UUID
    version: int
    lexemes: tuple[str, ...]


def document(family_id: UUID, version: int, content: VersionContent,
             aliases: AliasDictionary | None = None) -> SearchDocument:
    return SearchDocument(family_id, version, tuple(analyze(search_text(content), aliases)))


_WRITE = """
WITH docs AS (
  SELECT f, v, CASE WHEN l = '' THEN '{}'::text[] ELSE string_to_array(l, ' ') END AS lexemes
  FROM unnest(%(families)s::uuid[], %(versions)s::int[], %(lexemes)s::text[]) AS d(f, v, l)),
ins AS (
  INSERT INTO version_search (tenant, family_id, version, analyzer, lexemes, doc_length, tsv)
  SELECT %(tenant)s, f, v, %(analyzer)s, lexemes, cardinality(lexemes),
         array_to_tsvector(opslore_search_terms(%(tenant)s, lexemes)) FROM docs
  ON CONFLICT DO NOTHING
  RETURNING lexemes, doc_length),
stats AS (
  INSERT INTO lexeme_stats (tenant, lexeme, df)
  SELECT %(tenant)s, x, count(*) FROM ins, unnest(ins.lexemes) AS x GROUP BY x ORDER BY x
  ON CONFLICT (tenant, lexeme) DO UPDATE SET df = lexeme_stats.df + EXCLUDED.df
  RETURNING 1)
INSERT INTO search_corpus (tenant, docs, total_length)
SELECT %(tenant)s, count(*), coalesce(sum(doc_length), 0) FROM ins HAVING count(*) > 0
ON CONFLICT (tenant) DO UPDATE SET docs = search_corpus.docs + EXCLUDED.docs,
                                   total_length = search_corpus.total_length + EXCLUDED.total_length
"""


def write(cur: psycopg.Cursor[Any], tenant: str, docs: Sequence[SearchDocument]) -> None:
    """Index `docs` (idempotent: a version already indexed is skipped and not counted again).
    Lexeme rows are upserted in sorted order, so concurrent writers in one tenant cannot deadlock."""
    if not docs:
        return
    cur.execute(_WRITE, {
        "tenant": tenant, "analyzer": ANALYZER, "families": [d.family_id for d in docs],
        "versions": [d.version for d in docs], "lexemes": [" ".join(d.lexemes) for d in docs],
    })


def clear(cur: Cursor) -> None:
    """Remove the index rows of the transaction's tenant (row-level security scopes the deletes), before
    a rebuild with the current analyzer. Versions are untouched: the index is derived from them."""
    for table in ("version_search", "lexeme_stats", "search_corpus"):
        cur.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))


@dataclass(frozen=True)
class CorpusStats:
    """BM25 statistics of a tenant's index, for the lexemes of one query."""

    docs: int
    avg_length: float
    df: dict[str, int]
    generation: int | None = None  # changes whenever the tenant's index is written (see `corpus_stats`)

    def idf(self, lexeme: str) -> float:
        """Okapi idf, floored at 0; a lexeme no indexed version has scores nothing."""
        n = self.df.get(lexeme, 0)
        if n == 0:
            return 0.0
        return math.log(1.0 + (self.docs - n + 0.5) / (n + 0.5))


EMPTY = CorpusStats(docs=0, avg_length=1.0, df={})


def corpus_stats(cur: Cursor, lexemes: Sequence[str]) -> CorpusStats:
    """The tenant's document count, mean length and the document frequency of `lexemes` (one query), and
    the index's generation: the transaction id that last wrote the tenant's `search_corpus` row, which every
    `write` that indexes a version and every `clear` replaces, so a version's indexed lexemes stay the same
    for as long as the generation does."""
    cur.execute("""SELECT c.docs, c.total_length, c.xmin::text::bigint AS generation,
                          (SELECT coalesce(jsonb_object_agg(s.lexeme, s.df), '{}') FROM lexeme_stats s
                            WHERE s.lexeme = ANY(%s)) AS df
                     FROM search_corpus c""", (list(lexemes),))
    row = cur.fetchone()
    if row is None or not row["docs"]:
        return EMPTY
    docs = int(row["docs"])
    return CorpusStats(docs=docs, avg_length=max(float(row["total_length"]) / docs, 1.0),
                       df={k: int(v) for k, v in row["df"].items()}, generation=int(row["generation"]))


def selective(stats: CorpusStats, lexemes: Sequence[str], max_share: float = 0.05, floor: int = 50,
              most: int = 6) -> list[str]:
    """Lexemes worth a full-text lookup: known to the index, in at most `max_share` of the versions
    (or `floor`, for small tenants), the `most` rarest first. A common lexeme matches too much to find
    anything; the ranker still scores it on the retrieved records."""
    limit = max(stats.docs * max_share, floor)
    known = [t for t in dict.fromkeys(lexemes) if 0 < stats.df.get(t, 0) <= limit]
    return sorted(known, key=lambda t: (stats.df[t], t))[:most]
