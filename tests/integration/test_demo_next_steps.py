"""`make demo` ends with next steps that work as printed: the reviewer key logs in to the review UI, the printed
`opslore brief` line answers with the demo tenant's causes, and the printed agent key is an agent's."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import pytest

from services.common.settings import Settings

pytestmark = pytest.mark.integration


def test_the_printed_next_steps_work(settings: Settings) -> None:
    env = {**os.environ, "COLUMNS": "400"}
    demo = subprocess.run([sys.executable, "-m", "replay.demo"], capture_output=True, text=True, env=env,
                          timeout=300, check=True).stdout
    steps = demo[demo.index("Next steps"):]
    reviewer = re.search(r"log in with the reviewer key (\S+)\)", steps)
    brief = re.search(r"your own briefing: (.+)$", steps, re.M)
    mcp = re.search(r"connect an agent: (claude mcp add .+)$", steps, re.M)
    assert reviewer and brief and mcp and "make down" in steps
    answered = subprocess.run(["bash", "-c", brief.group(1)], capture_output=True, text=True, timeout=60,
                              check=True).stdout
    assert "likely causes" in answered and "certificate_expiry" in answered
    agent_key = re.search(r"Bearer (\S+)\"", mcp.group(1))
    assert agent_key
    who = httpx.get(f"{settings.api_url}/v1/whoami", headers={"Authorization": f"Bearer {agent_key.group(1)}"})
    assert who.json()["role"] == "agent"
    with httpx.Client(base_url=settings.api_url, follow_redirects=False) as ui:
        page = ui.get("/ui/login")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert token
        logged = ui.post("/ui/login", data={"api_key": reviewer.group(1), "csrf_token": token.group(1)})
        assert logged.status_code == 303 and ui.get("/ui/").status_code == 200
