"""Fair share between tenants (`python -m bench.fairness`): tenant A at 10x the load of tenant B on one API.

1. Each tenant learns the same small history (three corpus archetypes) through the whole pipeline.
2. B alone: one client at `RATE` briefings/s (paced: an agent asks at its own pace) for `SECONDS`: p50/p95.
3. Together: A with ten such clients (10x B's load, one key), B with one, for `SECONDS`: B's p95 against its p95
   alone, B's errors, A's answers by status (429s with Retry-After are the limit working).
4. A recovers: one client of A at `RATE` for a few seconds after the burst: its answers are 200 again.
Writes bench/results/fairness-<time>.json. The limits are the API's own settings (`OPSLORE_FAIR_*`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from replay.corpus.build import incident, load
from replay.runner import learn_incident
from replay.scenario import Scenario, ScenarioIncident
from services.cli.client import OpsloreClient
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"
SECONDS = 20.0
RATE = 4.0  # briefings per second per client


def paced(url: str, key: str, body: dict[str, Any], clients: int, seconds: float, rate: float = RATE
          ) -> tuple[list[float], dict[int, int]]:
    """`clients` threads, each sending one request every 1/rate s (or as soon as the last answered, if slower):
    the latencies (ms) of 200 answers and the answers by status (0: no answer)."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key}"}) as http:
            due = time.monotonic()
            while due < stop:
                time.sleep(max(0.0, due - time.monotonic()))
                t0 = time.perf_counter()
                try:
                    status = http.post("/v1/briefings", json=body).status_code
                except httpx.HTTPError:
                    status = 0
                ms = (time.perf_counter() - t0) * 1000
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 200:
                        latencies.append(ms)
                due += 1.0 / rate

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, statuses


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

    paced(url, key_b, question, 1, 3.0)  # warm: the embedder and caches
    alone, alone_status = paced(url, key_b, question, 1, SECONDS)
    together: dict[str, Any] = {}

    def run_a() -> None:
        together["a"] = paced(url, key_a, question, 10, SECONDS)

    t = threading.Thread(target=run_a)
    t.start()
    b_lat, b_status = paced(url, key_b, question, 1, SECONDS)
    t.join()
    a_status = together["a"][1]
    time.sleep(3.0)  # the burst's buckets refill
    _, a_after = paced(url, key_a, question, 1, 5.0)
    errors_b = sum(n for st, n in b_status.items() if st != 200)
    out = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "seconds": SECONDS, "api": url,
           "rate_per_client": RATE, "b_alone": {**percentiles(alone), "statuses": alone_status},
           "b_with_a": {**percentiles(b_lat), "errors": errors_b, "statuses": b_status},
           "a_10_clients": {"statuses": a_status},
           "a_after": {"statuses": a_after},
           "b_p95_ratio": round(float(np.percentile(b_lat, 95)) / float(np.percentile(alone, 95)), 2)}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"fairness-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
