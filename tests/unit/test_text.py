from __future__ import annotations

from pathlib import Path

from services.lexicon.analyzer import analyze, concepts_of, load_aliases

DOMAINS = {"db_connection_pool", "network", "tls", "dns", "memory_leak", "disk_full", "cpu", "node",
           "queue_backlog", "bad_deploy", "configuration", "dependency"}


def test_dictionary_covers_the_domains_in_both_languages() -> None:
    aliases = load_aliases()
    assert len(aliases.concepts) >= 150
    assert {c.category for c in aliases.concepts} >= DOMAINS
    assert sum(1 for c in aliases.concepts if any("\u4e00" <= ch <= "\u9fff" for t in c.terms for ch in t)) >= 100


def test_paraphrases_in_two_languages_share_a_concept() -> None:
    phrases = ["连接池耗尽", "数据库连接全部被占满", "connection pool exhausted", "FATAL: too many clients"]
    for phrase in phrases:
        assert "db_pool_exhausted" in concepts_of(analyze(phrase)), phrase


def test_a_matched_phrase_counts_once_as_its_concept() -> None:
    tokens = analyze("no space left on device on the inventory volume")
    assert "concept:db_disk_full" in tokens
    assert "space" not in tokens and "devic" not in tokens and "inventori" in tokens


def test_english_is_stemmed_and_chinese_is_segmented() -> None:
    assert {"connect", "exhaust"} <= set(analyze("connections exhausted"))
    assert "订单" in analyze("订单服务报错")


def test_a_deployment_file_extends_the_dictionary(tmp_path: Path) -> None:
    extra = tmp_path / "aliases.yaml"
    extra.write_text("concepts:\n  db_pool_exhausted: {terms: [连接被榨干]}\n"
                     "  ledger_lock: {category: db_locks, terms: [ledger row lock, 账本锁]}\n", encoding="utf-8")
    aliases = load_aliases(str(extra))
    assert concepts_of(analyze("连接被榨干了", aliases)) == ["db_pool_exhausted"]
    assert concepts_of(analyze("waiting on the ledger row lock", aliases)) == ["ledger_lock"]
    assert aliases.category_of["ledger_lock"] == "db_locks"
