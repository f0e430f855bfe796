"""BriefingService: answers an agent's question with a few ranked, warning-tagged hints.

Read path (seed 000 section 6): scope from the API key -> hard filters and candidate generation in SQL
(`candidates`) -> pure ranking (`rank`) and warnings (`warnings`) -> evidence and live checks -> the
briefing row and its lineage edges, written in the same transaction as the read, whose COMMIT is sent before
the answer returns and whose outcome a settler thread reads after it (`settler`).
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from schemas.api import (
    BriefingRequest,
    BriefingResponse,
    CalibrationView,
    CausesCalibrationView,
    CauseView,
    CheckView,
    EvidenceView,
    FeedbackRequest,
    Hint,
    RecordSearchRequest,
)
from schemas.ledger import EventType, LedgerRecord, Trust, envelope
from services.briefing import causes as cause_model
from services.briefing import records as briefing_records
from services.briefing import retrieval
from services.briefing.cache import VersionCache
from services.briefing.calibrator import Calibrator
from services.briefing.causes_calibrator import CausesCalibrator
from services.briefing.facts import RecordFacts
from services.briefing.history import CauseHistories, CauseHistory, CauseProfileCache, sharing_services
from services.briefing.rank import Ranked, RankPolicy, RankQuery, Scored, rank, text_model
from services.briefing.render import render
from services.briefing.semantic import RECALL_K, SemanticIndex
from services.briefing.settler import CommitSettler
from services.briefing.symptoms import SymptomClassifier, concepts, novel_concept, shipped_classifier
from services.briefing.vectors import SemanticIndexNotReady
from services.briefing.warnings import WarningContext, warnings_for
from services.common import logs
from services.common.auth import Principal
from services.common.db import Cursor, Database, Row
from services.common.errors import NotFound
from services.common.settings import Settings
from services.gateway.service import LedgerGateway
from services.lexicon import index as lexical
from services.lexicon.analyzer import analyze

# Word bytes ([A-Za-z0-9_]) map to "w", every other byte to a space: a word of a UTF-8 text then starts where
# " w" occurs (or at the start), counted in C without a list of words (a regex over the ~7 KB of a briefing's JSON
# cost 0.4 ms).
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_WORD_MARKS = bytes(0x77 if b in _WORD_BYTES else 0x20 for b in range(256))
# U+3400..U+9FFF in UTF-8: lead byte E4..E9 (U+4000..U+9FFF), or E3 followed by 90..BF (U+3400..U+3FFF). A lead
# byte never occurs inside another character's encoding (continuation bytes are 80..BF), so counting is exact.
_CJK_LEADS = bytes(range(0xE4, 0xEA))
_CJK_E3 = re.compile(rb"\xe3[\x90-\xbf]")
log = logging.getLogger("opslore.briefing")
# the last briefings that cited any version of a family, with the verdicts of the feedback they got on it
_CITED_BY = """SELECT b.briefing_id, b.created_at, b.request->>'text' AS question,
  (SELECT string_agg(e.payload->>'verdict', ', ' ORDER BY e.occurred_at) FROM ledger_events e
    WHERE e.type = 'briefing.feedback' AND e.payload->>'briefing_id' = b.briefing_id::text
      AND e.payload->>'family_id' = split_part(l.dst_id, ':', 1)) AS feedback
  FROM lineage_edges l JOIN briefings b ON b.briefing_id::text = l.src_id
  WHERE l.relation = 'cited' AND l.dst_kind = 'version' AND l.dst_id LIKE %(family)s
  ORDER BY b.created_at DESC LIMIT %(last)s"""


def token_estimate(payload: Any) -> int:
    """Rough LLM token count: one per CJK character (U+3400..U+9FFF), ~1.3 per other word ([A-Za-z0-9_]+), plus
    JSON punctuation."""
    raw = payload.encode() if isinstance(payload, str) else orjson.dumps(payload)
    marks = raw.translate(_WORD_MARKS)
    words = marks.count(b" w") + marks.startswith(b"w")
    return math.ceil(cjk_characters(raw) + words * 1.3 + raw.count(b'"') / 4)


def cjk_characters(raw: bytes) -> int:
    """How many characters of U+3400..U+9FFF the UTF-8 bytes `raw` hold (one pass of C per byte class)."""
    if raw.isascii():
        return 0
    count = len(raw) - len(raw.translate(None, _CJK_LEADS))
    return count + len(_CJK_E3.findall(raw)) if b"\xe3" in raw else count


def query_text(req: BriefingRequest) -> str:
    """Everything of the request that is text: the question, the alert and its labels, the signals."""
    return " ".join(filter(None, [req.text or "", req.alert.name if req.alert else "",
                                  *(req.alert.labels.values() if req.alert else []), *req.signals]))


def semantic_query_text(req: BriefingRequest) -> str:
    """What the question's vector says: its own words when it has any (as the records' vectors carry no alert or
    service names), else its alert and signals."""
    return req.text if req.text and req.text.strip() else query_text(req)


@lru_cache(maxsize=4096)
def query_tokens(text: str) -> tuple[str, ...]:
    """The analyzer's lexemes of a question's text, remembered: `analyze` is a pure function of the text and of
    the alias dictionary, which a process loads once; the same alert fires again and again with the same name,
    labels and signals (0.6 ms of jieba and stemming per briefing at the bench's questions, about 10 us on a hit)."""
    return tuple(analyze(text)) if text.strip() else ()


def build_query(req: BriefingRequest) -> tuple[RankQuery, list[str]]:
    tokens = list(query_tokens(query_text(req)))
    q = RankQuery(alert=req.alert.name if req.alert else None, services=frozenset(req.services),
                  signals=frozenset(req.signals), entities=frozenset(req.entities), tokens=frozenset(tokens),
                  environment=req.environment, cluster=req.cluster, service_version=req.service_version,
                  topology=req.topology_fingerprint)
    return q, tokens


def evidence_views(row: Row, limit: int) -> list[EvidenceView]:
    views = []
    for e in (row.get("evidence") or [])[:limit]:
        untrusted = e.get("trust") == Trust.UNTRUSTED_TEXT.value
        summary = f"(untrusted {e['source']} text withheld; event {e['event_id']})" if untrusted else e["summary"]
        views.append(EvidenceView(incident_id=e["incident_id"], event_id=e["event_id"], summary=summary[:160],
                                  trust=e["trust"]))
    return views


def checks(row: Row, learned_services: tuple[str, ...], services: list[str], limit: int) -> list[CheckView]:
    """The record's live checks, rewritten for the service asked about when the record learned another."""
    out = []
    for c in (row.get("verify_with") or [])[:limit]:
        query = c["query"]
        if services and learned_services and services[0] not in learned_services:
            for old in learned_services:
                query = query.replace(old, services[0])
        out.append(CheckView(source=c["source"], query=query, expect=c["expect"], signals=c.get("signals", [])))
    return out


@dataclass(frozen=True)
class Embedded:
    vector: NDArray[np.float32] | None
    failed: bool
    unready: bool = False  # not embedded: the tenant's semantic index is not built yet (degraded semantic_index)


@dataclass
class Retrieved:
    query: RankQuery
    reads: retrieval.WarningReads
    stats: lexical.CorpusStats
    rows: list[RecordFacts]
    similarities: dict[tuple[str, int], float] | None
    degraded: list[str]
    vector: NDArray[np.float32] | None = None  # the question's, when the semantic branch answered


class BriefingService:
    def __init__(self, db: Database, settings: Settings, gateway: LedgerGateway | None = None,
                 semantic: SemanticIndex | None = None) -> None:
        self.db = db
        self.settings = settings
        self.gateway = gateway
        self.semantic = semantic
        # what the question's symptoms point at across organisations (`symptoms`): the shipped classifier for the
        # semantic index's vectors, None without one; `replay worse-cost` sets one that never saw its questions
        self.classifier: SymptomClassifier | None = shipped_classifier(semantic.model if semantic is not None else None)
        self.cache = VersionCache(settings.briefing_cache_versions)
        self.settler = CommitSettler(settings.briefing_recorder_threads, wake_at=db.pool.max_size // 4)
        self.calibrator = Calibrator(self)
        self.histories = CauseHistories()
        self.profiles = CauseProfileCache()
        self.causes_calibrator = CausesCalibrator(self)
        self._embedding = ThreadPoolExecutor(settings.api_briefing_threads, thread_name_prefix="question-embedding") \
            if semantic is not None and settings.briefing_embed_alongside else None

    def brief(self, principal: Principal, req: BriefingRequest, now: datetime | None = None) -> BriefingResponse:
        principal.require("agent")
        now = now or datetime.now(UTC)
        question = self.embed_alongside(req, principal.scoped_tenant)
        tx = self.db.open_tenant_transaction(principal.scoped_tenant, durable=self.settings.briefing_durable_commit,
                                             generic_plans=True)
        try:
            response = self._answer(tx.cursor, principal, req, now, question)
            self._record(tx.cursor, principal, req, response)
            tx.send_commit()
        except BaseException:
            tx.abandon()
            raise
        self.settler.settle(response.briefing_id, tx)  # the answer does not wait for the commit's outcome
        logs.bind(briefing_id=str(response.briefing_id), incident_id=req.incident_id)
        return response

    def issued(self, principal: Principal, briefing_id: uuid.UUID) -> briefing_records.StoredBriefing | None:
        """A briefing by id, in the caller's tenant: also one answered a moment ago whose commit is in flight."""
        return self.settler.issued(self.db, principal.scoped_tenant, briefing_id)

    def calibrate(self, principal: Principal) -> CalibrationView:
        """Calibrate the caller's tenant now (reviewer)."""
        principal.require("reviewer")
        tenant = principal.scoped_tenant
        model, result = self.calibrator.run(tenant)
        return CalibrationView(model=model, min_relevance=result.min_relevance, status=result.status,
                               records=result.records, questions=result.questions,
                               recurrences=result.recurrences, novel=result.novel,
                               curve=[{"min_relevance": t, "checks": float(c)} for t, c in result.curve])

    def calibrate_causes(self, principal: Principal) -> CausesCalibrationView:
        """Fit the caller's tenant's causes model now (reviewer)."""
        principal.require("reviewer")
        name, fitted, report = self.causes_calibrator.run(principal.scoped_tenant)
        return CausesCalibrationView(model=name, causes_model=fitted.to_json(), questions=report["questions"],
                                     report=report)

    def calibrate_stale(self, tenant: str) -> None:
        """What a briefing of `tenant` would start when its calibrations are missing or its history moved, started
        here: by the background owner (`opslore index snapshots`) for the tenants whose memory changed, on its own
        thread (`TenantRuns`), so that API processes spend their CPU on briefings (OPSLORE_CALIBRATION_RUNS_IN)."""
        with self.db.tenant_transaction(tenant) as cur:
            docs = lexical.corpus_stats(cur, []).docs
            name = self.policy(datetime.now(UTC), self.semantic is not None).model.name
            records = self.histories.get(cur, tenant, None, docs).history.records
            self.causes_calibrator.model(cur, tenant, name, records)  # what is stored, and for how many records
            if self.settings.briefing_calibration:
                self.calibrator.threshold(cur, tenant, name)
        if self.settings.briefing_causes_calibration:
            self.causes_calibrator.refresh_if_stale(tenant, name, records)
        if self.settings.briefing_calibration:
            self.calibrator.refresh_if_stale(tenant, name, docs)

    def close(self) -> None:
        """Settle the records of briefings already answered (graceful shutdown)."""
        self.settler.close()
        if self._embedding is not None:
            self._embedding.shutdown(wait=True)
        self.calibrator.close()
        self.causes_calibrator.close()

    def search(self, principal: Principal, req: RecordSearchRequest, now: datetime | None = None) -> list[Hint]:
        """Approved records for a free-text query, ranked and warned like a briefing; records nothing."""
        principal.require("agent")
        question = BriefingRequest(text=req.query, services=req.services, limit=req.limit)
        vector = self.embed_alongside(question, principal.scoped_tenant)
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            return self._answer(cur, principal, question, now or datetime.now(UTC), vector, briefing=False).hints

    def embed(self, req: BriefingRequest, tenant: str | None = None) -> Embedded:
        """The question's embedding; `failed` when the embedder is configured and raised (the briefing then
        answers lexically and says `degraded: ["embedding"]`); not computed (`unready`) while `tenant` is known to
        have no semantic index yet (lexically, `degraded: ["semantic_index"]`)."""
        if self.semantic is None:
            return Embedded(None, failed=False)
        if tenant is not None and self.semantic.unready(tenant):
            return Embedded(None, failed=False, unready=True)
        try:
            return Embedded(self.semantic.embed_question(semantic_query_text(req)), failed=False)
        except Exception:
            log.warning("embedding the question failed; answering lexically", exc_info=True)
            return Embedded(None, failed=True)

    @staticmethod
    def lexemes(req: BriefingRequest) -> tuple[str, ...]:
        """The lexemes of what the question's vector says (`semantic_query_text`): the symptom classifier's lexical
        part reads them beside the vector (the briefing, the calibrator's lived questions, `replay causes-fit`)."""
        return query_tokens(semantic_query_text(req))

    def embed_alongside(self, req: BriefingRequest, tenant: str) -> Embedded | Future[Embedded]:
        """`embed`, started on the service's question-embedding threads when it has work to do (a question with
        text, not remembered, a tenant with an index): the briefing's transaction reads the lexical and structured
        candidates meanwhile (PostgreSQL's time; onnxruntime and psycopg both release the GIL), and `retrieve`
        waits for the vector only where the semantic branch needs it. The briefing then costs the slower of the
        two, not their sum. OPSLORE_BRIEFING_EMBED_ALONGSIDE=false embeds first, outside the transaction."""
        if self._embedding is None or self.semantic is None or self.semantic.unready(tenant):
            return self.embed(req, tenant)
        text = semantic_query_text(req)
        if not text.strip() or self.semantic.remembered(text):
            return self.embed(req, tenant)
        return self._embedding.submit(self.embed, req, tenant)

    def retrieve(self, cur: Cursor, principal: Principal, req: BriefingRequest, now: datetime,
                 question: Embedded | Future[Embedded]) -> Retrieved:
        """Every branch's candidates for the question, with what ranking them needs (also `replay/ranker_fit.py`'s
        way to the same features the live briefing ranks on). A pending `question` is waited for after the
        lexical and structured reads."""
        q, tokens = build_query(req)
        reads = retrieval.WarningReads(cur, principal.project, now)
        reads.ask([q.alert] if q.alert else [], sorted(q.signals))  # answered with the next read's round trip
        stats = lexical.corpus_stats(cur, tokens)
        rows = retrieval.fetch_candidates(cur, req, tokens, principal.project, now, stats, self.cache)
        if isinstance(question, Future):
            question = question.result()  # embed() catches the embedder's errors: failed=True
        similarities, degraded = self._semantic(cur, principal, now, stats, rows, question)
        if question.unready:
            degraded = ["semantic_index"]
        return Retrieved(q, reads, stats, rows, similarities, ["embedding"] if question.failed else degraded,
                         question.vector if similarities is not None else None)

    def policy(self, now: datetime, semantic: bool, threshold: float | None = None) -> RankPolicy:
        """The ranking policy: the shipped model for the branch that answered; its abstention point unless
        `threshold` (the tenant's calibration) or OPSLORE_BRIEFING_MIN_SCORE (an operator's override) says else."""
        model = text_model(self.semantic.model if semantic and self.semantic is not None else None)
        if self.settings.briefing_min_score is not None:
            return RankPolicy(half_life_days=self.settings.episodic_half_life_days, now=now, model=model,
                              min_relevance=self.settings.briefing_min_score, source="OPSLORE_BRIEFING_MIN_SCORE")
        return RankPolicy(half_life_days=self.settings.episodic_half_life_days, now=now, model=model,
                          min_relevance=threshold, source="shipped" if threshold is None else "tenant-calibrated")

    def _tenant_policy(self, cur: Cursor, tenant: str, now: datetime, found: Retrieved) -> RankPolicy:
        """The policy with the tenant's calibrated abstention point, and a calibration started if it is stale."""
        shipped = self.policy(now, found.similarities is not None)
        if not self.settings.briefing_calibration:
            return shipped
        if self.settings.calibration_runs_in == "api":
            self.calibrator.refresh_if_stale(tenant, shipped.model.name, found.stats.docs)
        return self.policy(now, found.similarities is not None,
                           self.calibrator.threshold(cur, tenant, shipped.model.name))

    def _answer(self, cur: Cursor, principal: Principal, req: BriefingRequest, now: datetime,
                question: Embedded | Future[Embedded], briefing: bool = True) -> BriefingResponse:
        """`briefing`: the hints follow the causes (contract v1.3); a record search (False) ranks every record
        that clears the abstention point, whatever the causes say."""
        found = self.retrieve(cur, principal, req, now, question)
        q, reads, degraded = found.query, found.reads, found.degraded
        policy = self._tenant_policy(cur, principal.scoped_tenant, now, found)
        ranking = rank(q, found.rows, policy, req.limit, found.similarities, found.stats)
        history = self.histories.get(cur, principal.scoped_tenant, principal.project, found.stats.docs)
        answer = self._causes(cur, principal, req, policy, history, ranking, found, briefing)
        if briefing:
            shown = cause_model.follow_causes([c.category for c in answer.evidence], ranking.candidates,
                                              lambda s: history.cause_of(str(s.facts.family_id),
                                                                         s.facts.root_cause_category),
                                              req.limit, policy.threshold)
            ranking = Ranked(shown, ranking.categories, ranking.candidates)
        details = retrieval.fetch_details(cur, [s.facts for s in ranking.hints], self.cache)
        ctx = self._context(reads, ranking)
        hints = [self._hint(s, details[s.facts.ident], q, req, ctx, detail=2 if i == 0 else 1)
                 for i, s in enumerate(ranking.hints)]
        causes = [CauseView(category=c.category, probability=c.probability, prior=c.prior, basis=c.basis,
                            family_ids=[uuid.UUID(f) for f in c.family_ids]) for c in answer.causes]
        response = BriefingResponse(briefing_id=uuid.uuid4(), hints=hints, causes=causes, novelty=answer.novelty,
                                    rest=answer.rest, degraded=degraded,
                                    causes_explain=self._causes_explain(answer, history) if req.explain else None,
                                    rendered=render(hints, causes, answer.novelty))
        response.token_estimate = token_estimate(response.rendered)
        response.count_wire_tokens(token_estimate)
        return response

    def _causes(self, cur: Cursor, principal: Principal, req: BriefingRequest, policy: RankPolicy,
                history: CauseHistory, ranking: Ranked, found: Retrieved, briefing: bool = True
                ) -> cause_model.CausesAnswer:
        """The calibrated causes of the question (`causes.answer`) from every ranked candidate's relevance and, when
        the question was embedded, what the shipped symptom classifier says of each cause's records
        (`symptoms.concepts`), with the tenant's calibrated model (a run started in the background when it is
        missing or stale) and, when that model conditions on services, the history's incidents that share a
        service with the question. `briefing` False (a record search, whose hints do not follow the causes): a
        pending floor is not measured."""
        tenant = principal.scoped_tenant
        evidence = cause_model.gather(
            cause_model.candidate(cause, s, family) for s in ranking.candidates
            if (cause := history.cause_of(family := str(s.facts.family_id), s.facts.root_cause_category)) is not None)
        members: dict[str, tuple[str, ...]] = {}
        classifier = self.classifier
        if classifier is not None and found.vector is not None and self.semantic is not None:
            profiles = self.profiles.get(cur, tenant, principal.project, found.stats.docs, self.semantic.model,
                                         history, classifier)
            ratios = classifier.ratios(found.vector, self.lexemes(req))
            evidence = cause_model.with_concepts(evidence, concepts(ratios, profiles.profiles), novel_concept(
                ratios, profiles.covered, classifier.shares))
            members = profiles.members
        name = policy.model.name
        model = self.causes_calibrator.model(cur, tenant, name, history.history.records)
        if briefing and cause_model.floor_pending(model, history.history):
            model = self.causes_calibrator.floor_now(tenant, model, history.history.records)
        if self.settings.briefing_causes_calibration and self.settings.calibration_runs_in == "api":
            self.causes_calibrator.refresh_if_stale(tenant, name, history.history.records)
        near: dict[str, float] = {}
        sharing: dict[str, tuple[str, ...]] = {}
        if model.service_beta is not None and req.services:
            near, sharing = sharing_services(cur, req.services, principal.project, history)
        return cause_model.answer(history.history, evidence, model, req.limit, near, {**members, **sharing})

    @staticmethod
    def _causes_explain(answer: cause_model.CausesAnswer, history: CauseHistory) -> dict[str, Any]:
        m = answer.model
        return {"model": m.source, "questions": m.questions, "service_beta": m.service_beta,
                "evidence_floor": m.evidence_floor, "young": m.young,
                "floor_pending": cause_model.floor_pending(m, history.history),
                "weights": dict(zip(cause_model.FEATURES, m.weights, strict=True)),
                "novel_bias": m.novel_bias, "novel_relevance": m.novel_relevance,
                "history_records": history.history.records, "novelty_prior": answer.novelty_prior,
                "worse_cost": m.worse_cost, "probabilities": dict(answer.posterior),
                "supported": list(answer.supported),
                "features": {c: dict(zip(cause_model.FEATURES, v, strict=True)) for c, v in answer.features},
                "novel_concept": answer.novel_concept,
                "basis_rule": "evidence: the causes whose checking first lowers the planner's expected checks "
                              "(evidence causes, then the rest by base rate) plus worse_cost times the chance "
                              "that checking them first makes the investigation longer, under these probabilities"}

    def told(self, principal: Principal, family_id: uuid.UUID, version: int, now: datetime | None = None,
             last: int = 10) -> dict[str, Any]:
        """What an agent is told of a record today (the review UI's record page): the warnings a briefing would
        attach to its version now, and the last briefings that cited the family, with the feedback each got."""
        principal.require("reviewer")
        now = now or datetime.now(UTC)
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            facts = retrieval.version_facts(cur, [(family_id, version)])
            warnings: list[Any] = []
            if facts:
                f = facts[0]
                reads = retrieval.WarningReads(cur, principal.project, now)
                q = RankQuery(alert=f.alert_name, services=frozenset(f.services), signals=frozenset(),
                              entities=frozenset(), tokens=frozenset())
                ctx = WarningContext(now=now, stale_after_days=self.settings.stale_after_days,
                                     low_confidence_below=self.settings.low_confidence_below,
                                     alert_categories=reads.categories([f.alert_name] if f.alert_name else []),
                                     tenant_misleading={})
                warnings = warnings_for(q, f, f.confidence, ctx)
            cur.execute(_CITED_BY, {"family": f"{family_id}:%", "last": last})
            cited = [dict(r) for r in cur.fetchall()]
        return {"warnings": warnings, "briefings": cited}

    def get(self, principal: Principal, briefing_id: uuid.UUID) -> dict[str, Any]:
        """The answer as it was given (GET /v1/briefings/{id}); 404 outside the caller's tenant/project."""
        principal.require("agent")
        row = self.issued(principal, briefing_id)
        if row is None or (principal.project and row.project != principal.project):
            raise NotFound("no such briefing", field="briefing_id")
        if row.response is not None:
            return dict(row.response)
        return {"briefing_id": str(briefing_id), "request": row.request,
                "cited": [{"family_id": c.family_id, "version": c.version} for c in row.cited],
                "created_at": row.created_at.isoformat(), "hints": None}

    def _semantic(self, cur: Cursor, principal: Principal, now: datetime, stats: lexical.CorpusStats,
                  rows: list[RecordFacts], question: Embedded) -> tuple[dict[tuple[str, int], float] | None, list[str]]:
        """Adds the tenant's versions nearest to the question to `rows` (in place) and returns every row's cosine;
        None when the branch is off, the question has no text, or the tenant serves another model (nothing
        failed: not degraded), None and `degraded: ["semantic_index"]` for a large tenant whose snapshot is not built
        yet (cosines and `degraded` when it is behind), None and `degraded: ["embedding"]` when the branch fails."""
        if self.semantic is None or question.vector is None:
            return None, []
        try:
            with cur.connection.transaction():  # SAVEPOINT: a failure must not poison the read
                if not self.semantic.serves(cur):
                    return None, []
                vectors = self.semantic.searchable(cur, principal.scoped_tenant)
                near = vectors.search(question.vector, RECALL_K)
                have = {r.ident for r in rows}
                rows += retrieval.fetch_current(cur, [k for k, _ in near if k not in have], principal.project, now,
                                                stats, self.cache)
                cosines = dict(near)
                missing = [r.ident for r in rows if r.ident not in cosines]
                cosines.update(vectors.cosines(question.vector, missing))
                behind = [] if vectors.complete else ["semantic_index"]
                return {(str(k[0]), k[1]): c for k, c in cosines.items()}, behind
        except SemanticIndexNotReady:
            return None, ["semantic_index"]
        except Exception:
            log.warning("embedding branch failed; answering lexically", exc_info=True)
            return None, ["embedding"]

    def _context(self, reads: retrieval.WarningReads, ranking: Ranked) -> WarningContext:
        alerts = sorted({s.facts.alert_name for s in ranking.hints if s.facts.alert_name})
        return WarningContext(
            now=reads.now, stale_after_days=self.settings.stale_after_days,
            low_confidence_below=self.settings.low_confidence_below,
            alert_categories=reads.categories(alerts), tenant_misleading=reads.misleading(),
            inferred_categories=ranking.categories,
        )

    @staticmethod
    def _hint(s: Scored, row: Row, q: RankQuery, req: BriefingRequest, ctx: WarningContext, detail: int) -> Hint:
        """`row`: the version's shown columns; `detail`: how many evidence items and checks to include (the
        top hint gets more)."""
        f = s.facts
        return Hint(
            family_id=f.family_id, version=f.version, memory_type=f.memory_type,
            summary=row["summary"], root_cause=row["root_cause"], root_cause_category=f.root_cause_category,
            confidence=s.confidence, score=s.score,
            source_incidents=list(row["source_incidents"]), evidence=evidence_views(row, detail),
            warnings=warnings_for(q, f, s.confidence, ctx),
            verify_with=checks(row, f.services, req.services, detail),
            valid_until=row["valid_until"], last_verified_at=f.last_verified_at,
            explain=s.parts if req.explain else None,
        )

    @staticmethod
    def _record(cur: Cursor, principal: Principal, req: BriefingRequest, response: BriefingResponse) -> None:
        briefing_records.insert(
            cur, tenant=principal.scoped_tenant, briefing_id=response.briefing_id, project=principal.project,
            requested_by=principal.key_id, request=req.model_dump(mode="json"),
            cited=[briefing_records.Cited(str(h.family_id), h.version) for h in response.hints],
            response=response.wire())

    def feedback(self, principal: Principal, briefing_id: uuid.UUID, body: FeedbackRequest) -> LedgerRecord:
        """Check that the briefing cited the family, then append a `briefing.feedback` ledger event."""
        principal.require("agent")
        assert self.gateway is not None
        row = self.issued(principal, briefing_id)
        if row is None:
            raise NotFound("no such briefing", field="briefing_id")
        if str(body.family_id) not in {c.family_id for c in row.cited}:
            raise NotFound("that briefing did not cite this family", field="family_id")
        event = envelope(EventType.BRIEFING_FEEDBACK, body.incident_id, {
            "briefing_id": str(briefing_id), "family_id": str(body.family_id), "verdict": body.verdict,
            "evidence_refs": [str(e) for e in body.evidence_refs]}, writer_kind="agent", writer_id=principal.actor,
            trust=Trust.USER_STATED)
        return self.gateway.append(event, principal)[0]
