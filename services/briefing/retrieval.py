"""Candidate generation for briefings: hard filters, then exact and full-text matches, in SQL.

Hard filters (never relaxed): the caller's tenant (RLS) and project, family and version both active,
inside the validity window. Applicability filtering and scoring happen in Python (`rank`).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from psycopg import sql

from schemas.api import BriefingRequest
from services.briefing.cache import FactsKey, VersionCache, VersionKey
from services.briefing.facts import RecordFacts
from services.common.db import Cursor, Row
from services.lexicon.index import CorpusStats, selective

# Per branch (ordered by recency or text rank); the union feeds the Python ranker. 30, not 60: at 100k versions
# in the tenant the top hint was the same for all 300 bench questions and the answers' family sets had a
# Jaccard of 0.95, while the briefing took 22 instead of 32 ms (p50); on the real-incident corpus no branch
# reaches 30, so its figures cannot move.
BRANCH_LIMIT = 30
TEXT_MATCH_CAP = 200  # full-text matches ranked per request, before any of their versions is read
TEXT_MATCH_BUDGET = 2 * TEXT_MATCH_CAP  # postings the text branch's match reads, as document frequencies add up

# The keys of the matching records come from the SECURITY DEFINER function `opslore_briefing_matches`
# (schemas/sql/opslore_briefing_matches.sql: index-driven branches scoped to the transaction's tenant, each version
# inside its validity window; see there for why); the
# family is checked here, under RLS: the version is its current one and the family is active. This read returns
# keys and the feedback counts only; what a version says is immutable and comes from the `VersionCache`, or
# from `_FACTS` (under RLS) for the versions it does not hold yet.
_PICK = """
SELECT p.family_id, p.version, coalesce(fb.adopted, 0) AS adopted, coalesce(fb.refuted, 0) AS refuted
FROM opslore_briefing_matches(p_services => %(services)s, p_signals => %(signals)s, p_alert => %(alert)s,
                              p_lexemes => %(match)s::text[], p_project => %(project)s, p_limit => %(limit)s,
                              p_text_cap => %(text_cap)s, p_now => %(now)s, p_rank_lexemes => %(lexemes)s::text[]) p
JOIN LATERAL (SELECT 1 FROM memory_families f  -- per picked row, by primary key: never a scan of the families
              WHERE f.family_id = p.family_id AND f.current_version = p.version AND f.state = 'active'
              LIMIT 1) f ON true
LEFT JOIN family_feedback fb ON fb.family_id = p.family_id
"""

# The semantic branch's versions (nearest to the question in the process's vector index, any state): kept only
# while the version is its family's current one, active and inside its validity window, in the caller's project;
# under RLS, by primary key, like the pick above.
_CURRENT = """
SELECT k.family_id, k.version, coalesce(fb.adopted, 0) AS adopted, coalesce(fb.refuted, 0) AS refuted
FROM unnest(%(families)s::uuid[], %(versions)s::int[]) k(family_id, version)
JOIN LATERAL (SELECT 1 FROM memory_families f
              WHERE f.family_id = k.family_id AND f.current_version = k.version AND f.state = 'active'
              LIMIT 1) f ON true
JOIN LATERAL (SELECT 1 FROM memory_versions v
              WHERE v.family_id = k.family_id AND v.version = k.version AND v.state = 'active'
                AND (%(project)s::text IS NULL OR v.project = %(project)s)
                AND v.valid_from <= %(now)s AND (v.valid_until IS NULL OR v.valid_until > %(now)s)
              LIMIT 1) v ON true
LEFT JOIN family_feedback fb ON fb.family_id = k.family_id
"""

_FACTS = """
SELECT v.family_id, v.version, v.memory_type, v.alert_name, v.services, v.signals, v.entities,
       v.confidence, v.environment, v.cluster, v.version_range, v.topology_fingerprint,
       v.applicability_restricted, v.last_verified_at, v.observed_at, v.root_cause_category,
       v.misleading_signals, s.doc_length, s.lexemes,
       coalesce((v.trust_mix->>'untrusted_text')::int, 0) > 0 AS untrusted_evidence, v.imported
