"""Crash safety and rebuild of the projector, on a fresh topic and fresh databases (real Kafka + PostgreSQL).

- SIGKILL while the projector is part-way through the ledger, restart: the tables equal those of a clean
  run, row for row, and no event is applied twice (feedback counters would double otherwise).
- Empty the projection and replay from offset 0: identical rows.
- An undecodable record goes to the dead-letter topic and the partition keeps moving.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import orjson
import psycopg
import pytest
from kafka import KafkaConsumer

from schemas.ledger import LedgerRecord
from services.common.kafka import plain_producer, producer_factory
from services.common.settings import Settings
from services.gateway.service import LedgerGateway
from services.projector.runner import rebuild
from services.projector.store import PROJECTION_TABLES
from tests.factories import raw_event, record, resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
TENANTS = ("acme", "globex", "initech")
ORDER = {"ledger_events": "event_id", "episodes": "incident_id", "candidates": "candidate_id",
         "misleading_signals": "event_id", "family_feedback": "family_id"}


def build_ledger(incidents_per_tenant: int = 60) -> list[LedgerRecord]:
    records: list[LedgerRecord] = []
    families = [uuid.uuid4() for _ in range(5)]
    for tenant in TENANTS:
        for i in range(incidents_per_tenant):
            events = resolved_incident(f"INC-{i}", verify=i % 4 != 0)
            events.insert(2, raw_event("signal.misleading", f"INC-{i}", {"signal": "cpu_high", "reason": "noise"}))
            events.append(raw_event("briefing.feedback", "CURRENT", {
                "briefing_id": str(uuid.uuid4()), "family_id": str(families[i % 5]), "verdict": "adopted"}))
            records.extend(record(e, tenant=tenant) for e in events)
    return records


def produce(settings: Settings, topic: str, records: list[LedgerRecord]) -> None:
    gateway = LedgerGateway(producer_factory(settings, "test-gateway"), topic)
    try:
        for start in range(0, len(records), 400):
            gateway.produce(records[start:start + 400])
    finally:
        gateway.close()


@contextmanager
def projector(settings: Settings, db_url: str, topic: str, dlq: str, group: str) -> Iterator[subprocess.Popen[bytes]]:
    env = os.environ | {"OPSLORE_DATABASE_URL": db_url, "OPSLORE_TOPIC": topic, "OPSLORE_DLQ_TOPIC": dlq,
                        "OPSLORE_CONSUMER_GROUP": group, "OPSLORE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
                        "OPSLORE_PROJECTOR_BATCH": "100"}  # many transactions, so a kill lands between two
    proc = subprocess.Popen([sys.executable, "-m", "services.cli.main", "projector", "run"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


def applied(db_url: str) -> int:
    total = 0
    with psycopg.connect(db_url) as conn:
        for tenant in TENANTS:
            conn.execute("SELECT set_config('opslore.tenant', %s, false)", (tenant,))
            total += conn.execute("SELECT count(*) FROM ledger_events").fetchone()[0]  # type: ignore[index]
    return total


def progressed(db_url: str, floor: int) -> bool:
    return applied(db_url) > floor


def snapshot(db_url: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    with psycopg.connect(db_url) as conn:
        for tenant in TENANTS:
            conn.execute("SELECT set_config('opslore.tenant', %s, false)", (tenant,))
            for table in PROJECTION_TABLES:
                rows = conn.execute(f"SELECT * FROM {table} ORDER BY {ORDER[table]}").fetchall()
                out[f"{tenant}.{table}"] = rows
    return out


def wait_until_applied(db_url: str, expected: int, proc: subprocess.Popen[bytes]) -> None:
    def done() -> bool:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else "projector died"
        return applied(db_url) >= expected
    eventually(done, timeout=120, interval=0.2)
    time.sleep(1.0)  # anything beyond `expected` would be a double application; give it time to show


@pytest.fixture
def ledger(settings: Settings, fresh_topic: Callable[..., str]) -> tuple[str, str, int]:
    topic, dlq = fresh_topic(3), fresh_topic(1)
    records = build_ledger()
    produce(settings, topic, records)
    produce(settings, topic, records[:50])  # redelivered duplicates: must be no-ops
    return topic, dlq, len(records)


def test_sigkill_mid_run_then_restart_equals_a_clean_run(
    settings: Settings, fresh_database: Callable[[], str], ledger: tuple[str, str, int],
) -> None:
    topic, dlq, total = ledger
    clean_db, crash_db = fresh_database(), fresh_database()
    with projector(settings, clean_db, topic, dlq, f"clean-{uuid.uuid4().hex[:6]}") as proc:
        wait_until_applied(clean_db, total, proc)

    group = f"crash-{uuid.uuid4().hex[:6]}"
    kills = 0
    for attempt in range(3):  # kill it part-way, up to three times
        floor = attempt * total // 4
        with projector(settings, crash_db, topic, dlq, group) as proc:
            eventually(partial(progressed, crash_db, floor), timeout=60, interval=0.01)
            if applied(crash_db) < total:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
    assert kills >= 1, "the projector finished before it could be killed; make the ledger larger"
    with projector(settings, crash_db, topic, dlq, group) as proc:
        wait_until_applied(crash_db, total, proc)

    assert applied(crash_db) == total
    assert snapshot(crash_db) == snapshot(clean_db)


def test_rebuild_from_offset_zero_reproduces_identical_rows(
    settings: Settings, fresh_database: Callable[[], str], ledger: tuple[str, str, int],
) -> None:
    topic, dlq, total = ledger
    db = fresh_database()
    group = f"rebuild-{uuid.uuid4().hex[:6]}"
    with projector(settings, db, topic, dlq, group) as proc:
        wait_until_applied(db, total, proc)
    before = snapshot(db)
    owner_url = db.replace(settings.database_url.rsplit("/", 1)[0].split("//", 1)[1].split("@")[0],
                           settings.owner_database_url.rsplit("/", 1)[0].split("//", 1)[1].split("@")[0])
    rebuild(settings.model_copy(update={"consumer_group": group}), owner_url)
    assert applied(db) == 0
    with projector(settings, db, topic, dlq, group) as proc:
        wait_until_applied(db, total, proc)
    assert snapshot(db) == before


def test_undecodable_record_goes_to_the_dead_letter_topic(
    settings: Settings, fresh_database: Callable[[], str], fresh_topic: Callable[..., str],
) -> None:
    topic, dlq = fresh_topic(1), fresh_topic(1)
    producer = plain_producer(settings, "test-raw")
    producer.send(topic, key=b"acme/INC-X", value=b"{definitely not an envelope")
    tampered = orjson.loads(record(resolved_incident("INC-T")[0], tenant="acme").to_json())
    tampered["payload"]["title"] = "edited after hashing"
    producer.send(topic, key=b"acme/INC-T", value=orjson.dumps(tampered))
    producer.flush()
    producer.close()
    poison = record(raw_event("observation.recorded", "INC-Y", {"source": "logs", "summary": "ok",
                                                                 "extra": "nul \x00 inside"}), tenant="acme")
    good = [record(e, tenant="acme") for e in resolved_incident("INC-Y")]
    produce(settings, topic, [*good[:2], poison, *good[2:]])  # one batch: fast path fails, slow path isolates
    db = fresh_database()
    with projector(settings, db, topic, dlq, f"dlq-{uuid.uuid4().hex[:6]}") as proc:
        wait_until_applied(db, len(good), proc)
    consumer = KafkaConsumer(dlq, bootstrap_servers=settings.kafka_bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    letters = [orjson.loads(m.value) for m in consumer]
    consumer.close()
    reasons = {letter["offset"]: letter["reason"] for letter in letters}
    assert len(letters) == 3
    assert reasons[0].startswith("undecodable") and letters[0]["value"] == "{definitely not an envelope"
    assert "content_hash does not match" in reasons[1]
    assert reasons[4].startswith("projection failed")  # offsets 2-3 good, 4 the poison (after a txn marker)
    assert applied(db) == len(good)


def test_the_loop_restarts_itself_after_failures_with_no_loss_and_no_double_apply(
    settings: Settings, fresh_database: Callable[[], str], ledger: tuple[str, str, int],
) -> None:
    """A failure before the PostgreSQL commit (the batch must be read again) and one after it (the batch
    must not be applied again): the runner restarts its consumer by itself and ends equal to a clean run."""
    import threading

    from services.common.db import Database
    from services.projector.runner import ProjectorRunner

    topic, dlq, total = ledger
    clean_db, db_url = fresh_database(), fresh_database()
    with projector(settings, clean_db, topic, dlq, f"clean-{uuid.uuid4().hex[:6]}") as proc:
        wait_until_applied(clean_db, total, proc)
    db = Database(db_url, max_size=2)
    db.open()
    runner = ProjectorRunner(settings.model_copy(update={"topic": topic, "dlq_topic": dlq, "projector_batch": 100,
                                                         "consumer_group": f"loop-{uuid.uuid4().hex[:6]}"}), db)
    failures = {"before_commit": 0, "after_commit": 0}
    project, commit_kafka = runner._project, runner._commit_kafka

    def failing_project(records: list[Any]) -> Any:
        if failures["before_commit"] == 0 and applied(db_url) > 0:
            failures["before_commit"] += 1
            raise psycopg.OperationalError("simulated: the database went away mid-batch")
        return project(records)

    def failing_commit(offsets: dict[int, int]) -> None:
        if failures["after_commit"] == 0 and applied(db_url) > total // 3:
            failures["after_commit"] += 1
            raise RuntimeError("simulated: crash after the projection committed")
        commit_kafka(offsets)

    runner._project, runner._commit_kafka = failing_project, failing_commit  # type: ignore[method-assign]
    thread = threading.Thread(target=runner.run_forever, daemon=True)
    thread.start()
    try:
        eventually(lambda: applied(db_url) >= total, timeout=120, interval=0.2)
        time.sleep(1.0)
    finally:
        runner.stop_event.set()
        thread.join(timeout=30)
        db.close()
    assert failures == {"before_commit": 1, "after_commit": 1}
    assert applied(db_url) == total
    assert snapshot(db_url) == snapshot(clean_db)
