"""Briefings per second against the running API at 1, 8 and 32 concurrent clients, next to a no-op endpoint.

    python -m bench.throughput      # needs the running stack (make up); OPSLORE_API_WORKERS sets its processes

A fresh tenant learns BENCH_TP_INCIDENTS (40) incidents through the real pipeline; then, for each client
count, that many threads (one HTTP connection each) ask briefings for BENCH_TP_SECONDS (8) seconds, then
the same for GET /healthz, alternating for BENCH_TP_ROUNDS (5) rounds. The percentiles pool every round's
samples; `rounds` keeps each round's figures (on 2 shared cores one 8-second window's p95 ratio ranged from
x3.1 to x4.5 on the same code, and x2.8 to x4.6 later: 5 rounds rather than 3 narrow the pooled figure).
Writes bench/results/throughput-<time>.json.
"""

from __future__ import annotations

import json
import os
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.load import closed_loop
from bench.mcp import learn, questions
from bench.run import percentiles
from services.cli.client import OpsloreClient
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"


def load(url: str, key: str, clients: int, seconds: float, briefing: bool) -> dict[str, Any]:
    asks = questions(200)

    def request(http: httpx.Client, i: int, n: int) -> httpx.Response:
        return http.post("/v1/briefings", json=asks[(i + n) % len(asks)]) if briefing else http.get("/healthz")

    flat, errors, wall = closed_loop(url, key, request, clients, seconds, timeout=30)
    return {"clients": clients, "per_s": round(len(flat) / wall, 1), "errors": errors,
            "ms": percentiles(flat), "samples": flat}


def pooled(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """One figure for a client count from its rounds: rates averaged, percentiles over all samples."""
    return {"clients": windows[0]["clients"], "per_s": round(statistics.fmean(w["per_s"] for w in windows), 1),
            "errors": sum(w["errors"] for w in windows),
            "ms": percentiles([x for w in windows for x in w["samples"]])}


def rounds_of(url: str, key: str, clients: int, seconds: float, rounds: int) -> dict[str, Any]:
    briefing, noop = [], []
    for _ in range(rounds):  # alternating, so that a slow spell of the machine hits both sides
        briefing.append(load(url, key, clients, seconds, briefing=True))
        noop.append(load(url, key, clients, seconds, briefing=False))
    per_round = [{"briefing_per_s": b["per_s"], "briefing_p95": b["ms"]["p95"], "noop_p95": n["ms"]["p95"],
                  "ratio_p95": round(b["ms"]["p95"] / n["ms"]["p95"], 2)} for b, n in zip(briefing, noop, strict=True)]
    return {"briefing": pooled(briefing), "noop": pooled(noop), "rounds": per_round}


def main() -> None:
    s = get_settings()
    admin = OpsloreClient(s.api_url, s.admin_token)
    _, key = learn(admin, int(os.environ.get("BENCH_TP_INCIDENTS", "40")))
    seconds = float(os.environ.get("BENCH_TP_SECONDS", "8"))
    rounds = int(os.environ.get("BENCH_TP_ROUNDS", "5"))
    load(s.api_url, key, 4, 2, briefing=True)  # warm up every worker
    out: dict[str, Any] = {"at": datetime.now(UTC).isoformat(), "api_workers": s.api_workers, "cores": os.cpu_count(),
                           "api_briefing_threads": s.api_briefing_threads, "seconds": seconds, "rounds": rounds,
                           "briefing": [], "noop": [], "per_round": []}
    for clients in (1, 8, 32):
        measured = rounds_of(s.api_url, key, clients, seconds, rounds)
        out["briefing"].append(measured["briefing"])
        out["noop"].append(measured["noop"])
        out["per_round"].append({"clients": clients, "rounds": measured["rounds"]})
        print(json.dumps({k: measured[k] for k in ("briefing", "noop")}), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"throughput-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
