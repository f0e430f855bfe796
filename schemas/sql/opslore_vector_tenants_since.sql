-- Tenants with vectors past a seq, and their highest seq: the snapshot builder's tick (migration 0029).
-- Names and seqs only; owned by opslore_search (BYPASSRLS, read-only) like the review queue metric. Reading any
-- tenant's rows still requires setting opslore.tenant.
CREATE OR REPLACE FUNCTION opslore_vector_tenants_since(after bigint) RETURNS TABLE (tenant text, top bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT v.tenant, max(v.seq) FROM version_vectors v WHERE v.seq > after GROUP BY v.tenant ORDER BY 1 $$;
GRANT CREATE ON SCHEMA public TO opslore_search;  -- needed only to take ownership, revoked just below
ALTER FUNCTION opslore_vector_tenants_since(bigint) OWNER TO opslore_search;
REVOKE CREATE ON SCHEMA public FROM opslore_search;
REVOKE ALL ON FUNCTION opslore_vector_tenants_since(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_vector_tenants_since(bigint) TO opslore_app;
