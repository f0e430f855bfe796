"""Briefing causes (contract v1.3) through the live stack: base rates from the tenant's approved incidents,
evidence-backed causes with their records, hints that follow them, uncategorised records grouped, and the
tenant's calibration (its own lived questions and its feedback) stored under RLS."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from schemas.api import BriefingRequest
from services.briefing import causes
from services.briefing.causes import TenantHistory
from services.briefing.causes_calibrator import YOUNG_INTERVAL, CausesCalibrator, lived_feedback
from services.briefing.service import BriefingService
from services.cli.client import ApiError, OpsloreClient
from services.common.auth import Principal
from services.common.db import Database
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration

HISTORY = [  # incident, category, service, signal
    ("INC-C1", "db_connection_pool", "checkout-api", "db_pool_saturation"),
    ("INC-C2", "db_connection_pool", "orders-api", "db_pool_wait_ms"),
    ("INC-C3", "db_connection_pool", "billing-api", "db_pool_exhausted_total"),
    ("INC-C4", "dns", "resolver", "coredns_servfail_total"),
    ("INC-C5", "disk_full", "ledger-db", "pg_wal_volume_free_bytes"),
    ("INC-C6", "certificate_expiry", "edge-proxy", "tls_handshake_failure"),
]


def learn(client: OpsloreClient, incident: str, category: str, service: str, signal: str) -> None:
    client.append(resolved_incident(incident, category=category, service=service, signal=signal))
    cand = eventually(lambda: client.candidates(incident_id=incident, state="pending"))[0]
    client.approve(str(cand["candidate_id"]))


def with_history(tenant_client: TenantFactory) -> OpsloreClient:
    client = tenant_client()
    for row in HISTORY:
        learn(client, *row)
    return client


@contextmanager
def briefing_service(settings: Settings) -> Iterator[BriefingService]:
    """A briefing service of this process over its own two-connection pool, closed after the test."""
    db = Database(settings.database_url, max_size=2)
    db.open()
    service = BriefingService(db, settings)
    try:
        yield service
    finally:
        service.close()
        db.close()


def check_shape(answer: dict[str, Any]) -> None:
    causes = answer["causes"]
    total = sum(c["probability"] for c in causes) + answer["novelty"] + answer["rest"]
    assert total == pytest.approx(1.0, abs=0.01)
    assert [c["probability"] for c in causes] == sorted((c["probability"] for c in causes), reverse=True)
    backed = [c for c in causes if c["basis"] == "evidence"]
    assert all(c["family_ids"] for c in backed)
    assert all(not c["family_ids"] for c in causes if c["basis"] == "prior")
    families = {f: i for i, c in enumerate(backed) for f in c["family_ids"]}
    positions = [families[h["family_id"]] for h in answer["hints"]]  # every hint is behind an evidence cause
    first = list(dict.fromkeys(positions))
    assert first == sorted(first)  # hints follow the causes' order


def test_a_tenant_without_history_answers_no_causes(tenant_client: TenantFactory) -> None:
    answer = tenant_client().briefing({"text": "checkout errors", "services": ["checkout-api"]})
    assert answer["causes"] == [] and answer["novelty"] == 1.0 and answer["hints"] == []
    assert answer["rendered"].startswith("No approved history yet")


def test_causes_carry_the_base_rates_and_the_evidence_behind_them(tenant_client: TenantFactory) -> None:
    client = with_history(tenant_client)
    expected, _ = TenantHistory({"db_connection_pool": 3, "dns": 1, "disk_full": 1, "certificate_expiry": 1}).priors()
    asked = client.briefing({"alert": {"name": "HighErrorRate"}, "services": ["edge-proxy"],
                             "signals": ["tls_handshake_failure"], "text": "tls_handshake_failure observed",
                             "explain": True})
    check_shape(asked)
    by = {c["category"]: c for c in asked["causes"]}
    assert {c: round(p, 4) for c, p in expected.items()} == {c: by[c]["prior"] for c in expected}
    top = asked["causes"][0]
    assert top["category"] == "certificate_expiry" and top["basis"] == "evidence"
    assert top["probability"] > top["prior"]
    assert asked["hints"] and asked["hints"][0]["root_cause_category"] == "certificate_expiry"
    assert "certificate_expiry: " in asked["rendered"] and "base rate" in asked["rendered"]
    assert asked["causes_explain"]["model"] in ("shipped", "tenant-calibrated")
    assert asked["causes_explain"]["features"]["certificate_expiry"]["identity"] > 0  # the alert matched
    unrelated = client.briefing({"text": "the marketing banner shows last year's colours",
                                 "services": ["brand-site"]})
    check_shape(unrelated)
    assert unrelated["hints"] == [] and all(c["basis"] == "prior" for c in unrelated["causes"])
    assert unrelated["rendered"].startswith("No specific history matches; this tenant's usual causes are "
                                            "db_connection_pool")
    stored = client.request("GET", f"/v1/briefings/{asked['briefing_id']}")
    assert stored["causes"] == asked["causes"]


def test_an_imported_postmortem_without_a_category_is_its_own_cause(tenant_client: TenantFactory) -> None:
    client = with_history(tenant_client)
    doc = ("# Search outage\n\n## Summary\nSearch returned empty results for an hour.\n\n## Impact\nUsers saw no "
           "results.\n\n## Root cause\nThe nightly index swap pointed the alias at an empty index.\n\n"
           "## Resolution\nPointed the alias back at the previous index.\n")
    imported = client.import_postmortem("markdown", doc, source_ref="search-outage.md")
    cand = eventually(lambda: client.candidates(incident_id=imported["incident_id"], state="pending"))[0]
    client.approve(str(cand["candidate_id"]))
    answer = client.briefing({"text": "search returns empty results after the nightly index swap", "limit": 10})
    check_shape(answer)
    loose = [c for c in answer["causes"] if c["category"].startswith("uncategorised: ")]
    assert len(loose) == 1 and "alias" in loose[0]["category"]


def test_the_tenant_calibrates_its_causes_under_rls_and_learns_from_feedback(
        tenant_client: TenantFactory, settings: Settings) -> None:
    client = with_history(tenant_client)
    agent = tenant_client(role="agent", tenant=getattr(client, "tenant"))  # noqa: B009
    with pytest.raises(ApiError) as err:
        agent.request("POST", "/v1/causes/calibration")
    assert err.value.status == 403
    with briefing_service(settings) as service:
        db = service.db
        calibrator = CausesCalibrator(service)
        before = len(calibrator.questions(getattr(client, "tenant"))[1])  # noqa: B009
        assert before == len(HISTORY) - 5  # every incident with five before it, asked against them
        answer = agent.briefing({"alert": {"name": "HighErrorRate"}, "services": ["edge-proxy"],
                                 "signals": ["tls_handshake_failure"], "text": "tls_handshake_failure observed"})
        agent.feedback(answer["briefing_id"], answer["hints"][0]["family_id"], "adopted", "INC-NOW")
        after = eventually(lambda: (n := len(calibrator.questions(getattr(client, "tenant"))[1])) > before  # noqa: B009
                           and n)
        assert after == before + 1
        # feedback on an incident approved into memory is not asked again: its record's own question asks it
        agent.feedback(answer["briefing_id"], answer["hints"][0]["family_id"], "refuted", "INC-C6")

        def landed() -> bool:
            with db.tenant_transaction(getattr(client, "tenant")) as cur:  # noqa: B009
                return any(f["incident_id"] == "INC-C6" for f in lived_feedback(cur))

        eventually(landed)
        lived = calibrator.questions(getattr(client, "tenant"))[1]  # noqa: B009
        assert len(lived) == after
        assert [q.history.records for q in lived] == sorted(q.history.records for q in lived)  # time order
        ran = client.request("POST", "/v1/causes/calibration")
        assert ran["questions"] == after and ran["model"]
        other = tenant_client()
        with db.tenant_transaction(getattr(other, "tenant")) as cur:  # noqa: B009
            cur.execute("SELECT count(*) AS n FROM causes_calibration")
            row = cur.fetchone()
            assert row is not None and row["n"] == 0  # RLS: the other tenant sees none of it
        with db.tenant_transaction(getattr(client, "tenant")) as cur:  # noqa: B009
            # one row per ranker model: a young tenant's background runs may have stored one for the lexical model
            # too, before its semantic index was ready
            cur.execute("SELECT questions FROM causes_calibration WHERE model = %s", (ran["model"],))
            assert [r["questions"] for r in cur.fetchall()] == [after]


def test_a_young_tenant_answers_behind_its_evidence_floor(tenant_client: TenantFactory, settings: Settings) -> None:
    client = with_history(tenant_client)
    tenant = getattr(client, "tenant")  # noqa: B009
    with briefing_service(settings) as service:
        db = service.db
        calibrator = CausesCalibrator(service)
        name, samples = calibrator.unrelated(tenant)
        assert name and len(samples) == len(HISTORY)  # every record has a record of another cause to be near
        # a young tenant's background run (this process's, or the background owner's: the same figures)
        with db.tenant_transaction(tenant) as cur:
            calibrator.model(cur, tenant, name)  # what is stored, and for how many records
        calibrator.refresh_if_stale(tenant, name, len(HISTORY))
        stored = eventually(lambda: (row := _stored(db, tenant)) is not None and row["records"] == len(HISTORY)
                            and row["model_doc"]["evidence_floor"] is not None and row)
        # the same samples, up to relevance's dependence on the time a run asks them (the background owner's may be
        # a moment later)
        assert stored["model_doc"]["evidence_floor"] == pytest.approx(causes.unrelated_floor(samples), rel=0.01)
        assert stored["model_doc"]["source"] == "shipped"  # too young to fit: the shipped weights behind the floor
        time.sleep(YOUNG_INTERVAL + 2)  # the background owner's trailing run of the burst, if any, has stored
        # what another process (the background owner) stores reaches this one's remembered model as soon as the
        # young tenant's size moved, not a `ttl` later
        calibrator._store(tenant, name, replace(causes.shipped_causes_model(name), evidence_floor=0.3), len(HISTORY),
                          0, {})
        with db.tenant_transaction(tenant) as cur:
            remembered = calibrator.model(cur, tenant, name, len(HISTORY))
        assert remembered.evidence_floor == 0.3
        other = CausesCalibrator(service)
        other._store(tenant, name, replace(causes.shipped_causes_model(name), evidence_floor=0.5), len(HISTORY) + 1,
                     0, {})
        with db.tenant_transaction(tenant) as cur:
            assert calibrator.model(cur, tenant, name, len(HISTORY)) == remembered  # same size: remembered
            assert calibrator.model(cur, tenant, name, len(HISTORY) + 1).evidence_floor == 0.5  # moved: read again
        other.close()
        # a floor above every record: the base rates themselves and no hint; an identity match still stands out
        service.causes_calibrator._store(tenant, name, replace(causes.shipped_causes_model(name), evidence_floor=1.0),
                                         len(HISTORY), 0, {})
        agent = Principal(key_id=None, tenant=tenant, project="default", role="agent", service="test")
        priors, p_new = TenantHistory({"db_connection_pool": 3, "dns": 1, "disk_full": 1,
                                       "certificate_expiry": 1}).priors()
        plain = service.brief(agent, BriefingRequest(text="pending database connections climbing on the checkout "
                                                          "api", services=["checkout-api"]))
        assert plain.hints == [] and all(c.basis == "prior" for c in plain.causes)
        assert plain.novelty == round(p_new, 4)
        assert {c.category: c.probability for c in plain.causes} == {c: round(p, 4) for c, p in priors.items()}
        same = service.brief(agent, BriefingRequest.model_validate({
            "alert": {"name": "HighErrorRate"}, "services": ["edge-proxy"], "signals": ["tls_handshake_failure"],
            "text": "tls_handshake_failure observed"}))
        assert same.causes[0].category == "certificate_expiry" and same.causes[0].basis == "evidence"


def test_a_tenant_of_a_few_records_answers_behind_the_floor_it_stored(tenant_client: TenantFactory) -> None:
    """Under MIN_HISTORY records no lived question is asked, yet the floor is stored under the ranker model its
    briefings rank with, so they apply it (it once went under "lexical" while briefings used the embedding)."""
    client = tenant_client()
    few = HISTORY[3:]  # three records, three causes: samples, no lived question
    for row in few:
        learn(client, *row)
    run = client.calibrate_causes()  # in the API process, with the ranker its briefings use
    floor = run["causes_model"]["evidence_floor"]
    assert run["report"]["questions"] == 0 and run["report"]["unrelated_samples"] == len(few)
    assert floor is not None
    asked = client.briefing({"text": "pods restarting after the node pool upgrade", "explain": True})
    assert asked["causes_explain"]["model"] == "shipped"
    assert asked["causes_explain"]["evidence_floor"] == pytest.approx(floor, rel=0.01)


def test_a_young_model_over_one_cause_gets_the_floor_of_the_history_as_it_is(tenant_client: TenantFactory,
                                                                             settings: Settings) -> None:
    """A young tenant whose model was computed while it had one cause has no floor; once a record of another cause
    is approved, a briefing measures the floor of the history as it is (`floor_now`, what the next run stores)
    rather than answer over no floor until that run lands."""
    client = tenant_client()
    for row in HISTORY[:3]:  # one cause
        learn(client, *row)
    tenant = getattr(client, "tenant")  # noqa: B009
    with briefing_service(settings) as service:
        calibrator = CausesCalibrator(service)
        name, samples = calibrator.unrelated(tenant)
        assert name is None and samples == []  # one cause: nothing is asked, nothing known of how alike they look
        name = service.policy(datetime.now(UTC), service.semantic is not None).model.name
        young = replace(causes.shipped_causes_model(name), young=True)
        assert calibrator.floor_now(tenant, young, 3) == young
        learn(client, *HISTORY[3])  # a second cause
        one_cause = TenantHistory({"db_connection_pool": 3})
        two_causes = TenantHistory({"db_connection_pool": 3, "dns": 1})
        assert not causes.floor_pending(young, one_cause) and causes.floor_pending(young, two_causes)
        measured = calibrator.floor_now(tenant, young, 4)
        _, now = calibrator.unrelated(tenant)
        assert len(now) == 4 and measured.evidence_floor == pytest.approx(causes.unrelated_floor(now), rel=0.01)
        assert not causes.floor_pending(measured, two_causes)
        assert calibrator.floor_now(tenant, young, 4) == measured  # measured once per history size
        calibrator.close()


def _stored(db: Database, tenant: str) -> dict[str, Any] | None:
    with db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT model_doc, records FROM causes_calibration")
        row = cur.fetchone()
    return dict(row) if row else None


_RECOUNT = """SELECT v.root_cause_category AS category, sum(greatest(cardinality(v.source_incidents), 1)) AS n
  FROM memory_families f JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
  WHERE f.state = 'active' AND v.root_cause_category IS NOT NULL GROUP BY v.root_cause_category"""


def test_cause_tallies_follow_every_move_of_the_families(tenant_client: TenantFactory, settings: Settings) -> None:
    """The base rates come from `cause_tallies`, which triggers keep (migration 0030): after approvals, a
    recurrence of a family, a reviewer's category, a supersede, a retraction and a rollback, the
    tallies equal the counts recomputed from the families' current versions, and the briefing's priors say so."""
    client = with_history(tenant_client)
    tenant = getattr(client, "tenant")  # noqa: B009
    learn(client, "INC-C7", "dns", "resolver", "coredns_servfail_total")  # a recurrence of INC-C4, or a new family
    client.append(resolved_incident("INC-C8", category="db_connection_pool", service="search-api",
                                    signal="db_pool_saturation"))
    cand = eventually(lambda: client.candidates(incident_id="INC-C8", state="pending"))[0]
    client.approve(str(cand["candidate_id"]), edits={"root_cause_category": "connection_leak"},
                   resolution="new_family")  # the reviewer's category, not the draft's
    records = {i: r for r in client.records() for i in r["source_incidents"]}
    dns = str(records["INC-C4"]["family_id"])
    client.record_op(str(records["INC-C1"]["family_id"]), "supersede", {"summary": "pool too small", "reason": "x"})
    client.record_op(str(records["INC-C5"]["family_id"]), "retract", {"reason": "not a real incident"})
    client.record_op(dns, "supersede", {"summary": "resolver overloaded", "reason": "clarity"})
    client.record_op(dns, "rollback", {"to_version": 1, "reason": "undo"})
    db = Database(settings.database_url, max_size=1)
    db.open()
    try:
        with db.tenant_transaction(tenant) as cur:
            cur.execute(_RECOUNT)
            recount = {r["category"]: int(r["n"]) for r in cur.fetchall()}
            cur.execute("SELECT category, incidents FROM cause_tallies WHERE incidents <> 0")
            tallies = {r["category"]: int(r["incidents"]) for r in cur.fetchall()}
        with db.tenant_transaction(getattr(tenant_client(), "tenant")) as cur:  # noqa: B009
            cur.execute("SELECT count(*) AS n FROM cause_tallies")
            row = cur.fetchone()
            assert row is not None and row["n"] == 0  # RLS: another tenant reads none of them
    finally:
        db.close()
    assert tallies == recount
    # INC-C1's supersede restated no root cause, so its conclusion (and category) stays in history; the rollback
    # of the dns family went back before the recurrence INC-C7 joined it; INC-C5 was retracted
    assert recount == {"db_connection_pool": 2, "connection_leak": 1, "dns": 1, "certificate_expiry": 1}
    answer = client.briefing({"text": "dns resolution failures on the resolver", "services": ["resolver"]})
    expected, _ = TenantHistory({**recount, "uncategorised: pool too small": 1}).priors()
    assert {c["category"]: c["prior"] for c in answer["causes"]} == {c: round(p, 4) for c, p in expected.items()}


def test_one_category_written_three_ways_is_one_cause_and_one_family(tenant_client: TenantFactory) -> None:
    """An agent writes `DB Connection Pool`, a reviewer `db-connection-pool`, an importer `db_connection_pool`:
    each approval takes the tenant's first spelling, so a recurrence joins its family and the base rate is
    one cause's, not three causes' at a third each. A category new to the tenant keeps its writer's spelling."""
    client = tenant_client()
    learn(client, "INC-S1", "DB Connection Pool", "checkout-api", "db_pool_saturation")
    learn(client, "INC-S2", "db_connection_pool", "checkout-api", "db_pool_wait_ms")  # a recurrence: same service
    learn(client, "INC-S3", "dns", "resolver", "coredns_servfail_total")
    client.append(resolved_incident("INC-S4", category="DNS failure", service="orders-api",
                                    signal="db_pool_exhausted_total"))
    cand = eventually(lambda: client.candidates(incident_id="INC-S4", state="pending"))[0]
    client.approve(str(cand["candidate_id"]), edits={"root_cause_category": "db-connection-pool"},
                   resolution="new_family")
    records = {i: r for r in client.records() for i in r["source_incidents"]}
    assert records["INC-S2"]["family_id"] == records["INC-S1"]["family_id"]  # the recurrence found its family
    assert {records[i]["root_cause_category"] for i in ("INC-S1", "INC-S2", "INC-S4")} == {"DB Connection Pool"}
    assert records["INC-S3"]["root_cause_category"] == "dns"
    answer = client.briefing({"text": "checkout errors", "services": ["checkout-api"]})
    check_shape(answer)
    expected, _ = TenantHistory({"DB Connection Pool": 3, "dns": 1}).priors()
    assert {c["category"]: c["prior"] for c in answer["causes"]} == {c: round(p, 4) for c, p in expected.items()}


