from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from services.briefing.facts import RecordFacts
from services.briefing.rank import RankPolicy, RankQuery, TextModel, rank
from services.briefing.warnings import WarningContext, warnings_for
from services.lexicon.analyzer import analyze

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def row(text: str, *, signals: list[str], service: str = "payments-api", alert: str = "HighErrorRate",
        category: str = "db_connection_pool", **extra: Any) -> RecordFacts:
    return RecordFacts.of({"family_id": uuid.uuid4(), "version": 1, "memory_type": "episodic", "signals": signals,
            "services": [service], "entities": [], "alert_name": alert, "root_cause_category": category,
            "lexemes": analyze(text), "confidence": 0.7, "adopted": 0, "refuted": 0,
            "last_verified_at": NOW - timedelta(days=10), "misleading_signals": [], "trust_mix": {}, **extra})


def query(text: str = "", **kw: Any) -> RankQuery:
    return RankQuery(alert=kw.get("alert"), services=frozenset(kw.get("services", [])),
                     signals=frozenset(kw.get("signals", [])), entities=frozenset(),
                     tokens=frozenset(analyze(text)) if text else frozenset(),
                     environment=kw.get("environment"))


# A fixed lexical model, so that these tests state the ranker's behaviour, not the coefficients fitted to the corpus
MODEL = TextModel(name="test-lexical", features=("lexical", "lexical_share", "concept"), coefficients=(1.5, 1.0, 4.0),
                  intercept=-2.5, min_relevance=0.5, category_weight=0.5)
POLICY = RankPolicy(now=NOW, model=MODEL)


def test_signals_decide_between_two_causes_of_one_alert() -> None:
    pool = row("connection pool exhausted, all db connections busy", signals=["db_pool_saturation"])
    tls = row("x509 certificate has expired for card-gateway", signals=["tls_handshake_failure"],
              category="certificate_expiry")
    q = query("errors, logs say certificate has expired", alert="HighErrorRate", services=["payments-api"],
              signals=["tls_handshake_failure"])
    assert rank(q, [pool, tls], POLICY, 5).hints[0].facts is tls


def test_chinese_paraphrase_matches_through_concepts() -> None:
    rec = row("order-svc 数据库连接池耗尽，等待连接的线程数持续上升", signals=["db_pool_saturation"],
              service="order-svc")
    q = query("订单服务大量超时，数据库连接全部被占满", services=["order-svc"])
    ranked = rank(q, [rec], POLICY, 5).hints
    assert ranked and float(ranked[0].parts["match_concept"]) > 0


def test_abstains_when_only_the_service_matches() -> None:
    rec = row("connection pool exhausted", signals=["db_pool_saturation"])
    assert rank(query("disk almost full on the log volume", services=["payments-api"]), [rec], POLICY, 5).hints == []
    assert rank(query("kafka consumer lag growing", services=["analytics"]), [rec], POLICY, 5).hints == []


def test_limit_and_refuted_feedback_lower_the_rank() -> None:
    rows = [row("connection pool exhausted", signals=["db_pool_saturation"]) for _ in range(8)]
    rows[0] = replace(rows[0], refuted=3)
    ranked = rank(query("pool exhausted", signals=["db_pool_saturation"]), rows, POLICY, 5).hints
    assert len(ranked) == 5 and rows[0] not in [s.facts for s in ranked]


def test_warnings_cover_the_contract_codes() -> None:
    rec = row("pool exhausted", signals=["db_pool_saturation"], environment="staging",
              misleading_signals=["cpu_high"], trust_mix={"untrusted_text": 1}, confidence=0.3,
              last_verified_at=NOW - timedelta(days=400))
    ctx = WarningContext(now=NOW, stale_after_days=90, low_confidence_below=0.5,
                         alert_categories={"HighErrorRate": {"db_connection_pool": {"INC-1"},
                                                             "certificate_expiry": {"INC-2"}}},
                         tenant_misleading={})
    q = query("x", signals=["cpu_high"], environment="prod")
    codes = {w.code for w in warnings_for(q, rec, 0.3, ctx)}
    assert codes == {"history_is_hypothesis", "alternative_root_causes", "environment_mismatch",
                     "misleading_signal", "stale", "low_confidence", "untrusted_source"}


