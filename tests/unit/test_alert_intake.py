"""Alertmanager alerts -> ledger events: deterministic ids, never a resolution from an alert."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.alerts import AlertmanagerAlert, AlertmanagerWebhook, label_fingerprint
from schemas.ledger import parse_submitted_event
from services.intake.alertmanager import briefing_request, event_id_for, incident_id_for, opened_event, resolved_event


def alert(status: str = "firing", **labels: str) -> AlertmanagerAlert:
    return AlertmanagerAlert.model_validate({
        "status": status, "labels": {"alertname": "HighErrorRate", "service": "checkout-api", "env": "prod",
                                     "severity": "page", **labels},
        "annotations": {"summary": "5xx above 5%", "description": "pending DB connections climbing"},
        "startsAt": "2026-11-30T10:00:00.123Z", "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph", "fingerprint": "a1b2c3d4e5f60718"})


def test_incident_ids_come_from_the_label_or_the_fingerprint_and_start() -> None:
    assert incident_id_for(alert(incident_id="INC-7")) == "INC-7"
    assert incident_id_for(alert(incident_id="not valid / id")) == "am-a1b2c3d4e5f60718-20261130T100000Z"
    assert incident_id_for(alert()) == incident_id_for(alert())


def test_event_ids_are_deterministic_per_tenant_alert_and_status() -> None:
    assert event_id_for("acme", alert()) == event_id_for("acme", alert())
    assert event_id_for("acme", alert()) != event_id_for("globex", alert())
    assert event_id_for("acme", alert()) != event_id_for("acme", alert("resolved"))


def test_firing_opens_and_resolved_only_observes() -> None:
    opened = parse_submitted_event(opened_event("acme", alert()))
    assert opened.type == "incident.opened" and opened.trust == "trusted_tool"
    assert opened.payload["services"] == ["checkout-api"] and opened.payload["environment"] == "prod"
    assert opened.payload["alert"]["severity"] == "page"
    resolved = parse_submitted_event(resolved_event("acme", alert("resolved"), datetime(2026, 11, 30, tzinfo=UTC)))
    assert resolved.type == "observation.recorded"  # a quiet alert is not a root cause
    req = briefing_request(alert())
    assert req.alert is not None and req.alert.name == "HighErrorRate" and req.services == ["checkout-api"]
    assert req.text and "pending DB connections" in req.text


def test_the_webhook_body_keeps_unknown_fields() -> None:
    body = AlertmanagerWebhook.model_validate({
        "version": "4", "status": "firing", "receiver": "opslore", "groupKey": "{}:{}", "truncatedAlerts": 0,
        "alerts": [alert().model_dump(mode="json")]})
    assert len(body.alerts) == 1


def test_the_fingerprint_of_labels_is_prometheus_s() -> None:
    """prometheus/common's own vectors (model/signature_test.go): the empty set is FNV-1a's offset basis."""
    assert int(label_fingerprint({}), 16) == 14695981039346656037
    assert int(label_fingerprint({"name": "garland, briggs", "fear": "love is not enough"}), 16) == 5799056148416392346
