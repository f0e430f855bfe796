"""Governance on the replay corpora: how many proposals of each kind, and how long preview and execute take.

    python -m bench.governance     # needs the running stack (make up) and OPSLORE_ADMIN_TOKEN

Two fresh tenants learn, through the real pipeline (gateway, projector, evidence gate, review):
- `realworld`: every public postmortem of replay/realworld/ except the novel-class ones (history and the
  later recurrences), so recurring lessons exist as separate families;
- `scenarios`: every incident of the scenario corpora (replay/scenarios, the contract's examples included).
Then one preview of every job, and every proposal executed through the API in order (a proposal whose
family an earlier execution moved answers 409, counted as a conflict). Writes bench/results/governance-*.json.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.run import percentiles
from replay import realworld
from replay.runner import learn_incident
from replay.scenario import load_scenarios
from services.cli.client import ApiError, OpsloreClient
from services.common.settings import get_settings

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).parents[1]


class ResolvingReviewer(OpsloreClient):
    """Approves like an on-call engineer who read both sides: a candidate that contradicts an active record
    becomes a family of its own (the replay files approve without saying how to resolve conflicts)."""

    def approve(self, candidate_id: str, **body: Any) -> dict[str, Any]:
        try:
            return super().approve(candidate_id, **body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            return super().approve(candidate_id, **{**body, "resolution": "new_family"})


def tenant_client(admin: OpsloreClient, url: str, name: str) -> OpsloreClient:
    tenant = f"bench-gov-{name}-{uuid.uuid4().hex[:6]}"
    return ResolvingReviewer(url, admin.create_key(tenant, "reviewer", "default"))


def learn_realworld(client: OpsloreClient) -> int:
    pms = [pm.model_copy(update={"role": "history"}) for pm in realworld.load()
           if pm.role not in ("dev_novel", "test_novel")]
    realworld.learn_history(client, pms, lambda _: None)
    return len(pms)


def learn_scenarios(client: OpsloreClient) -> int:
    n = 0
    for folder in (ROOT / "replay" / "scenarios",):  # the contract's examples are in replay/scenarios/examples
        for sc in load_scenarios(folder):
            for incident in sc.incidents:
                learn_incident(sc, incident, client)
                n += 1
    return n


def govern(client: OpsloreClient) -> dict[str, Any]:
    start = time.perf_counter()
    proposals = client.request("POST", "/v1/governance/preview", json={})["proposals"]
    preview_ms = (time.perf_counter() - start) * 1000
    counts: dict[str, int] = {}
    for p in proposals:
        counts[p["kind"]] = counts.get(p["kind"], 0) + 1
    latencies, conflicts = [], 0
    for p in proposals:
        start = time.perf_counter()
        try:
            client.request("POST", f"/v1/governance/proposals/{p['proposal_id']}/execute")
            latencies.append((time.perf_counter() - start) * 1000)
        except ApiError as exc:
            if exc.status != 409:
                raise
            conflicts += 1
    families = len(client.records(state="active"))
    return {"proposals": counts, "total": len(proposals), "preview_ms": round(preview_ms, 1),
            "execute_ms": percentiles(latencies) if latencies else None, "executed": len(latencies),
            "conflicts_409": conflicts, "active_families_after": families}


def main() -> None:
    s = get_settings()
    admin = OpsloreClient(s.api_url, s.admin_token)
    out: dict[str, Any] = {"at": datetime.now(UTC).isoformat()}
    for name, learn in (("realworld", learn_realworld), ("scenarios", learn_scenarios)):
        client = tenant_client(admin, s.api_url, name)
        incidents = learn(client)
        before = len(client.records(state="active"))
        out[name] = {"incidents": incidents, "active_families_before": before, **govern(client)}
        print(name, json.dumps(out[name]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"governance-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
