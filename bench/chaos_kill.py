"""SIGKILL loop: the projector process is killed again and again while events stream into the ledger.

`python -m bench.chaos_kill` (part of `make chaos`): a fresh topic and two fresh databases; a producer
thread appends CHAOS_EVENTS events (default 100,000) through the gateway's transactional path while a
`opslore projector run` process is SIGKILLed CHAOS_KILLS times (default 20) at random moments and started
again; then it finishes. A clean, uninterrupted projector fills the second database from the same topic.
Every projection table must be identical in both (checksums), and no event applied twice (the tables
would differ: feedback counters and episode event counts count every application). JSON in bench/results/.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.run import OUT, applied, checksums, drop_database, fresh_database, fresh_topic, log, produce, run_projector
from services.common.settings import Settings, get_settings

EVENTS = int(os.environ.get("CHAOS_EVENTS", 100_000))
KILLS = int(os.environ.get("CHAOS_KILLS", 20))


def start_projector(settings: Settings, db_url: str, topic: str, group: str) -> subprocess.Popen[bytes]:
    env = os.environ | {"OPSLORE_DATABASE_URL": db_url, "OPSLORE_TOPIC": topic, "OPSLORE_DLQ_TOPIC": f"{topic}-dlq",
                        "OPSLORE_CONSUMER_GROUP": group, "OPSLORE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap}
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", "projector", "run"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_loop(settings: Settings, db_url: str, topic: str, producing: threading.Thread) -> dict[str, Any]:
    group, rng, kills = f"chaos-{uuid.uuid4().hex[:6]}", random.Random(7), 0
    start = time.perf_counter()
    while kills < KILLS:
        proc = start_projector(settings, db_url, topic, group)
        floor, deadline = applied(db_url), time.monotonic() + 60
        while applied(db_url) == floor and time.monotonic() < deadline and (producing.is_alive() or floor < EVENTS):
            time.sleep(0.05)  # wait until this run has committed at least one batch ...
        time.sleep(rng.uniform(0.0, 1.5))  # ... then kill it at a random moment, mid-batch as often as not
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        state = "running" if producing.is_alive() else "done"
        log(f"chaos: kill {kills}/{KILLS}, {applied(db_url)} applied, producer {state}")
    producing.join()
    proc = start_projector(settings, db_url, topic, group)
    try:
        deadline = time.monotonic() + 900
        while applied(db_url) < EVENTS and time.monotonic() < deadline:
            time.sleep(1.0)
        time.sleep(3.0)  # anything beyond EVENTS would be a double application; let it show
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"kills": kills, "seconds": round(time.perf_counter() - start, 1), "applied": applied(db_url)}


def main() -> None:
    settings = get_settings()
    topic = fresh_topic(settings)
    chaos_db, _ = fresh_database(settings)
    clean_db, _ = fresh_database(settings)
    try:
        produced: dict[str, Any] = {}
        producing = threading.Thread(target=lambda: produced.update(produce(settings, topic, EVENTS)))
        producing.start()
        log(f"chaos: streaming {EVENTS} events while killing the projector {KILLS} times")
        chaos = kill_loop(settings, chaos_db, topic, producing)
        log("chaos: clean projection of the same topic")
        clean = run_projector(settings, clean_db, topic, f"clean-{uuid.uuid4().hex[:6]}", produced["events"])
        identical = checksums(chaos_db) == checksums(clean_db)
        result = {"started_at": datetime.now(UTC).isoformat(), "events": produced["events"], "produce": produced,
                  "chaos": chaos, "clean": clean, "identical_to_clean_run": identical,
                  "passed": identical and chaos["applied"] == produced["events"] and chaos["kills"] >= KILLS}
    finally:
        drop_database(settings, chaos_db)
        drop_database(settings, clean_db)
    OUT.mkdir(parents=True, exist_ok=True)
    path = Path(OUT) / f"chaos-kill-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=2), encoding="utf-8")
    log(f"chaos: {json.dumps(result)}")
    if not result["passed"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