FROM unnest(%s::uuid[], %s::int[]) k(family_id, version)
JOIN memory_versions v ON v.family_id = k.family_id AND v.version = k.version
LEFT JOIN version_search s ON s.family_id = v.family_id AND s.version = v.version
"""


def fetch_candidates(cur: Cursor, req: BriefingRequest, tokens: list[str], project: str | None,
                     now: datetime, stats: CorpusStats, cache: VersionCache) -> list[RecordFacts]:
    """Bounded, index-driven branches (same service; same signals under the same alert; a requested
    signal marked misleading; full text over the selective lexemes), unioned and checked under RLS, then
    each version's facts with its lexemes (the ranker's BM25 intersects them with the question's), cached
    under the tenant's index generation (`CorpusStats.generation`: a reindex reads them again)."""
    lexemes = selective(stats, tokens)
    cur.execute(_PICK, {
        "match": text_match_lexemes(stats, lexemes), "lexemes": lexemes, "now": now, "project": project,
        "alert": req.alert.name if req.alert else None, "services": req.services,
        "signals": req.signals, "limit": BRANCH_LIMIT, "text_cap": TEXT_MATCH_CAP,
    })
    return _facts_of(cur, cur.fetchall(), stats, cache)


def fetch_current(cur: Cursor, keys: list[VersionKey], project: str | None, now: datetime, stats: CorpusStats,
                  cache: VersionCache) -> list[RecordFacts]:
    """The facts of those of `keys` (the semantic branch's nearest versions) that a briefing may cite now."""
    if not keys:
        return []
    cur.execute(_CURRENT, {"families": [k[0] for k in keys], "versions": [k[1] for k in keys],
                           "project": project, "now": now})
    return _facts_of(cur, cur.fetchall(), stats, cache)


def _facts_of(cur: Cursor, rows: list[Row], stats: CorpusStats, cache: VersionCache) -> list[RecordFacts]:
    picked = [((r["family_id"], r["version"], stats.generation), r) for r in rows]
    known, missing = cache.facts(key for key, _ in picked)
    if missing:
        known.update(_read_facts(cur, missing))
        cache.store_facts({k: known[k] for k in missing if k in known})
    return [_with_feedback(known[key], row) for key, row in picked if key in known]


def text_match_lexemes(stats: CorpusStats, lexemes: list[str], budget: int = TEXT_MATCH_BUDGET) -> list[str]:
    """The rarest of `lexemes` (given rarest first) whose document frequencies together reach `budget`: the
    text branch matches on these and ranks its matches on all of `lexemes` (migration 0020). It ranks at most
    TEXT_MATCH_CAP matches, so a commoner lexeme's postings would only crowd out versions with the rarer,
    more telling words; in a small tenant no prefix reaches the budget and every lexeme is matched."""
    out: list[str] = []
    total = 0
    for t in lexemes:
        if total >= budget:
            break
        out.append(t)
        total += stats.df.get(t, 0)
    return out


def version_facts(cur: Cursor, keys: list[VersionKey]) -> list[RecordFacts]:
    """The facts of any versions (current or not), by primary key under RLS: what a family was before a later
    version replaced it (the causes calibration asks a recurrence against its family as it was)."""
    cur.execute(_FACTS, ([k[0] for k in keys], [k[1] for k in keys]))
    return [RecordFacts.of(r) for r in cur.fetchall()]


def _read_facts(cur: Cursor, keys: list[FactsKey]) -> dict[FactsKey, RecordFacts]:
    """By primary key, under RLS; each under the generation it was asked for."""
    cur.execute(_FACTS, ([k[0] for k in keys], [k[1] for k in keys]))
    read = {(r["family_id"], r["version"]): RecordFacts.of(r) for r in cur.fetchall()}
    return {k: read[k[0], k[1]] for k in keys if (k[0], k[1]) in read}


def _with_feedback(facts: RecordFacts, row: Row) -> RecordFacts:
    adopted, refuted = int(row["adopted"]), int(row["refuted"])
    if (adopted, refuted) == (facts.adopted, facts.refuted):
        return facts
    return dataclasses.replace(facts, adopted=adopted, refuted=refuted)


