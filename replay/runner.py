"""ScenarioRunner: feeds scenarios through the live stack over HTTP and checks every expectation.

Each scenario runs in fresh tenants (one per logical tenant name, suffixed with a run id), so scenarios
never see each other and a directory can be replayed against the same stack any number of times.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from replay.expectations import Check, check_answer
from replay.scenario import AfterStep, Query, Scenario, ScenarioIncident, ledger_events
from services.cli.client import ApiError, OpsloreClient

WAIT_SECONDS = 30.0


@dataclass
class StepResult:
    step: str
    check: Check


@dataclass
class ScenarioResult:
    name: str
    source: str
    results: list[StepResult] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)  # per query: final answer and latency
    error: str | None = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None and all(r.check.passed for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "passed": self.passed, "error": self.error,
                "seconds": round(self.seconds, 3),
                "expectations": [{"step": r.step, "name": r.check.name, "passed": r.check.passed,
                                  "detail": r.check.detail} for r in self.results]}


def _wait(predicate: Callable[[], Any], timeout: float = WAIT_SECONDS, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


class ScenarioRunner:
    def __init__(self, api_url: str, admin_token: str, run_id: str | None = None) -> None:
        self.api_url = api_url
        self.admin = OpsloreClient(api_url, admin_token)
        self.run_id = run_id or uuid.uuid4().hex[:10]

    def run(self, scenario: Scenario) -> ScenarioResult:
        result = ScenarioResult(scenario.name, scenario.source)
        start = time.monotonic()
        try:
            clients = self._tenants(scenario)
            for incident in scenario.incidents:
                check = learn_incident(scenario, incident, clients[incident.tenant])
                result.results.append(StepResult(f"incident {incident.id}", check))
            for step in scenario.after:
                self._after(step, clients[step.tenant], result)
            for query in scenario.queries:
                self._query(query, clients[query.tenant], result)
        except (ApiError, RuntimeError) as exc:
            result.error = str(exc)
        result.seconds = time.monotonic() - start
        return result

    def _tenants(self, scenario: Scenario) -> dict[str, OpsloreClient]:
        clients = {}
        for logical in scenario.tenants():
            tenant = f"r{self.run_id}-{uuid.uuid5(uuid.NAMESPACE_URL, scenario.name).hex[:12]}-{logical}"[:64]
            key = self.admin.create_key(tenant, "reviewer", scenario.project)
            clients[logical] = OpsloreClient(self.api_url, key)
        return clients

    def _after(self, step: AfterStep, client: OpsloreClient, result: ScenarioResult) -> None:
        records = client.records(incident_id=step.incident)
        if not records:
            raise RuntimeError(f"after {step.op}: no record learned from {step.incident}")
        family = str(records[0]["family_id"])
        body: dict[str, Any] = {"reason": step.reason}
        if step.op == "supersede":
            body["summary"] = step.summary or "superseded by replay"
        if step.op == "rollback":
            body["to_version"] = step.to_version or 1
        client.record_op(family, step.op, body)

    def _query(self, query: Query, client: OpsloreClient, result: ScenarioResult) -> None:
        deadline = time.monotonic() + (WAIT_SECONDS if query.eventually else 0)
        while True:
            started = time.perf_counter()
            answer = client.briefing(query.request)
            elapsed_ms = (time.perf_counter() - started) * 1000
            checks = check_answer(query.expect, answer)
            if all(c.passed for c in checks) or time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        result.results.extend(StepResult(f"query {query.name}", c) for c in checks)
        result.answers.append({"query": query.name, "answer": answer, "ms": elapsed_ms})
        for fb in query.feedback:
            hint = next((h for h in answer["hints"] if fb.incident in h["source_incidents"]), None)
            if hint is None:
                result.results.append(StepResult(f"query {query.name}", Check(
                    f"feedback on {fb.incident}", False, "no hint cites it")))
                continue
            client.feedback(answer["briefing_id"], str(hint["family_id"]), fb.verdict)


def learn_incident(scenario: Scenario, inc: ScenarioIncident, client: OpsloreClient) -> Check:
    """Append the incident's events, wait for its episode, review its candidates as the file says."""
    events = ledger_events(scenario, inc)
    client.append(events)
    episode = _wait(lambda: (e := client.episode(inc.id)) and e["event_count"] >= len(events) and e)
    if not episode:
        raise RuntimeError(f"{inc.id}: the episode did not reach {len(events)} events in {WAIT_SECONDS}s")
    pending = client.candidates(incident_id=inc.id, state="pending")
    produced = bool(pending) or bool(client.candidates(incident_id=inc.id))
    for cand in pending:
        if inc.review == "approve":
            client.approve(str(cand["candidate_id"]), note="replay", edits=inc.approve_edits)
        elif inc.review == "reject":
            client.reject(str(cand["candidate_id"]), "replay rejects")
    return Check("candidate produced" if inc.expect_candidate else "no candidate produced",
                 produced == inc.expect_candidate, f"gate: {episode.get('gate_verdict')}")
