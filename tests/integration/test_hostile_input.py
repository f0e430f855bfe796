"""Hostile input against the running API: clear 4xx, nothing half-written, no record made unreadable,
and untrusted authored text never promoted (the poisoning harness's findings)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from services.cli.client import ApiError, OpsloreClient
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import raw_event, resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration

POISON = yaml.safe_load((Path(__file__).parents[2] / "replay/poisoning/texts.yaml").read_text())["texts"]


def _pending(client: OpsloreClient, incident: str) -> dict[str, Any]:
    return eventually(lambda: client.candidates(incident_id=incident, state="pending"))[0]


def _learn(client: OpsloreClient, incident: str, category: str = "db_connection_pool", **edits: object) -> str:
    client.append(resolved_incident(incident, category=category, signal=f"{category}_signal"))
    cand = eventually(lambda: client.candidates(incident_id=incident, state="pending"))
    return str(client.approve(str(cand[0]["candidate_id"]), note="t", edits=edits or None)["family_id"])


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", "1969-12-31T23:00:00Z"])
def test_times_out_of_range_are_422_and_records_stay_readable(tenant_client: TenantFactory, when: str) -> None:
    client = tenant_client()
    family = _learn(client, f"INC-T{uuid.uuid4().hex[:6]}")
    with pytest.raises(ApiError) as err:
        client.record_op(family, "supersede", {"summary": "s", "reason": "r", "valid_until": when})
    assert err.value.status == 422 and err.value.field == "valid_until"
    assert client.request("GET", f"/v1/records/{family}")["current_version"] == 1
    assert client.records()  # the list still reads
    incident = f"INC-T{uuid.uuid4().hex[:6]}"
    client.append(resolved_incident(incident))
    cand = eventually(lambda: client.candidates(incident_id=incident, state="pending"))
    with pytest.raises(ApiError) as err:
        client.approve(str(cand[0]["candidate_id"]), edits={"valid_until": when})
    assert err.value.status == 422 and err.value.field == "edits.valid_until"
    event = raw_event("observation.recorded", incident, {"source": "logs", "summary": "x"})
    event["occurred_at"] = when
    with pytest.raises(ApiError) as err:
        client.append([event])
    assert err.value.status == 422 and err.value.field == "events[0].occurred_at"


def test_a_non_ascii_authorization_header_is_401(settings: Settings) -> None:
    with httpx.Client(base_url=settings.api_url, timeout=10) as http:
        for method, path in (("GET", "/v1/records"), ("POST", "/v1/briefings"), ("GET", "/v1/candidates"),
                             ("POST", "/v1/ledger/events")):
            headers = [(b"Authorization", "Bearer clé-\xe9\xff".encode("latin-1"))]
            response = http.request(method, path, headers=headers, json={})
            assert response.status_code == 401, (path, response.text)
            assert response.json()["error"]["code"] == "unauthenticated"


def test_an_event_too_large_for_the_ledger_is_413_and_appends_nothing(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    small = raw_event("observation.recorded", "INC-BIG", {"source": "logs", "summary": "fits"})
    big = raw_event("observation.recorded", "INC-BIG", {"source": "logs", "summary": "x",
                                                        "values": {f"v{i}": "y" * 60_000 for i in range(20)}})
    with pytest.raises(ApiError) as err:
        client.append([small, big])
    assert err.value.status == 413 and err.value.field == "events[1]"
    one_huge_string = raw_event("observation.recorded", "INC-BIG", {"source": "logs", "summary": "y" * 2_000_000})
    with pytest.raises(ApiError) as err:
        client.append([one_huge_string])
    assert err.value.status == 422 and err.value.field == "events[0].payload.summary"
    client.append([raw_event("observation.recorded", "INC-BIG", {"source": "logs", "summary": "after"})])
    episode = eventually(lambda: client.episode("INC-BIG"))
    assert [o["summary"] for o in episode["observations"]] == ["after"]


def test_poisoned_authored_text_is_quoted_never_remembered_or_shown(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    for i, text in enumerate(POISON[:8]):
        incident = f"INC-P{i}"
        events = resolved_incident(incident)
        events[2]["trust"] = "untrusted_text"  # the hypothesis statement
        events[2]["payload"]["statement"] = text
        events[4]["trust"] = "untrusted_text"  # the resolution's root cause and summary
        events[4]["payload"]["summary"] = text
        events[4]["payload"]["root_cause"] = text
        client.append(events)
        cand = _pending(client, incident)
        assert cand["untrusted_text_quoted"] is True and text not in cand["summary"]
        with pytest.raises(ApiError) as err:
            client.approve(str(cand["candidate_id"]))
        assert err.value.status == 422 and err.value.field == "edits.summary"
        family = client.approve(str(cand["candidate_id"]), edits={"summary": "pool exhausted by slow queries"})
        record = client.request("GET", f"/v1/records/{family['family_id']}")["current"]
        assert record["root_cause"] is None and record["summary"] == "pool exhausted by slow queries"
        assert text not in record["canonical_content"]
    for text in POISON[:8]:
        answer = client.briefing({"services": ["checkout-api"], "signals": ["db_pool_saturation"], "text": text})
        assert answer["hints"], "the trusted lesson is still found"
        shown = str(answer).lower()
        assert text.lower()[:40] not in shown
        for hint in answer["hints"]:
            assert "untrusted_source" in {w["code"] for w in hint["warnings"]}


def _status_and_field(settings: Settings, key: str, method: str, path: str, **kwargs: Any) -> tuple[int, str | None]:
    headers = {"Authorization": f"Bearer {key}", **kwargs.pop("headers", {})}
    with httpx.Client(base_url=settings.api_url, timeout=30) as http:
        response = http.request(method, path, headers=headers, **kwargs)
    body = response.json()
    return response.status_code, body.get("error", {}).get("field") if isinstance(body, dict) else None


def test_unsafe_values_anywhere_are_422_naming_the_field(tenant_client: TenantFactory, settings: Settings) -> None:
    client = tenant_client()
    family = _learn(client, f"INC-G{uuid.uuid4().hex[:6]}")
    key = client.key
    event = raw_event("observation.recorded", "INC-G", {"source": "logs", "summary": "ok"})
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(300):
        node["d"] = {}
        node = node["d"]
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", f"/v1/records/{family}/retract", {"json": {"reason": "r\x00"}}, "reason"),
        ("POST", "/v1/briefings", {"json": {"services": ["a", "b\x00"]}}, "services[1]"),
        ("POST", "/v1/briefings", {"json": {"alert": {"name": "A", "labels": {"k\x07": "v"}}}}, "alert.labels.k"),
        ("POST", "/v1/briefings", {"json": {"environment": "prod\x00"}}, "environment"),
        ("POST", "/v1/briefings", {"json": {"alert": {"name": "A", "labels": {"k": "v\x00"}}}}, "alert.labels.k"),
        ("POST", "/v1/briefings", {"json": {"alert": {"name": "A", "labels": {str(i): "v" for i in range(100)}}}},
         "alert.labels"),
        ("POST", "/v1/briefings", {"json": {"alert": {"name": "A", "labels": {"k": "v" * 2_000_000}}}},
         "alert.labels.k"),
        ("POST", "/v1/briefings", {"content": b'{"text": "\\ud800"}', "headers": {"content-type": "application/json"}},
         "text"),
        ("POST", "/v1/ledger/events", {"json": {"events": [event | {"payload": {**event["payload"], "n": 2**64}}]}},
         "events[0].payload.n"),
        ("POST", "/v1/ledger/events", {"json": {"events": [event | {"payload": {**event["payload"], "x": deep}}]}},
         "events[0].payload.x"),
        ("POST", "/v1/ledger/events", {"json": {"events": [event | {"payload": {"source": "logs",
                                                                                 "summary": "a\x00"}}]}},
         "events[0].payload.summary"),
        # a postmortem exported as a JSON object carries the same values (it was a 500 before the guard ran first)
        ("POST", "/v1/postmortems", {"content": b'{"format": "json", "content": {"title": "t", "services": ["a"], '
                                                b'"symptoms": "\\ud800 slow", "root_cause": "x"}}',
                                     "headers": {"content-type": "application/json"}}, "content.symptoms"),
        ("POST", "/v1/postmortems", {"json": {"format": "json", "content": {"title": "t", "services": ["a"],
                                                                            "symptoms": "s", "root_cause": "x",
                                                                            "n": 2**70}}}, "content.n"),
        ("POST", "/v1/postmortems", {"content": b'{"format": "markdown", "content": "# T\\n## Impact\\nslow '
                                                b'\\udfff\\n## Root cause\\nbad"}',
                                     "headers": {"content-type": "application/json"}}, "content"),
        # a date YAML cannot build and one the ledger cannot store (both were 500s)
        ("POST", "/v1/postmortems", {"json": {"format": "markdown", "content": "---\ndate: 0001-01-01\n---\n"
                                              "## Impact\nslow\n## Root cause\nbad"}}, "content.started_at"),
        ("GET", "/v1/candidates?state=%00", {}, "state"),
        ("GET", "/v1/records?state=active&state=retracted", {}, "state"),
        ("GET", "/v1/incidents/INC%00X/episode", {}, "path"),
    ]
    for method, path, kwargs, field in cases:
        status, got = _status_and_field(settings, key, method, path, **kwargs)
        assert status == 422, (path, field, status)
        assert got is not None and got.startswith(field), (path, field, got)
    assert client.episode("INC-G") is None  # nothing of the rejected events was appended


def test_lists_are_paginated_with_an_opaque_cursor(tenant_client: TenantFactory) -> None:
    client = tenant_client()
    for i in range(5):
        _learn(client, f"INC-L{i}", category=f"category_{i}")
    seen: list[str] = []
    page = client.request("GET", "/v1/records", params={"limit": 2})
    while True:
        assert len(page["records"]) <= 2
        seen += [str(r["family_id"]) for r in page["records"]]
        if not page["next_cursor"]:
            break
        page = client.request("GET", "/v1/records", params={"limit": 2, "cursor": page["next_cursor"]})
    assert len(seen) == len(set(seen)) == 5
    assert [str(r["family_id"]) for r in client.records()] == seen  # the SDK follows the cursor
    cands = client.request("GET", "/v1/candidates", params={"limit": 3})
    assert len(cands["candidates"]) == 3 and cands["next_cursor"]
    for bad in ({"limit": 0}, {"limit": 501}, {"cursor": "not-a-cursor"}):
        with pytest.raises(ApiError) as err:
            client.request("GET", "/v1/records", params=bad)
        assert err.value.status == 422 and err.value.field in ("limit", "cursor")