def test_a_deployment_sets_the_price_of_a_longer_investigation(tenant_client: TenantFactory,
                                                               settings: Settings) -> None:
    """`OPSLORE_CAUSES_WORSE_COST` prices the evidence of every tenant, the shipped price without it; a tenant too
    young for its guard answers at that price too (behind its evidence floor), before its first run and after it,
    and its exact recurrence keeps its hint."""
    client = with_history(tenant_client)
    tenant = getattr(client, "tenant")  # noqa: B009
    time.sleep(YOUNG_INTERVAL + 2)  # the background owner's runs of the history's burst have stored
    db = Database(settings.database_url, max_size=2)
    db.open()
    services = {price: BriefingService(db, settings.model_copy(update={"causes_worse_cost": price}))
                for price in (None, 0.5)}
    try:
        plain, cheap = CausesCalibrator(services[None]), CausesCalibrator(services[0.5])
        name, _ = plain.unrelated(tenant)
        assert name is not None
        shipped = causes.shipped_causes_model(name, concept=False)
        assert plain.priced(shipped).worse_cost == causes.shipped_worse_cost() != 0.5
        assert cheap.priced(shipped) == replace(shipped, worse_cost=0.5)
        _, model, report = cheap.run(tenant)
        assert report["guard_questions"] == 0 and model.worse_cost == 0.5  # six records: too young to judge
        assert model.evidence_floor is not None
        with db.tenant_transaction(tenant) as cur:
            cur.execute("SELECT model_doc FROM causes_calibration WHERE model = %s", (name,))
            row = cur.fetchone()
            assert row is not None and row["model_doc"]["worse_cost"] == 0.5
            assert cheap.model(cur, tenant, name, len(HISTORY)).worse_cost == 0.5
        _, model, _ = plain.run(tenant)  # the deployment's own run: the shipped price
        assert model.worse_cost == causes.shipped_worse_cost()
        answer = eventually(lambda: (a := client.briefing({
            "alert": {"name": "HighErrorRate"}, "services": ["edge-proxy"], "signals": ["tls_handshake_failure"],
            "text": "tls_handshake_failure observed", "explain": True}))["causes_explain"]["worse_cost"] ==
            causes.shipped_worse_cost() and a, timeout=90.0, interval=1.0)  # the API remembers a model for 60 s
        assert answer["causes"][0]["category"] == "certificate_expiry" and answer["causes"][0]["basis"] == "evidence"
        assert answer["hints"][0]["root_cause_category"] == "certificate_expiry"
    finally:
        for service in services.values():
            service.close()
        db.close()
