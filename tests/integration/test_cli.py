"""Every review and records command of the `opslore` CLI against the running stack."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def cli(key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"OPSLORE_API_KEY": key, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True,
                           text=True, timeout=60, check=False)


def test_review_and_records_commands(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    client.append(resolved_incident("INC-C1") + resolved_incident("INC-C2", category="certificate_expiry",
                                                                  signal="tls_handshake_failure"))
    eventually(lambda: len(client.candidates(state="pending")) == 2)
    first, second = sorted(client.candidates(state="pending"), key=lambda c: c["incident_id"])

    listed = cli(client.key, "review", "list")
    assert listed.returncode == 0 and "INC-C1" in listed.stdout and "INC-C2" in listed.stdout
    shown = cli(client.key, "review", "show", str(first["candidate_id"]))
    assert shown.returncode == 0 and "trusted_tool" in shown.stdout and "new record family" in shown.stdout

    approved = cli(client.key, "review", "approve", str(first["candidate_id"]), "--edit-summary", "edited by cli")
    assert approved.returncode == 0 and "version 1" in approved.stdout
    rejected = cli(client.key, "review", "reject", str(second["candidate_id"]), "--reason", "not convinced")
    assert rejected.returncode == 0
    assert client.candidates(state="rejected")[0]["incident_id"] == "INC-C2"
    again = cli(client.key, "review", "approve", str(first["candidate_id"]))
    assert again.returncode == 1 and "already" in again.stdout  # a clear message, not a traceback

    family = str(client.records(incident_id="INC-C1")[0]["family_id"])
    client.record_op(family, "supersede", {"summary": "second wording", "reason": "test"})
    history = cli(client.key, "records", "history", family)
    assert history.returncode == 0 and "edited by cli" in history.stdout and "second wording" in history.stdout
    rolled = cli(client.key, "records", "rollback", family, "--to", "1", "--reason", "first was better")
    assert rolled.returncode == 0 and "version 3" in rolled.stdout
    assert client.record(family)["current"]["summary"] == "edited by cli"
    retracted = cli(client.key, "records", "retract", family, "--reason", "wrong lesson")
    assert retracted.returncode == 0 and client.record(family)["state"] == "retracted"


def test_cli_errors_are_messages(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    missing = cli(client.key, "review", "show", "00000000-0000-0000-0000-000000000000")
    assert missing.returncode == 1 and "HTTP 404" in missing.stdout and "Traceback" not in missing.stderr
    no_key = cli("", "review", "list")
    assert no_key.returncode != 0 and "OPSLORE_API_KEY" in no_key.stderr + no_key.stdout
