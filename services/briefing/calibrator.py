"""Calibrator: runs a tenant's abstention calibration (`calibration`, pure) and serves its result to briefings.

`run` asks every sampled approved record of the tenant as a briefing, through the briefing's own retrieval and
ranking (`BriefingService.retrieve`, `rank` with no threshold), twice: with its own family left out (a
recurrence, when another record has its category) and with every record of its category left out (a new kind
of incident); `calibration.choose` weighs the two by the tenant's recurrence rate. It stores the chosen
threshold per tenant and model (`briefing_calibration`, under RLS) in one statement. `threshold` reads it for a
briefing (remembered per process for `ttl` seconds). `refresh_if_stale` starts a run on the process's one
calibration thread when a tenant with at least `MIN_RECORDS` indexed versions has no calibration or its size
moved by a tenth (or 10 records) since; at most one run per tenant per `min_interval`. Nothing here decides
anything: `calibration.choose` does.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import ValidationError

from schemas.api import BriefingRequest
from schemas.ledger import Trust
from services.briefing.calibration import (
    LIMIT,
    MIN_RECORDS,
    SAMPLE,
    Asked,
    Calibration,
    choose,
    recurrence_rate,
)
from services.briefing.rank import rank
from services.briefing.tenant_runs import TenantRuns
from services.common.auth import Principal
from services.common.db import Cursor, Row
from services.lexicon import index as lexical
from services.memory import records as memory_records

if TYPE_CHECKING:
    from services.briefing.service import BriefingService


_READ = "SELECT min_relevance, records, status FROM briefing_calibration WHERE model = %s"
_WRITE = """
INSERT INTO briefing_calibration (tenant, model, min_relevance, records, questions, recurrences, novel, status, curve)
VALUES (%(tenant)s, %(model)s, %(min_relevance)s, %(records)s, %(questions)s, %(recurrences)s, %(novel)s,
        %(status)s, %(curve)s::jsonb)
ON CONFLICT (tenant, model) DO UPDATE SET min_relevance = EXCLUDED.min_relevance, records = EXCLUDED.records,
  questions = EXCLUDED.questions, recurrences = EXCLUDED.recurrences, novel = EXCLUDED.novel,
  status = EXCLUDED.status, curve = EXCLUDED.curve, computed_at = now()
