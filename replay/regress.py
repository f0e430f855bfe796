"""Regression replay: a ledger file into an empty tenant, compared with a stored snapshot.

The snapshot holds what the pipeline made of the file: every episode, every candidate and, after an
approve-all review, every record's content. Tenant-dependent values (tenant names, ids derived from
them, wall-clock times of review) are left out so that the same file gives the same snapshot anywhere.
"""

from __future__ import annotations

import difflib
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.cli.client import OpsloreClient
from services.cli.ledger_io import import_ledger, read_ledger

VOLATILE = {"tenant", "candidate_ids", "family_id", "candidate_id", "created_at", "created_by", "state_changed_at",
            "valid_from", "content_hash", "owner", "supersedes", "family_state", "project", "review", "proposal",
            "state"}
RECORD_FIELDS = ("memory_type", "summary", "root_cause", "root_cause_category", "alert_name", "services", "signals",
                 "entities", "source_incidents", "confidence", "authority", "trust_mix", "verify_with")


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


@dataclass
class Regression:
    snapshot: dict[str, Any]
    diff: list[str]

    @property
    def passed(self) -> bool:
        return not self.diff


def take_snapshot(client: OpsloreClient, incidents: list[str]) -> dict[str, Any]:
    episodes = {i: _clean(client.episode(i)) for i in incidents}
    candidates = sorted((_clean(c) for c in client.candidates()), key=lambda c: (c["incident_id"], c["summary"]))
    records = sorted(({k: r.get(k) for k in RECORD_FIELDS} for r in client.records()),
                     key=lambda r: (r["source_incidents"], r["summary"]))
    return {"episodes": episodes, "candidates": candidates, "records": records}


def replay_file(admin: OpsloreClient, api_url: str, path: Path, timeout: float = 60.0) -> dict[str, Any]:
    records = list(read_ledger(path))
    counts = Counter(r["incident_id"] for r in records if r["type"] != "briefing.feedback")
    tenant = f"regress-{uuid.uuid4().hex[:10]}"
    project = records[0].get("project") if records else None
    client = OpsloreClient(api_url, admin.create_key(tenant, "reviewer", project))
    import_ledger(client, records)
    deadline = time.monotonic() + timeout
    for incident, n in sorted(counts.items()):
        while (ep := client.episode(incident)) is None or ep["event_count"] < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{incident}: projection did not reach {n} events in {timeout}s")
            time.sleep(0.1)
    for cand in sorted(client.candidates(state="pending"), key=lambda c: c["incident_id"]):
        client.approve(str(cand["candidate_id"]), note="regression replay", resolution="new_family")
    return take_snapshot(client, sorted(counts))


def compare(snapshot: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    new = json.dumps(snapshot, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    old = json.dumps(stored, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    return list(difflib.unified_diff(old, new, "stored snapshot", "this replay", lineterm="", n=2))


def regress(admin: OpsloreClient, api_url: str, ledger: Path, snapshot_path: Path, update: bool) -> Regression:
    snapshot = replay_file(admin, api_url, ledger)
    if update or not snapshot_path.exists():
        snapshot_path.write_text(json.dumps(snapshot, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8")
        return Regression(snapshot, [])
    return Regression(snapshot, compare(snapshot, json.loads(snapshot_path.read_text(encoding="utf-8"))))
