-- Tenants that hold memory, for maintenance jobs (reindex) that must visit each tenant in turn.
-- Returns names only; reading any tenant's rows still requires setting opslore.tenant.
CREATE OR REPLACE FUNCTION opslore_memory_tenants() RETURNS SETOF text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT DISTINCT tenant FROM memory_families ORDER BY 1 $$;
REVOKE ALL ON FUNCTION opslore_memory_tenants() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_memory_tenants() TO opslore_app;
