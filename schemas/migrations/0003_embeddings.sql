-- Optional semantic branch: vectors are a derived, rebuildable index of record versions, keyed by the
-- embedding model's name and version so that a model change is a reindex, never a silent mix.
-- embedding_state names, per tenant, the model the briefing serves from; a reindex fills the new
-- model's vectors first and flips this pointer only when they are complete.
CREATE TABLE version_vectors (
  tenant     text NOT NULL,
  family_id  uuid NOT NULL,
  version    integer NOT NULL,
  model      text NOT NULL,
  vector     real[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, family_id, version, model)
);
CREATE TABLE embedding_state (
  tenant        text PRIMARY KEY,
  active_model  text NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['version_vectors', 'embedding_state'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant = opslore_current_tenant())
                    WITH CHECK (tenant = opslore_current_tenant())', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO opslore_app', t);
  END LOOP;
END $$;

-- Tenants that hold memory, for maintenance jobs (reindex) that must visit each tenant in turn.
-- Returns names only; reading any tenant's rows still requires setting opslore.tenant.
CREATE FUNCTION opslore_memory_tenants() RETURNS SETOF text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT DISTINCT tenant FROM memory_families ORDER BY 1 $$;
REVOKE ALL ON FUNCTION opslore_memory_tenants() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_memory_tenants() TO opslore_app;
