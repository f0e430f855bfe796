-- The live key with this hash: api_keys is hidden from the application role, which reaches it only here.
CREATE OR REPLACE FUNCTION opslore_authenticate(p_hash text)
  RETURNS TABLE (key_id uuid, tenant text, project text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT k.key_id, k.tenant, k.project, k.role FROM api_keys k
     WHERE k.key_hash = p_hash AND k.revoked_at IS NULL $$;
REVOKE ALL ON FUNCTION opslore_authenticate(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_authenticate(text) TO opslore_app;
