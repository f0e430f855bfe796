"""incident.io's and PagerDuty's recorded API answers (tests/fixtures/exports) convert to the contract's json
postmortem, which then parses like any imported document."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from services.postmortems.exporters import from_incident_io, from_pagerduty
from services.postmortems.model import NotAPostmortem
from services.postmortems.parse import parse

EXPORTS = Path(__file__).parents[1] / "fixtures/exports"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXPORTS / name).read_text())
    return data


def test_an_incident_io_incident_with_its_follow_ups() -> None:
    doc = from_incident_io(_load("incidentio-incident.json"), _load("incidentio-follow-ups.json"))
    assert doc.title == "Checkout payments failing after pool change" and doc.severity == "Major"
    assert doc.services == ["checkout-api", "payments-db"] and doc.alert == "PaymentsErrorRateHigh"
    assert doc.started_at == datetime(2024, 5, 14, 9, 52, tzinfo=UTC)
    assert doc.resolved_at == datetime(2024, 5, 14, 10, 27, tzinfo=UTC)
    assert doc.symptoms is not None and "503" in str(doc.symptoms) and doc.root_cause_category == "bad_config"
    assert doc.root_cause is not None and "from 50 to 5" in doc.root_cause and doc.resolution is not None
    assert doc.action_items == ["Validate pool size changes against peak load in CI",
                                "Alert on connection pool wait time"]
    assert doc.links == ["https://app.incident.io/acme/incidents/123", "https://docs.example.com/postmortems/inc-123"]
    pm = parse("json", doc.model_dump(mode="json", exclude_none=True))
    assert pm.root_cause == doc.root_cause and pm.symptoms_from == "json" and pm.quarantined == []


def test_a_pagerduty_incident_with_its_notes() -> None:
    doc = from_pagerduty(_load("pagerduty-incident.json"), _load("pagerduty-notes.json"))
    assert doc.title == "Search API latency above 2s" and doc.services == ["search-api"] and doc.severity == "P2"
    assert doc.alert == "search-latency-high" and doc.resolved_at == datetime(2024, 3, 2, 14, 41, tzinfo=UTC)
    assert doc.root_cause is not None and doc.root_cause.startswith("a reindex job")
    assert doc.resolution is not None and doc.resolution.startswith("paused the reindex")
    assert doc.action_items == ["run reindex jobs with a routing spread over all shards."]
    assert doc.links == ["https://acme.pagerduty.com/incidents/PT4KHLK"]
    pm = parse("json", doc.model_dump(mode="json", exclude_none=True))
    assert pm.symptoms and "timing out" in pm.symptoms[0]


def test_an_export_without_a_root_cause_is_refused_at_import() -> None:
    doc = from_pagerduty(_load("pagerduty-incident.json"), {"notes": []})
    assert doc.root_cause is None
    with pytest.raises(NotAPostmortem) as err:
        parse("json", doc.model_dump(mode="json", exclude_none=True))
    assert err.value.missing == ["root_cause"]
