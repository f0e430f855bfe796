"""Ledger export -> file -> import elsewhere -> the same projection; a changed ledger shows as a diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.regress import regress
from services.cli.client import ApiError, OpsloreClient
from services.cli.ledger_io import import_ledger
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import raw_event, resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration


def _ledger(client: OpsloreClient) -> list[str]:
    events = resolved_incident("INC-1") + resolved_incident("INC-2", category="certificate_expiry",
                                                            signal="tls_handshake_failure")
    events.append(raw_event("observation.recorded", "INC-3", {"source": "logs", "summary": "日志里出现 OOMKilled"}))
    client.append(events)
    eventually(lambda: (e := client.episode("INC-3")) and e)
    eventually(lambda: len(client.candidates()) == 2)
    return list(client.export())


def test_export_import_roundtrip(tenant_client: TenantFactory, settings: Settings) -> None:
    source, target = tenant_client(role="admin"), tenant_client()
    lines = _ledger(source)
    assert len(lines) == 11
    first = json.loads(lines[0])
    assert first["tenant"] == source.tenant and len(first["content_hash"]) == 64  # type: ignore[attr-defined]
    with pytest.raises(ApiError) as err:
        list(target.export())  # a reviewer key may not export
    assert err.value.status == 403
    records = [json.loads(line) for line in lines]
    assert import_ledger(target, records) == 11
    assert import_ledger(target, records) == 11  # accepted again, applied once (same event ids)
    eventually(lambda: (e := target.episode("INC-3")) and e)
    assert target.episode("INC-1") == {**source.episode("INC-1"), "tenant": target.tenant,  # type: ignore[attr-defined,dict-item]
                                       "candidate_ids": target.episode("INC-1")["candidate_ids"]}  # type: ignore[index]
    assert [c["summary"] for c in target.candidates()] == [c["summary"] for c in source.candidates()]


def test_regression_replay_matches_snapshot_and_shows_a_diff(
    tenant_client: TenantFactory, api: OpsloreClient, settings: Settings, tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("\n".join(_ledger(tenant_client(role="admin"))) + "\n", encoding="utf-8")
    snapshot = tmp_path / "snapshot.json"
    first = regress(api, settings.api_url, ledger, snapshot, update=False)
    assert first.passed and snapshot.exists()
    assert len(first.snapshot["records"]) == 2 and len(first.snapshot["episodes"]) == 3
    assert regress(api, settings.api_url, ledger, snapshot, update=False).passed

    changed = ledger.read_text(encoding="utf-8").replace("connection pool exhausted by slow queries",
                                                         "pool exhausted by a batch job", 1)
    ledger.write_text(changed, encoding="utf-8")
    result = regress(api, settings.api_url, ledger, snapshot, update=False)
    assert not result.passed
    assert any(line.startswith("+") and "batch job" in line for line in result.diff)
    assert any(line.startswith("-") and "slow queries" in line for line in result.diff)