DETAIL_COLUMNS = ("project", "summary", "root_cause", "source_incidents",
                  "evidence", "verify_with", "trust_mix", "owner", "valid_until")
_DETAILS = sql.SQL("""SELECT family_id, version, {} FROM memory_versions
  WHERE (family_id, version) IN (SELECT * FROM unnest(%s::uuid[], %s::int[]))""").format(
    sql.SQL(", ").join(map(sql.Identifier, DETAIL_COLUMNS)))


def fetch_details(cur: Cursor, facts: list[RecordFacts], cache: VersionCache) -> dict[VersionKey, Row]:
    """The columns a hint shows, for the few versions that made the answer (by primary key)."""
    found, missing = cache.details(f.ident for f in facts)
    if missing:
        cur.execute(_DETAILS, ([k[0] for k in missing], [k[1] for k in missing]))
        read = {(d["family_id"], d["version"]): d for d in cur.fetchall()}
        cache.store_details(read)
        found.update(read)
    return found


Categories = dict[str, set[str]]  # root-cause category -> example incidents

# Both reads in one statement, told apart by `kind`: per alert name, the function of migration 0018 (a recursive
# skip over the (tenant, alert_name, root_cause_category) index that visits each distinct category once, for its
# cached generic plan; it runs as the caller, under RLS); per signal, the incidents that marked it misleading.
# One statement rather than one per read: each costs the client ~65 us of psycopg work and the server a
# parse/bind/execute of its own.
_WARNING_READS = """
SELECT 'alert' AS kind, a.name AS key, c.category, c.incidents
  FROM unnest(%(names)s::text[]) a(name)
  CROSS JOIN LATERAL opslore_alert_categories(a.name, %(project)s, %(now)s) c
UNION ALL
SELECT 'signal', m.signal, NULL, array_agg(DISTINCT m.incident_id)
  FROM misleading_signals m WHERE m.signal = ANY(%(signals)s::text[]) GROUP BY m.signal
"""


class WarningReads:
    """What the warnings need from the tenant, sent when first asked for and read with the transaction's next
    round trip (pipeline mode), in one statement per `ask` (`_WARNING_READS`):
    - per alert name: the root-cause categories that active records under it have, with up to 3 example
      incidents each (alternative_root_causes). Bounded: one call of the function per name (a single statement
      over all names' versions measured 0.66 against 0.17 ms per name at 1M records);
    - per requested signal: the incidents of the tenant that marked it misleading.
    The briefing asks for the question's alert and signals before its first read, so that their results come
    back with it; only the alert names of hints that the question did not name cost a round trip of their own."""

    def __init__(self, cur: Cursor, project: str | None, now: datetime) -> None:
        self.conn = cur.connection
        self.project = project
        self.now = now
        self._asked: set[str] = set()
        self._signals_asked = False
        self._pending: list[Cursor] = []
        self._alerts: dict[str, Categories] = {}
        self._misleading: dict[str, list[str]] = {}

    def ask(self, alert_names: list[str], signals: list[str]) -> None:
        """Send the reads not sent yet, in one statement; read nothing."""
        names = [n for n in dict.fromkeys(alert_names) if n not in self._asked]
        signals = signals if signals and not self._signals_asked else []
        if not names and not signals:
            return
        c = self.conn.cursor()
        c.execute(_WARNING_READS, {"names": names, "project": self.project, "now": self.now, "signals": signals})
        self._pending.append(c)
        self._asked.update(names)
        self._signals_asked = self._signals_asked or bool(signals)

    def categories(self, alert_names: list[str]) -> dict[str, Categories]:
        self.ask(alert_names, [])
        self._collect()
        return {name: self._alerts.get(name, {}) for name in alert_names}

    def misleading(self) -> dict[str, list[str]]:
        """Per signal asked for (`ask`), the incidents that marked it misleading."""
        self._collect()
        return self._misleading

    def _collect(self) -> None:
        for c in self._pending:
            for r in c.fetchall():
                if r["kind"] == "alert":
                    self._alerts.setdefault(r["key"], {})[r["category"]] = set(r["incidents"])
                else:
                    self._misleading[r["key"]] = list(r["incidents"])
        self._pending.clear()
