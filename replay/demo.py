"""`python -m replay.demo`: learn from two demo incidents in a fresh tenant, print one briefing and one
governance preview, then the next steps with working keys (the review UI, a briefing of your own, an agent over
MCP, stopping the stack); `tests/integration/test_demo_next_steps.py` runs the printed lines."""

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
    agent = runner.admin.create_key(tenant, "agent", "checkout")
    for line in next_steps(s.api_url, key, agent):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def next_steps(api_url: str, reviewer_key: str, agent_key: str) -> list[str]:
    """What to do next, as lines that work when pasted (the stack stays up)."""
    return [
        "",
        "Next steps (the stack stays up):",
        f"  review UI:        {api_url}/ui/login  (log in with the reviewer key {reviewer_key})",
        f"  your own briefing: OPSLORE_API_URL={api_url} OPSLORE_API_KEY={agent_key} opslore "
        "brief --service payments-api --text \"payments-api 5xx after the card-gateway certificate rotation\"",
        f"  connect an agent: claude mcp add --transport http opslore {api_url}/mcp "
        f"--header \"Authorization: Bearer {agent_key}\"",
        "  your alerts and postmortems: README.md (Connect your alerts; Bring your history)",
        "  stop the stack:   make down",
    ]


if __name__ == "__main__":
    main()
