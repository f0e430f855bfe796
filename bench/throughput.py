"""Briefings per second against the running API at 1, 8 and 32 concurrent clients, next to a no-op endpoint.

    python -m bench.throughput      # needs the running stack (make up); OPSLORE_API_WORKERS sets its processes

A fresh tenant learns BENCH_TP_INCIDENTS (40) incidents through the real pipeline; then, for each client
count, that many threads (one HTTP connection each) ask briefings for BENCH_TP_SECONDS (8) seconds, and
the same for GET /healthz. Writes bench/results/throughput-<time>.json.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.mcp import learn, questions
from bench.run import percentiles
from services.cli.client import OpsloreClient
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"


def load(url: str, key: str, clients: int, seconds: float, briefing: bool) -> dict[str, Any]:
    asks = questions(200)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    stop = time.monotonic() + seconds

    def worker(i: int) -> None:
        with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {key}"}) as http:
            n = 0
            while time.monotonic() < stop:
                start = time.perf_counter()
                r = http.post("/v1/briefings", json=asks[(i + n) % len(asks)]) if briefing else http.get("/healthz")
                latencies[i].append((time.perf_counter() - start) * 1000)
                errors[i] += r.status_code != 200
                n += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [x for per in latencies for x in per]
    return {"clients": clients, "per_s": round(len(flat) / (time.monotonic() - began), 1), "errors": sum(errors),
            "ms": percentiles(flat)}


def main() -> None:
    s = get_settings()
    admin = OpsloreClient(s.api_url, s.admin_token)
    _, key = learn(admin, int(os.environ.get("BENCH_TP_INCIDENTS", "40")))
    seconds = float(os.environ.get("BENCH_TP_SECONDS", "8"))
    load(s.api_url, key, 4, 2, briefing=True)  # warm up every worker
    out: dict[str, Any] = {"at": datetime.now(UTC).isoformat(), "api_workers": s.api_workers, "cores": os.cpu_count(),
                           "briefing": [], "noop": []}
    for clients in (1, 8, 32):
        out["briefing"].append(load(s.api_url, key, clients, seconds, briefing=True))
        out["noop"].append(load(s.api_url, key, clients, seconds, briefing=False))
        print(json.dumps({"briefing": out["briefing"][-1], "noop": out["noop"][-1]}), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"throughput-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