def test_reviewer_restriction_is_a_hard_filter_but_learned_environment_only_warns() -> None:
    learned = row("pool exhausted", signals=["db_pool_saturation"], environment="staging")
    restricted = row("pool exhausted", signals=["db_pool_saturation"], environment="staging",
                     applicability_restricted=True)
    prod = query("pool exhausted", signals=["db_pool_saturation"], environment="prod")
    assert [s.facts for s in rank(prod, [learned, restricted], POLICY, 5).hints] == [learned]
    staging = query("pool exhausted", signals=["db_pool_saturation"], environment="staging")
    assert len(rank(staging, [learned, restricted], POLICY, 5).hints) == 2


def test_categories_are_inferred_from_retrieved_records_and_named_as_alternatives() -> None:
    pool = row("connection pool exhausted, all db connections busy", signals=["db_pool_saturation"])
    pool2 = row("pool exhausted by a batch job holding connections", signals=["db_pool_saturation"], service="b")
    tls = row("x509 certificate has expired for card-gateway", signals=["db_pool_saturation"],
              category="certificate_expiry")
    q = query("connection pool exhausted and x509 certificate has expired", signals=["db_pool_saturation"])
    ranking = rank(q, [pool, pool2, tls], POLICY, 5)
    assert set(ranking.categories) == {"db_connection_pool", "certificate_expiry"}
    assert abs(sum(ranking.categories.values()) - 1.0) < 1e-3
    assert ranking.categories["db_connection_pool"] > ranking.categories["certificate_expiry"]
    ctx = WarningContext(now=NOW, stale_after_days=90, low_confidence_below=0.5, alert_categories={},
                         tenant_misleading={}, inferred_categories=ranking.categories)
    codes = {w.code: w.message for w in warnings_for(q, tls, 0.7, ctx)}
    assert "db_connection_pool" in codes["alternative_root_causes"]


def test_a_field_memory_has_no_vocabulary_for_does_not_dilute_the_text() -> None:
    rec = row("x509 certificate has expired on the storage endpoints", signals=["tls_handshake_errors"],
              service="storage", alert="StorageHTTPSErrors", category="certificate_expiry")
    other = row("disk full on the ledger volume", signals=["disk_usage_high"], category="disk_full")
    bare = query("x509 certificate has expired")
    loaded = RankQuery(alert="TerminalsOffline", services=frozenset({"edge", "auth"}),
                       signals=frozenset({"connection_failures", "login_errors"}), entities=frozenset({"gw-7"}),
                       tokens=bare.tokens)
    plain_rel = rank(bare, [rec, other], POLICY, 5).hints[0].relevance
    loaded_hints = rank(loaded, [rec, other], POLICY, 5).hints
    assert loaded_hints and loaded_hints[0].facts is rec
    assert abs(loaded_hints[0].relevance - plain_rel) < 1e-9


def test_question_text_is_analyzed_once_per_distinct_text() -> None:
    from schemas.api import BriefingRequest
    from services.briefing.service import build_query, query_tokens

    req = BriefingRequest(text="订单同步消费延迟 consumer lag on orders-sync", alert={"name": "OrdersSyncLag"},
                          signals=["kafka_consumer_lag"])
    before = query_tokens.cache_info()
    q, tokens = build_query(req)
    again, tokens_again = build_query(req)
    after = query_tokens.cache_info()
    expected = analyze("订单同步消费延迟 consumer lag on orders-sync OrdersSyncLag kafka_consumer_lag")
    assert tokens == tokens_again == expected
    assert q.tokens == again.tokens == frozenset(tokens)
    assert after.hits - before.hits >= 1 and after.misses - before.misses <= 1
    assert build_query(BriefingRequest(alert={"name": " "}))[1] == []  # blank text: nothing to analyze


def test_hints_show_the_best_record_of_each_cause_first() -> None:
    pool = [row("connection pool exhausted, all db connections busy", signals=["db_pool_saturation"])
            for _ in range(3)]
    tls = row("connection pool exhausted while the x509 certificate has expired", signals=["db_pool_saturation"],
              category="certificate_expiry")
    q = query("connection pool exhausted", signals=["db_pool_saturation"])
    hints = rank(q, [*pool, tls], POLICY, 5).hints
    categories = [h.facts.root_cause_category for h in hints]
    assert len(hints) == 4 and set(categories[:2]) == {"db_connection_pool", "certificate_expiry"}
    assert categories[2:] == ["db_connection_pool", "db_connection_pool"]
    two = rank(q, [*pool, tls], POLICY, 2).hints
    assert [h.facts.root_cause_category for h in two].count("certificate_expiry") == 1
