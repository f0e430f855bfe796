"""What the causes cost a briefing: wall and thread CPU inside the causes steps against the whole `brief()`.

The goal (#38) is a briefing p95 with causes within 10% of the briefing before them. Comparing two code versions'
p95 on this machine is noisier than the goal (docs/performance.md: up to 1.7x between runs of the same code), so
this bench measures the share from inside one process, where the noise cancels: 10k records in the queried tenant
(`bench.run.load_records`), embedding off, 300 never-asked questions per round, three rounds. The causes steps are
`BriefingService._causes` (evidence per cause, the tenant's model, the posterior, the basis), the tenant's cause
history, `causes.follow_causes` (hints after causes) and the causes' part of `render`. JSON in
bench/results/causes-share-<time>.json.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg

from bench.run import fresh_database, load_records, log, queries, write_result
from services.briefing import causes as causes_module
from services.briefing import render as render_module
from services.briefing import service as service_module
from services.briefing.history import CauseHistories
from services.briefing.service import BriefingService
from services.common.auth import Principal
from services.common.db import Database
from services.common.settings import Settings
from services.lexicon import analyzer

RECORDS = int(os.environ.get("BENCH_CAUSES_RECORDS", "10000"))
QUESTIONS, ROUNDS = 300, 3
F = TypeVar("F", bound=Callable[..., Any])


class Stopwatch:
    """Wall and thread CPU accumulated inside the wrapped functions (not re-entered by one another)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def wrap(self, fn: F) -> F:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall += time.perf_counter() - wall
                self.cpu += time.thread_time() - cpu
        return timed  # type: ignore[return-value]


def main() -> None:
    settings = Settings().model_copy(update={"embedding": "off"})
    db_url, owner_url = fresh_database(settings)
    load_records(db_url, "bench-q", 0, RECORDS, 1)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")
    db = Database(db_url, max_size=2)
    db.open()
    watch = Stopwatch()
    service_module.BriefingService._causes = watch.wrap(BriefingService._causes)  # type: ignore[method-assign]
    causes_module.follow_causes = watch.wrap(causes_module.follow_causes)  # the service calls it through the module
    render_module.render_causes = watch.wrap(render_module.render_causes)
    CauseHistories.get = watch.wrap(CauseHistories.get)  # type: ignore[method-assign]
    service = BriefingService(db, settings)
    analyzer.warm()
    gc.freeze()
    who = Principal(key_id=None, tenant="bench-q", project=None, role="agent")
    for q in queries(20):
        service.brief(who, q)
    time.sleep(3)  # the tenant's first calibration runs in a background thread: let it finish
    rounds = []
    for r in range(ROUNDS):
        watch.wall = watch.cpu = 0.0
        wall = cpu = 0.0
        latencies = []
        for q in queries(QUESTIONS, offset=10_000 * (r + 1)):
            w, c = time.perf_counter(), time.thread_time()
            service.brief(who, q)
            latencies.append((time.perf_counter() - w) * 1000)
            wall += time.perf_counter() - w
            cpu += time.thread_time() - c
        latencies.sort()
        row = {"brief_wall_ms": round(wall / QUESTIONS * 1000, 2), "brief_cpu_ms": round(cpu / QUESTIONS * 1000, 2),
               "p95_ms": round(latencies[int(0.95 * QUESTIONS) - 1], 1),
               "causes_wall_ms": round(watch.wall / QUESTIONS * 1000, 3),
               "causes_cpu_ms": round(watch.cpu / QUESTIONS * 1000, 3),
               "causes_share_of_wall": round(watch.wall / wall, 3), "causes_share_of_cpu": round(watch.cpu / cpu, 3)}
        rounds.append(row)
        log(f"causes share, round {r + 1}: {row}")
    db.close()
    with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{db_url.rsplit("/", 1)[1]}" WITH (FORCE)')
    write_result("causes-share", {"started_at": datetime.now(UTC).isoformat(), "records": RECORDS,
                                  "questions_per_round": QUESTIONS, "rounds": rounds})


if __name__ == "__main__":
    main()
