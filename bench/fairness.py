"""Fair share between tenants (`python -m bench.fairness`): tenant A at 10x the load of tenant B on one API.

1. Each tenant learns the same small history (three corpus archetypes) through the whole pipeline.
2. B alone: one closed-loop client for `SECONDS`: its briefing p50/p95.
3. Together: A with ten clients, B with one, for `SECONDS`: B's p95 against its p95 alone, B's errors, A's
   answers by status (429s with Retry-After are the limit working).
4. A recovers: one client of A for a few seconds after the burst: its answers are 200 again.
Writes bench/results/fairness-<time>.json. The limits are the API's own settings (`OPSLORE_FAIR_*`).
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.load import closed_loop
from replay.corpus.build import incident, load
from replay.runner import learn_incident
from replay.scenario import Scenario, ScenarioIncident
from services.cli.client import OpsloreClient
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"
SECONDS = 20.0


def tenant(admin: OpsloreClient, url: str, name: str, archetypes: list[dict[str, Any]]) -> tuple[str, str]:
    t = f"fair-{name}-{uuid.uuid4().hex[:8]}"
    reviewer = OpsloreClient(url, admin.create_key(t, "reviewer", "fair"))
    incidents = [ScenarioIncident.model_validate(incident(a, f"PAST-{a['id']}", k)) for k, a in enumerate(archetypes)]
    sc = Scenario(name="fairness", project="fair", incidents=incidents)
    for inc in incidents:
        learn_incident(sc, inc, reviewer)
    return t, admin.create_key(t, "agent", "fair")


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": round(float(np.percentile(ms, 50)), 1), "p95": round(float(np.percentile(ms, 95)), 1)}


def main() -> None:
    s = get_settings()
    url = s.api_url
    admin = OpsloreClient(url, s.admin_token)
    archetypes = load()[:3]
    question = {"alert": {"name": archetypes[0]["alert"]}, "services": [archetypes[0]["service"]],
                "signals": archetypes[0]["signals"], "text": archetypes[0]["ask"]}
    _, key_a = tenant(admin, url, "a", archetypes)
    _, key_b = tenant(admin, url, "b", archetypes)

    def ask(http: httpx.Client, i: int, n: int) -> httpx.Response:
        return http.post("/v1/briefings", json=question)

    closed_loop(url, key_b, ask, 1, 3.0)  # warm: the embedder and caches
    alone, alone_errors, _ = closed_loop(url, key_b, ask, 1, SECONDS)
    a_status: dict[int, int] = {}
    together: dict[str, Any] = {}

    def run_a() -> None:
        together["a"] = closed_loop(url, key_a, ask, 10, SECONDS, statuses=a_status)

    t = threading.Thread(target=run_a)
    t.start()
    b_status: dict[int, int] = {}
    b_lat, b_errors, _ = closed_loop(url, key_b, ask, 1, SECONDS, statuses=b_status)
    t.join()
    a_after: dict[int, int] = {}
    closed_loop(url, key_a, ask, 1, 3.0)  # the burst's buckets refill
    closed_loop(url, key_a, ask, 1, 5.0, statuses=a_after)
    out = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "seconds": SECONDS, "api": url,
           "b_alone": {**percentiles(alone), "errors": alone_errors},
           "b_with_a": {**percentiles(b_lat), "errors": b_errors, "statuses": b_status},
           "a_10_clients": {"statuses": a_status},
           "a_after": {"statuses": a_after},
           "b_p95_ratio": round(float(np.percentile(b_lat, 95)) / float(np.percentile(alone, 95)), 2)}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"fairness-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
