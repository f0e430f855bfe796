-- A new API key (its hash only), for the admin route; api_keys is hidden from the application role.
CREATE OR REPLACE FUNCTION opslore_create_api_key(p_id uuid, p_hash text, p_tenant text, p_project text, p_role text)
  RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    INSERT INTO api_keys (key_id, key_hash, tenant, project, role)
    VALUES (p_id, p_hash, p_tenant, p_project, p_role) $$;
REVOKE ALL ON FUNCTION opslore_create_api_key(uuid, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_create_api_key(uuid, text, text, text, text) TO opslore_app;
