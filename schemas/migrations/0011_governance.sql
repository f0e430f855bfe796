-- Governance (CONTRACT "Governance"): jobs write proposals (preview), reviewers or the worker execute them
-- under a per-family lease; nothing is deleted. A family merged into another by a consolidation is in
-- state 'consolidated' (its versions stay; the consolidating version cites them through lineage).
ALTER TABLE memory_families DROP CONSTRAINT memory_families_state_check;
ALTER TABLE memory_families ADD CONSTRAINT memory_families_state_check
  CHECK (state IN ('active', 'retracted', 'expired', 'consolidated'));

CREATE TABLE governance_runs (
  tenant        text NOT NULL,
  run_id        uuid NOT NULL,
  project       text,
  jobs          text[] NOT NULL,
  requested_by  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, run_id)
);

CREATE TABLE governance_proposals (
  tenant        text NOT NULL,
  proposal_id   uuid NOT NULL,
  run_id        uuid NOT NULL,
  project       text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('expire', 'stale', 'duplicate', 'never_hit', 'low_confidence',
                                              'promote')),
  fingerprint   text NOT NULL,          -- kind + what it is based on: one open proposal per fingerprint
  family_ids    uuid[] NOT NULL,
  reason        text NOT NULL,
  change        jsonb NOT NULL,
  based_on      jsonb NOT NULL,         -- [{family_id, version}] as read by the preview
  state         text NOT NULL CHECK (state IN ('proposed', 'executed', 'dismissed', 'stale', 'reverted')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  decided_at    timestamptz,
  decided_by    text,
  decision_note text,
  result        jsonb,                  -- what execute wrote (versions, states), kept for the second execute
  PRIMARY KEY (tenant, proposal_id),
  FOREIGN KEY (tenant, run_id) REFERENCES governance_runs (tenant, run_id)
);
CREATE UNIQUE INDEX governance_proposals_open ON governance_proposals (tenant, fingerprint)
  WHERE state = 'proposed';
CREATE INDEX governance_proposals_state ON governance_proposals (tenant, state, kind, created_at);

-- Per-family execution leases: a worker holds a family until `expires_at`; another worker's execute on an
-- overlapping family is a 409 until then. Released by moving `expires_at` to the release time.
CREATE TABLE governance_leases (
  tenant      text NOT NULL,
  family_id   uuid NOT NULL,
  holder      text NOT NULL,
  proposal_id uuid NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant, family_id)
);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['governance_runs', 'governance_proposals', 'governance_leases']
  LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant = opslore_current_tenant())
                    WITH CHECK (tenant = opslore_current_tenant())', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO opslore_app', t);
  END LOOP;
END $$;
CREATE TRIGGER governance_proposals_no_delete BEFORE DELETE ON governance_proposals
  FOR EACH ROW EXECUTE FUNCTION opslore_append_only();
CREATE TRIGGER governance_runs_no_delete BEFORE DELETE ON governance_runs
  FOR EACH ROW EXECUTE FUNCTION opslore_append_only();

-- The governance worker runs per tenant; tenants are those with a live API key (api_keys has no RLS and is
-- hidden from the application role, so the list comes through this function).
-- Squashed (#31): the function is no longer defined here. Its one current definition is
-- schemas/sql/opslore_key_tenants.sql, applied after the forward migrations; the text first applied
-- is in git history, its checksum accepted in schemas/migrations/accepted_checksums.txt.
