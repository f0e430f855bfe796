-- Tenants with vectors past a seq, and their highest seq: the snapshot builder's tick (migrations 0029, 0031).
-- Names and seqs only; owned by opslore_search (BYPASSRLS, read-only) like the review queue metric. Reading any
-- tenant's rows still requires setting opslore.tenant. Planned with the watermark's value on every call (EXECUTE
-- ... USING): a plan made for any watermark would scan the whole table; this one reads the BRIN ranges past it.
CREATE OR REPLACE FUNCTION opslore_vector_tenants_since(after bigint) RETURNS TABLE (tenant text, top bigint)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
BEGIN
  RETURN QUERY EXECUTE 'SELECT v.tenant, max(v.seq) FROM version_vectors v WHERE v.seq > $1 GROUP BY v.tenant ORDER BY 1'
    USING after;
END $$;
GRANT CREATE ON SCHEMA public TO opslore_search;  -- needed only to take ownership, revoked just below
ALTER FUNCTION opslore_vector_tenants_since(bigint) OWNER TO opslore_search;
REVOKE CREATE ON SCHEMA public FROM opslore_search;
REVOKE ALL ON FUNCTION opslore_vector_tenants_since(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_vector_tenants_since(bigint) TO opslore_app;
