"""Held-out-style recall cases through the running stack (embedding on, as by default): a superseded record stays
findable by the symptoms that found it before, without its old root cause; a Chinese paraphrase that names no
service finds an English record."""

from __future__ import annotations

from datetime import date

import pytest

from replay import realworld as rw
from replay.runner import learn_incident
from replay.scenario import Scenario
from services.cli.client import OpsloreClient
from tests.conftest import TenantFactory

pytestmark = pytest.mark.integration


def _pm(pid: str, cls: str, services: list[str], alert: str, signals: list[str], symptoms: str,
        root_cause: str) -> rw.Postmortem:
    return rw.Postmortem.model_validate({
        "id": pid, "org": "test", "date": date(2026, 1, 1), "source": "https://example.org", "class": cls,
        "lang": "en", "alert": alert, "services": services, "signals": signals, "symptoms": symptoms,
        "symptoms_other": symptoms, "root_cause": root_cause, "role": "history"})


HISTORY = [
    _pm("HO-POOL", "thread_or_connection_pool_exhaustion", ["orders-api"], "OrdersLatencyHigh", ["orders_p99_ms"],
        "orders-api requests time out after 30 s; every worker thread is blocked waiting for a database connection "
        "from the pool", "a nightly report job held all database connections of the orders pool"),
    _pm("HO-DISK", "disk_space_exhausted", ["ledger-db"], "LedgerVolumeFull", ["ledger_fs_used_pct"],
        "ledger-db writes fail with 'No space left on device'; the data volume reads 100% used",
        "an abandoned replication slot retained write-ahead log until the volume filled"),
    _pm("HO-DNS", "dns_failure", ["edge-proxy"], "EdgeResolveErrors", ["edge_nxdomain_rate"],
        "edge-proxy cannot resolve upstream names; logs show SERVFAIL for every internal zone lookup",
        "a zone file pushed with a syntax error made the authoritative servers refuse the zone"),
    _pm("HO-502", "bad_config_push", ["checkout-api"], "CheckoutGateway502", ["checkout_5xx_ratio"],
        "checkout-api answers 502 for every request; the gateway logs 'upstream connect error or disconnect/reset "
        "before headers. reset reason: connection failure'", "a routing config push sent checkout traffic to a "
        "drained listener pool"),
]


def _learn(client: OpsloreClient) -> dict[str, str]:
    sc = Scenario(name="held-out", about="held-out recall cases",
                  incidents=[rw.history_incident(pm) for pm in HISTORY], source="test")
    for inc in sc.incidents:
        assert learn_incident(sc, inc, client).passed
    return {r["source_incidents"][0]: str(r["family_id"]) for r in client.records()}


def test_a_superseded_record_is_found_by_its_symptoms_without_its_old_root_cause(
        tenant_client: TenantFactory) -> None:
    client = tenant_client("reviewer")
    families = _learn(client)
    family = families["HO-502"]
    client.record_op(family, "supersede", {
        "summary": "checkout 502s: the upstream's TLS certificate had expired; the config push was a coincidence",
        "reason": "postmortem review corrected the cause"})
    text = ("checkout-api 502 on every request, gateway says upstream connect error or disconnect/reset before "
            "headers, connection failure")
    found = client.request("POST", "/v1/records/search", json={"query": text, "services": ["checkout-api"]})
    hit = next((h for h in found["records"] if h["family_id"] == family), None)
    assert hit is not None and found["records"][0]["family_id"] == family, found["records"]
    assert hit["version"] == 2 and "drained listener" not in (hit["root_cause"] or "") + hit["summary"]
    # the briefing's causes put the corrected record's cause first, raised above its base rate; a four-record tenant
    # (a new cause is the likeliest outcome) sends its hint only where a lead pays at the price of a longer
    # investigation, and a hint it sends is the corrected version
    answer = client.briefing({"services": ["checkout-api"], "text": text})
    top = answer["causes"][0]
    assert top["category"].startswith("uncategorised: checkout 502s") and top["probability"] > 2 * top["prior"]
    assert all(h["version"] == 2 for h in answer["hints"] if h["family_id"] == family)


def test_a_chinese_paraphrase_without_a_service_finds_the_english_record(tenant_client: TenantFactory) -> None:
    """Search finds the English record from a Chinese paraphrase. The briefing of this four-record tenant (four
    causes: a new cause is the likeliest outcome, about 0.64) counts a question's evidence only when it stands out
    from how alike its unrelated incidents look (`causes.stands_out`, STAND_OUT times its floor): the English
    paraphrase does (about 3.3 times the floor) and raises its cause from its base rate to about twice it, still
    not worth checking first against a likely new cause, so no hint, and the text names it as raised; the Chinese
    one, matched by the embedding and one concept alone, reaches about 1.7 times, as far as the look-alikes that
    cost real young tenants checks, so it gets the base rates themselves: a young tenant says little when it knows
    little."""
    client = tenant_client("reviewer")
    families = _learn(client)
    text = "订单接口大量超时，所有工作线程都卡在等待数据库连接，连接池被占满"
    found = client.request("POST", "/v1/records/search", json={"query": text})["records"]
    assert found and found[0]["family_id"] == families["HO-POOL"]
    floor = client.calibrate_causes()["causes_model"]["evidence_floor"]
    assert floor is not None  # four records of four causes: samples, a floor
    english = client.briefing({"text": "orders api timing out, all worker threads stuck waiting for a db "
                                       "connection, the pool is exhausted", "explain": True})
    top = english["causes"][0]  # the evidence counts: the cause leads, at twice its base rate or more
    assert top["category"] == "thread_or_connection_pool_exhaustion" and top["probability"] >= 2 * top["prior"]
    # not worth checking first against a likely new cause: no hint, and the text says what rose
    assert top["basis"] == "prior" and english["hints"] == []
    assert "A weak resemblance raises thread_or_connection_pool_exhaustion to " in english["rendered"]
    chinese = client.briefing({"text": text, "explain": True})
    assert chinese["hints"] == [] and all(c["basis"] == "prior" for c in chinese["causes"])
    assert all(c["probability"] == c["prior"] for c in chinese["causes"])
