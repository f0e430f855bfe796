"""Projector scale-out on Kafka's consumer group (real Kafka + PostgreSQL, fresh topic and databases).

Three projector processes share a 6-partition ledger while ~20k events stream in; one is SIGKILLed and a
fourth joins mid-stream. Afterwards every projection table equals a single-process run over the same
ledger, row for row (a double application would show in the feedback counters and episode bodies), and the
partition handovers are in the processes' logs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable

import pytest

from services.common.settings import Settings
from tests.integration.helpers import eventually
from tests.integration.test_projector_recovery import applied, build_ledger, produce, projector, snapshot

pytestmark = pytest.mark.integration
INCIDENTS_PER_TENANT = 950  # 3 tenants x 950 incidents x 7 events = 19,950 events


def start(settings: Settings, db_url: str, topic: str, dlq: str, group: str) -> subprocess.Popen[bytes]:
    env = os.environ | {"OPSLORE_DATABASE_URL": db_url, "OPSLORE_TOPIC": topic, "OPSLORE_DLQ_TOPIC": dlq,
                        "OPSLORE_CONSUMER_GROUP": group, "OPSLORE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
                        "OPSLORE_PROJECTOR_METRICS_PORT": "0"}
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", "projector", "run"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_rebalance_under_load_equals_a_single_process_run(settings: Settings, fresh_database: Callable[[], str],
                                                          fresh_topic: Callable[..., str]) -> None:
    topic, dlq = fresh_topic(6), fresh_topic(1)
    records = build_ledger(INCIDENTS_PER_TENANT)
    total = len(records)
    shared_db, single_db = fresh_database(), fresh_database()
    group = f"scale-{uuid.uuid4().hex[:6]}"
    procs = [start(settings, shared_db, topic, dlq, group) for _ in range(3)]
    streamer = threading.Thread(target=produce, args=(settings, topic, records))
    try:
        streamer.start()
        eventually(lambda: applied(shared_db) > total // 4, timeout=120, interval=0.2)
        procs[0].send_signal(signal.SIGKILL)  # no goodbye: its partitions move after the session timeout
        procs.append(start(settings, shared_db, topic, dlq, group))
        streamer.join(timeout=300)
        eventually(lambda: applied(shared_db) >= total, timeout=240, interval=0.5)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        logs = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert applied(shared_db) == total  # nothing lost, nothing recorded twice
    handovers = sum(log.count("partitions assigned") for log in logs)
    assert handovers >= 4, logs[-1][-2000:]  # initial assignments plus the rebalances after the kill and the join

    with projector(settings, single_db, topic, dlq, f"single-{uuid.uuid4().hex[:6]}") as proc:
        eventually(lambda: proc.poll() is None and applied(single_db) >= total, timeout=240, interval=0.5)
    assert snapshot(shared_db) == snapshot(single_db)
