"""The causes calibrator's walk through a tenant's history, per run (pure CPU, no database).

A calibration run asks up to `causes_calibrator.SAMPLE` (300) lived questions, each against every family as it was
then and with the incidents per cause that shared its services then. `Lived.as_of` and `Lived.sharing` compute both
from the first incident at every question (the specification); `LivedWalk` pays each incident once. The run takes
its CPU from the briefings on the same cores (the indexer runs calibrations beside the API), so this bench reports
the CPU seconds of the walk per run at 1k, 10k and 100k versions (families recurring, services changing), with
`BENCH_WALK_SIZES` to change them; the specification is timed up to 10k (it grows with records x questions).
JSON in bench/results/calibration-walk-<time>.json.
"""

from __future__ import annotations

import os
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.run import log, write_result
from services.briefing.causes_calibrator import SAMPLE, Lived, LivedWalk

SIZES = [int(n) for n in os.environ.get("BENCH_WALK_SIZES", "1000,10000,100000").split(",")]
SPEC_MAX = 10_000  # the specification's cost grows with records x questions: timed up to this size


def history(size: int, seed: int = 38) -> Lived:
    """`size` versions of 4/5 size families (a fifth of the incidents recur) over 40 services and 30 causes."""
    rng = random.Random(seed)
    at = datetime(2020, 1, 1, tzinfo=UTC)
    rows: list[dict[str, Any]] = []
    versions: dict[str, int] = {}
    for i in range(size):
        family = f"f{rng.randrange(max(size * 4 // 5, 1))}"
        versions[family] = versions.get(family, 0) + 1
        cause = f"c{rng.randrange(30)}"
        rows.append({"family_id": family, "version": versions[family], "observed_at": at + timedelta(minutes=i),
                     "valid_from": at, "services": rng.sample([f"s{k}" for k in range(40)], rng.randrange(1, 3)),
                     "root_cause_category": cause, "root_cause": cause, "summary": cause, "family_state": "active"})
    newest = {r["family_id"]: r for r in rows}
    return Lived.of(rows, list(newest.values()))


def steps(lived: Lived) -> list[tuple[int, list[str]]]:
    """The run's questions: the newest SAMPLE versions, each asked with its own services."""
    start = max(5, len(lived.rows) - SAMPLE)
    return [(n, list(lived.rows[n]["services"])) for n in range(start, len(lived.rows))]


def walk_seconds(lived: Lived) -> float:
    started = time.process_time()
    walk = LivedWalk(lived)
    for n, services in steps(lived):
        walk.advance(n)
        walk.sharing(services)
    return time.process_time() - started


def spec_seconds(lived: Lived) -> float:
    started = time.process_time()
    for n, services in steps(lived):
        lived.as_of(n)
        lived.sharing(n, services)
    return time.process_time() - started


def main() -> None:
    doc: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(), "questions_per_run": SAMPLE, "sizes": {}}
    for size in SIZES:
        lived = history(size)
        row: dict[str, Any] = {"walk_cpu_s": round(walk_seconds(lived), 4)}
        if size <= SPEC_MAX:
            row["recomputed_cpu_s"] = round(spec_seconds(lived), 4)
            row["speedup"] = round(row["recomputed_cpu_s"] / max(row["walk_cpu_s"], 1e-6), 1)
        doc["sizes"][str(size)] = row
        log(f"calibration walk at {size} versions: {row}")
    write_result("calibration-walk", doc)


if __name__ == "__main__":
    main()