"""


def own_evidence(row: Row) -> list[dict[str, Any]]:
    """The evidence of the version's own incident: a recurrence's version carries its family's earlier
    evidence too (each item names its incident), and a question built from that would quote the very records
    it is asked against (measured on GitLab's replay: the true cause ranked first for 29/58 lived questions so
    built against 11/58 for the same questions as the tenant asked them). Evidence naming no incident (an
    imported postmortem's) is all the version's own."""
    evidence = list(row.get("evidence") or [])
    sources = list(row.get("source_incidents") or [])
    if not sources:
        return evidence
    own = [e for e in evidence if e.get("incident_id") in (None, sources[-1])]
    return own or evidence


def question_of(row: Row) -> BriefingRequest | None:
    """A record asked as the briefing its own incident would have asked: the trusted symptoms and signals of its
    own incident (`own_evidence`), its alert and services (None when its fields do not make a valid request)."""
    own = [e for e in own_evidence(row) if e.get("trust") != Trust.UNTRUSTED_TEXT]
    text = (" ".join(e["summary"] for e in own) or row["summary"])[:4000]
    if any("signals" in e for e in own):
        signals = list(dict.fromkeys(s for e in own for s in e.get("signals") or ()))
    else:  # evidence that records no signals of its own: the version's
        signals = list(row.get("signals") or [])
    try:
        return BriefingRequest.model_validate({
            "text": text, "services": list(row.get("services") or [])[:20],
            "signals": signals[:20],
            "alert": {"name": row["alert_name"]} if row.get("alert_name") else None, "limit": LIMIT})
    except ValidationError:
        return None


class Calibrator:
    def __init__(self, briefing: BriefingService, ttl: float = 60.0, min_interval: float = 300.0) -> None:
        self.briefing = briefing
        self.ttl = ttl
        self.min_interval = min_interval
        self._read: dict[tuple[str, str], tuple[float, float | None, int | None]] = {}
        self._lock = threading.Lock()
        self.runs = TenantRuns("calibration", min_interval)

    def threshold(self, cur: Cursor, tenant: str, model: str) -> float | None:
        """The tenant's calibrated abstention point for `model`, or None (no calibration, or insufficient)."""
        now = time.monotonic()
        with self._lock:
            hit = self._read.get((tenant, model))
        if hit is not None and hit[0] > now:
            return hit[1]
        cur.execute(_READ, (model,))
        row = cur.fetchone()
        value = float(row["min_relevance"]) if row and row["status"] == "calibrated" else None
        records = int(row["records"]) if row else None
        with self._lock:
            self._read[(tenant, model)] = (now + self.ttl, value, records)
        return value

    def refresh_if_stale(self, tenant: str, model: str, records: int) -> None:
        """Start a run in the background when the tenant's calibration is missing or its size moved."""
        if records < MIN_RECORDS:
            return
        with self._lock:
            hit = self._read.get((tenant, model))
            known = hit[2] if hit else None
        if known is not None and abs(records - known) < max(10, known // 10):
            return
        self.runs.start(tenant, self._summary)

    def _summary(self, tenant: str) -> dict[str, Any]:
        model, result = self.run(tenant)
        return {"model": model, **{k: v for k, v in asdict(result).items() if k != "curve"}}

    def run(self, tenant: str, now: datetime | None = None) -> tuple[str, Calibration]:
        """Calibrate `tenant` now (leave-one-out over its approved records) and store the result."""
        svc = self.briefing
        now = now or datetime.now(UTC)
        principal = Principal(key_id=None, tenant=tenant, project=None, role="agent", service="calibrator")
        with svc.db.tenant_transaction(tenant) as cur:
            rows = [r for r in memory_records.current_versions(cur)
                    if r["family_state"] == "active" and r["root_cause_category"]]
            records = lexical.corpus_stats(cur, []).docs
        counts = Counter(str(r["root_cause_category"]) for r in rows)
        asked: list[Asked] = []
        semantic = False
        for row in rows[:SAMPLE]:
            req = question_of(row)
            if req is None:
                continue
            question = svc.embed(req)
            with svc.db.tenant_transaction(tenant) as cur:
                found = svc.retrieve(cur, principal, req, now, question)
            semantic = semantic or found.similarities is not None
            policy = svc.policy(now, found.similarities is not None, threshold=0.0)
            category = str(row["root_cause_category"])
            seen = [f for f in found.rows if f.family_id != row["family_id"]]  # leave one out: a recurrence
            unseen = [f for f in seen if f.root_cause_category != category]  # leave its category out: a new kind
            for others, recurrence in ((seen, True), (unseen, False)):
                if recurrence and counts[category] < 2:
                    continue
                ranked = rank(found.query, others, policy, LIMIT, found.similarities, found.stats)
                asked.append(Asked(category, tuple((h.facts.root_cause_category, h.relevance) for h in ranked.hints),
                                   recurrence))
        policy = svc.policy(now, semantic)
        dated = sorted(rows, key=lambda r: (r["observed_at"] or r["valid_from"], str(r["family_id"])))
        rate = recurrence_rate([str(r["root_cause_category"]) for r in dated])
        result = choose(asked, records, fallback=policy.model.min_relevance, recurrence_rate=rate)
        self._store(tenant, policy.model.name, result)
        return policy.model.name, result

    def _store(self, tenant: str, model: str, result: Calibration) -> None:
        curve = [{"min_relevance": t, "checks": c} for t, c in result.curve]
        doc: dict[str, Any] = {**asdict(result), "tenant": tenant, "model": model,
                               "curve": orjson.dumps(curve).decode()}
        with self.briefing.db.tenant_transaction(tenant) as cur:
            cur.execute(_WRITE, doc)
        with self._lock:
            self._read.pop((tenant, model), None)

    def close(self) -> None:
        self.runs.close()
