"""The thin client distribution on its own (issue 30): `opslore-client` is built as a wheel, installed into a
fresh virtualenv with nothing but its dependencies (httpx, pydantic and theirs), and runs the five verbs an
agent uses (append events, briefing, feedback, episode, search) against the live stack. The environment holds
no top-level package of the server (`services`, `schemas`, `replay`, `bench`) and none of its dependencies."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
CLIENT = Path(__file__).parents[2] / "clients" / "python"

AGENT = textwrap.dedent('''
    import importlib.util, json, sys, time
    from opslore import Client, observation_event
    url, key, family = sys.argv[1:4]
    out = {}
    with Client(url, key) as ol:
        out["accepted"] = [str(e) for e in ol.append([observation_event(
            "INC-WHEEL", "prometheus", "pool at 100%", signals=["db_pool_saturation"])])]
        answer = ol.brief(services=["checkout-api"], signals=["db_pool_saturation"], incident_id="INC-WHEEL")
        out["hint_families"] = [str(h.family_id) for h in answer.hints]
        out["rendered"] = answer.rendered
        out["feedback"] = str(ol.feedback(answer.briefing_id, family, "adopted", incident_id="INC-WHEEL"))
        for _ in range(100):
            try:
                episode = ol.episode("INC-WHEEL")
                if episode.observations:
                    break
            except Exception:
                pass
            time.sleep(0.2)
        out["episode"] = [o.summary for o in episode.observations]
        out["search"] = [str(h.family_id) for h in ol.search_records("connection pool exhausted by slow queries")]
    out["server_packages"] = [m for m in ("services", "schemas", "replay", "bench", "kafka", "psycopg", "jieba",
                                          "numpy", "mcp", "opentelemetry", "fastapi")
                              if importlib.util.find_spec(m) is not None]
    print(json.dumps(out))
''')


def test_the_client_wheel_alone_runs_the_five_verbs(tenant_client: TenantFactory, settings: Settings,
                                                    tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                    str(CLIENT), "-w", str(tmp_path / "dist")], check=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("opslore_client-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        tops = {n.split("/")[0] for n in archive.namelist()}
        assert {t for t in tops if not t.endswith(".dist-info")} == {"opslore"}, tops  # no other top-level package
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith("METADATA"))).decode()
    requires = sorted(line.split(":", 1)[1].strip() for line in metadata.splitlines()
                      if line.startswith("Requires-Dist"))
    print("opslore-client Requires-Dist:", requires)
    assert [r.split(">")[0].split("=")[0].split("<")[0] for r in requires] == ["httpx", "pydantic"]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                   check=True, timeout=600)  # its dependencies come from the package index, nothing else
    installed = json.loads(subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], check=True,
                                          capture_output=True, text=True, timeout=60).stdout)
    names = {p["name"].lower() for p in installed}
    print("client venv packages:", sorted(names))
    assert {"opslore-client", "httpx", "pydantic"} <= names
    assert not names & {"opslore", "kafka-python", "psycopg", "jieba", "numpy", "mcp", "fastapi", "uvicorn"}

    reviewer = tenant_client(role="reviewer")
    reviewer.append(resolved_incident("INC-WHEEL-PAST"))
    cand = eventually(lambda: reviewer.candidates(incident_id="INC-WHEEL-PAST", state="pending"))[0]
    family = reviewer.approve(str(cand["candidate_id"]))["family_id"]
    agent = tenant_client(role="agent", tenant=getattr(reviewer, "tenant"))  # noqa: B009
    run = subprocess.run([str(python), "-c", AGENT, settings.api_url, agent.key, str(family)], cwd=tmp_path,
                         check=True, capture_output=True, text=True, timeout=120)
    out = json.loads(run.stdout)
    assert len(out["accepted"]) == 1 and out["feedback"]
    assert out["hint_families"][0] == str(family) and out["search"][0] == str(family)
    assert out["episode"] == ["pool at 100%"] and "Past incidents" in out["rendered"]
    assert out["server_packages"] == [], out["server_packages"]
