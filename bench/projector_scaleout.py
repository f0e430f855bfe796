"""Projector throughput with 1, 2 and 6 processes in one consumer group, on the same pre-produced ledger.

    python -m bench.projector_scaleout     # needs Kafka and PostgreSQL (make up); BENCH_SCALE_EVENTS (50k)

The ledger is produced once (6 partitions, 20 tenants, the bench generator's workload); each run projects
it into a fresh database with `opslore projector run --processes N` and is timed from start until the
stored offsets reach the topic's end (`bench.run.run_processes`). Every run's projection must equal the
1-process run's (checksums). Writes bench/results/projector-scaleout-<time>.json.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

from bench.run import checksums, drop_database, fresh_database, fresh_topic, log, produce, run_processes
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"


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
            runs.append(run_processes(s, db_url, topic, f"bench-{uuid.uuid4().hex[:6]}", processes,
                                      produced["events"]))
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
