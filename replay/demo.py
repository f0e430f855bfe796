"""`python -m replay.demo`: learn from two demo incidents in a fresh tenant, print one briefing and one
governance preview."""

from __future__ import annotations

import uuid
from pathlib import Path

from replay.runner import ScenarioRunner, learn_incident
from replay.scenario import load_scenarios
from services.cli.client import OpsloreClient
from services.cli.main import console, print_briefing
from services.common.settings import get_settings

DEMO = Path(__file__).parent / "scenarios" / "demo"


def main() -> None:
    s = get_settings()
    runner = ScenarioRunner(s.api_url, s.admin_token, run_id="demo-" + uuid.uuid4().hex[:6])
    tenant = f"demo-{uuid.uuid4().hex[:8]}"
    key = runner.admin.create_key(tenant, "reviewer", "checkout")
    client = OpsloreClient(s.api_url, key)
    for scenario in load_scenarios(DEMO):
        for incident in scenario.incidents:
            check = learn_incident(scenario, incident, client)
            console.print(f"learned {incident.id}: {check.name}: {'ok' if check.passed else 'FAILED'}")
    request = {"alert": {"name": "HighErrorRate", "labels": {"service": "payments-api"}},
               "services": ["payments-api"], "signals": ["tls_handshake_failure"],
               "text": "payments-api 5xx; logs show x509: certificate has expired", "environment": "prod"}
    console.rule(f"[bold]briefing for tenant {tenant}[/bold]")
    console.print(f"request: {request}")
    print_briefing(client.briefing(request))
    preview = client.request("POST", "/v1/governance/preview", json={})
    console.rule(f"[bold]governance preview (run {preview['run_id']}): proposals only, nothing changed[/bold]")
    for p in preview["proposals"]:
        console.print(f"{p['kind']:>14} -> {p['change']['action']:<11} {p['reason']}")
    if not preview["proposals"]:
        console.print("no proposals: every record is fresh, used and unique")


if __name__ == "__main__":
    main()
