"""AlertIntake: Prometheus Alertmanager notifications -> ledger events and a briefing waiting for the agent.

Per alert of a webhook (CONTRACT "Alert intake"):
  firing    -> `incident.opened` (trusted_tool, writer alertmanager) and a precomputed briefing
  resolved  -> an `observation.recorded` that the alert resolved; never `incident.resolved`: a root
               cause needs evidence, and an alert going quiet is not one
The incident id is the alert's `incident_id` label when it is a valid id, otherwise derived from the
fingerprint and startsAt. Event ids are derived from tenant, fingerprint, startsAt and status, and each
delivery is remembered in `alert_intake`, so a re-delivery appends nothing and answers the same briefing; an
alert listed twice in one webhook (a relay merging groups) is one delivery, answered in both places. A missing
`fingerprint` is the one Alertmanager computes from the labels (`schemas.alerts.label_fingerprint`).

Order: events are appended first (one Kafka transaction for the whole webhook), then briefings are
computed, then the intake rows are written. A failure in between can only cause a repeated append of the
same event ids on re-delivery, which every consumer treats as a no-op; it can never record an alert
whose event was not appended.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from schemas.alerts import AlertmanagerAlert, AlertmanagerWebhook, IntakeAnswer, IntakeIncident
from schemas.api import BriefingRequest
from schemas.ledger import Trust, envelope
from services.briefing.service import BriefingService
from services.common.auth import Principal
from services.common.db import Cursor, Database
from services.gateway.service import LedgerGateway

NAMESPACE = uuid.UUID("5b0f3c62-4b7e-4a53-9a51-7c1f1d0b6a10")
_INCIDENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
WRITER = {"kind": "tool", "id": "alertmanager"}


# ---------------------------------------------------------------- pure mapping
def incident_id_for(alert: AlertmanagerAlert) -> str:
    label = alert.labels.get("incident_id", "")
    if _INCIDENT_ID.match(label):
        return label
    return f"am-{alert.fingerprint}-{alert.startsAt:%Y%m%dT%H%M%SZ}"


def event_id_for(tenant: str, alert: AlertmanagerAlert) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{tenant}/{alert.fingerprint}/{alert.startsAt.isoformat()}/{alert.status}")


def _first(labels: dict[str, str], *names: str) -> str | None:
    return next((labels[n][:200] for n in names if labels.get(n)), None)


def _services(alert: AlertmanagerAlert) -> list[str]:
    found = _first(alert.labels, "service", "app", "job")
    return [found] if found else []


def _text(alert: AlertmanagerAlert) -> str:
    parts = [alert.annotations.get("summary", ""), alert.annotations.get("description", "")]
    return " ".join(p for p in parts if p)[:4000]


def opened_event(tenant: str, alert: AlertmanagerAlert) -> dict[str, Any]:
    name = alert.labels.get("alertname", "UnnamedAlert")[:200]
    payload: dict[str, Any] = {
        "alert": {"name": name, "labels": alert.labels,
                  **({"severity": alert.labels["severity"][:200]} if alert.labels.get("severity") else {})},
        "title": (_text(alert) or name)[:4000], "services": _services(alert),
    }
    for key, value in (("environment", _first(alert.labels, "environment", "env")),
                       ("cluster", _first(alert.labels, "cluster"))):
        if value:
            payload[key] = value
    return _envelope(tenant, alert, "incident.opened", payload, alert.startsAt)


def resolved_event(tenant: str, alert: AlertmanagerAlert, received_at: datetime) -> dict[str, Any]:
    name = alert.labels.get("alertname", "UnnamedAlert")
    summary = f"Alertmanager reports {name} resolved (endsAt {alert.endsAt or 'unknown'}); this is not a root cause."
    payload = {"source": "other", "summary": summary[:4000], "signals": [], "entities": _services(alert)}
    return _envelope(tenant, alert, "observation.recorded", payload, received_at)


def _envelope(tenant: str, alert: AlertmanagerAlert, kind: str, payload: dict[str, Any],
              at: datetime) -> dict[str, Any]:
    return envelope(kind, incident_id_for(alert), payload, writer_kind=WRITER["kind"], writer_id=WRITER["id"],
                    trust=Trust.TRUSTED_TOOL, at=at, event_id=event_id_for(tenant, alert))


def briefing_request(alert: AlertmanagerAlert) -> BriefingRequest:
    return BriefingRequest.model_validate({
        "alert": {"name": alert.labels.get("alertname", "UnnamedAlert")[:200], "labels": alert.labels},
        "services": _services(alert), "text": _text(alert) or None,
        "environment": _first(alert.labels, "environment", "env"), "cluster": _first(alert.labels, "cluster"),
    })


# ---------------------------------------------------------------- the service
@dataclass(frozen=True)
class Delivery:
    alert: AlertmanagerAlert
    incident_id: str
    event: dict[str, Any] | None  # None: delivered before, nothing to append
    known: IntakeIncident | None


class AlertIntake:
    def __init__(self, db: Database, gateway: LedgerGateway, briefing: BriefingService) -> None:
        self.db = db
        self.gateway = gateway
        self.briefing = briefing

    def receive(self, principal: Principal, body: AlertmanagerWebhook, now: datetime) -> IntakeAnswer:
        principal.require("agent")
        tenant = principal.scoped_tenant
        first: dict[tuple[str, datetime, str], int] = {}  # an alert listed twice is one delivery
        slot = [first.setdefault((a.fingerprint, a.startsAt, a.status), i) for i, a in enumerate(body.alerts)]
        with self.db.tenant_transaction(tenant) as cur:
            deliveries = {i: self._delivery(cur, tenant, body.alerts[i], now) for i in sorted(first.values())}
        new_events = [d.event for d in deliveries.values() if d.event is not None]
        if new_events:
            self.gateway.append({"events": new_events}, principal)
        answers = {i: d.known or self._answer(principal, d) for i, d in deliveries.items()}
        with self.db.tenant_transaction(tenant) as cur:
            for i, d in deliveries.items():
                if d.known is None:
                    _remember(cur, tenant, d.alert, answers[i])
        return IntakeAnswer(incidents=[answers[i] for i in slot])

    @staticmethod
    def _delivery(cur: Cursor, tenant: str, alert: AlertmanagerAlert, now: datetime) -> Delivery:
        known = _lookup(cur, alert, alert.status)
        if known is not None:
            return Delivery(alert, known.incident_id, None, known)
        event = opened_event(tenant, alert) if alert.status == "firing" else resolved_event(tenant, alert, now)
        return Delivery(alert, incident_id_for(alert), event, None)

    def _answer(self, principal: Principal, d: Delivery) -> IntakeIncident:
        if d.alert.status == "resolved":  # point at the briefing the firing alert got, if we saw it
            with self.db.tenant_transaction(principal.scoped_tenant) as cur:
                firing = _lookup(cur, d.alert, "firing")
            return IntakeIncident(incident_id=d.incident_id, fingerprint=d.alert.fingerprint, status="resolved",
                                  briefing_id=firing.briefing_id if firing else None,
                                  hint_count=firing.hint_count if firing else 0,
                                  top_hint=firing.top_hint if firing else None)
        answer = self.briefing.brief(principal, briefing_request(d.alert))
        return IntakeIncident(incident_id=d.incident_id, fingerprint=d.alert.fingerprint, status="firing",
                              briefing_id=str(answer.briefing_id), hint_count=len(answer.hints),
                              top_hint=answer.hints[0].summary if answer.hints else None)


def _lookup(cur: Cursor, alert: AlertmanagerAlert, status: str) -> IntakeIncident | None:
    cur.execute(
        """SELECT incident_id, briefing_id, hint_count, top_hint FROM alert_intake
           WHERE fingerprint = %s AND starts_at = %s AND status = %s""",
        (alert.fingerprint, alert.startsAt, status),
    )
    row = cur.fetchone()
    if row is None:
        return None
    return IntakeIncident(incident_id=row["incident_id"], fingerprint=alert.fingerprint, status=alert.status,
                          briefing_id=str(row["briefing_id"]) if row["briefing_id"] else None,
                          hint_count=int(row["hint_count"]), top_hint=row["top_hint"])


def _remember(cur: Cursor, tenant: str, alert: AlertmanagerAlert, answer: IntakeIncident) -> None:
    cur.execute(
        """INSERT INTO alert_intake (tenant, fingerprint, starts_at, status, incident_id, event_id, briefing_id,
                                     hint_count, top_hint)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (tenant, alert.fingerprint, alert.startsAt, alert.status, answer.incident_id, event_id_for(tenant, alert),
         answer.briefing_id, answer.hint_count, answer.top_hint),
    )
