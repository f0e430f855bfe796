"""Projector throughput with 1, 2 and 6 processes in one consumer group, on the same pre-produced ledger.

    python -m bench.projector_scaleout     # needs Kafka and PostgreSQL (make up); BENCH_SCALE_EVENTS (50k)

The ledger is produced once (6 partitions, 20 tenants, the bench generator's workload); each run projects
it into a fresh database with `opslore projector run --processes N` and is timed from start until every
event row is stored. Every run's projection must equal the 1-process run's (checksums). Writes
bench/results/projector-scaleout-<time>.json.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.run import applied, checksums, drop_database, fresh_database, fresh_topic, log, produce
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"


def project(db_url: str, topic: str, processes: int, expected: int) -> dict[str, Any]:
    env = os.environ | {"OPSLORE_DATABASE_URL": db_url, "OPSLORE_TOPIC": topic, "OPSLORE_DLQ_TOPIC": f"{topic}-dlq",
                        "OPSLORE_CONSUMER_GROUP": f"bench-{uuid.uuid4().hex[:6]}",
                        "OPSLORE_PROJECTOR_METRICS_PORT": "0"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "services.cli.main", "projector", "run", "--processes",
                             str(processes)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while (done := applied(db_url)) < expected:
            if time.perf_counter() - start > 900:
                raise TimeoutError(f"{processes} processes: {done}/{expected} after 900 s")
            time.sleep(0.25)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    seconds = time.perf_counter() - start
    return {"processes": processes, "events": expected, "seconds": round(seconds, 2),
            "events_per_s": round(expected / seconds)}


def main() -> None:
    s = get_settings()
    events = int(os.environ.get("BENCH_SCALE_EVENTS", "50000"))
    topic = fresh_topic(s, 6)
    produced = produce(s, topic, events)
    log(f"produced {produced}")
    runs, sums = [], {}
    for processes in (1, 2, 6):
        db_url, _ = fresh_database(s)
        try:
            runs.append(project(db_url, topic, processes, produced["events"]))
            sums[processes] = checksums(db_url)
            log(f"{runs[-1]}")
        finally:
            drop_database(s, db_url)
    out = {"at": datetime.now(UTC).isoformat(), "cores": os.cpu_count(), "produce": produced, "runs": runs,
           "identical_to_one_process": all(sums[p] == sums[1] for p in sums)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"projector-scaleout-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json").write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
