-- The governance worker runs per tenant; tenants are those with a live API key (api_keys has no RLS and is
-- hidden from the application role, so the list comes through this function).
CREATE OR REPLACE FUNCTION opslore_key_tenants() RETURNS SETOF text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT DISTINCT tenant FROM api_keys WHERE revoked_at IS NULL ORDER BY 1 $$;
REVOKE ALL ON FUNCTION opslore_key_tenants() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_key_tenants() TO opslore_app;
