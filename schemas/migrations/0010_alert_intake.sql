-- Alertmanager deliveries already handled, per tenant: a re-delivery of the same alert (fingerprint,
-- startsAt, status) appends nothing and answers the same briefing. Written after the events were appended.
CREATE TABLE alert_intake (
  tenant       text NOT NULL,
  fingerprint  text NOT NULL,
  starts_at    timestamptz NOT NULL,
  status       text NOT NULL CHECK (status IN ('firing', 'resolved')),
  incident_id  text NOT NULL,
  event_id     uuid NOT NULL,
  briefing_id  uuid,
  hint_count   integer NOT NULL DEFAULT 0,
  top_hint     text,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, fingerprint, starts_at, status)
);
ALTER TABLE alert_intake ENABLE ROW LEVEL SECURITY;
ALTER TABLE alert_intake FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON alert_intake USING (tenant = opslore_current_tenant())
  WITH CHECK (tenant = opslore_current_tenant());
GRANT SELECT, INSERT ON alert_intake TO opslore_app;
