-- Full-text candidate search, per tenant in the index itself, and ranked before any version is read.
--
-- 1. Tenant-qualified index terms. version_search.tsv held the bare lexemes under a GIN (tenant, tsv):
--    every text lookup intersected the lexemes' posting lists with the tenant key's posting tree, which
--    holds every version of the tenant (2.3 of 4.6 ms per briefing at 100k versions; auto_explain), and at
--    1M versions the lexemes' lists also carried the nine other tenants' entries. The terms are now
--    '<tenant>/<lexeme>' (tenant names never contain '/': schemas.ledger.TenantName), the GIN is on tsv
--    alone, and its lists are one tenant's. The function builds the query from the bare lexemes and the
--    transaction's tenant, so a caller still cannot look into another tenant's terms; every row is also
--    rechecked on its tenant column.
-- 2. Text branch: rank the (at most p_text_cap) matches first and look up their versions (active? this
--    project?) in rank order, stopping once p_limit qualified. 0014 looked up every match before ranking:
--    200 primary-key probes where ~60 sufficed. Ties in rank break by family id: the branch is deterministic.
-- The other branches are 0014's, unchanged.
CREATE FUNCTION opslore_search_terms(p_tenant text, p_lexemes text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT coalesce(array_agg(p_tenant || '/' || x), '{}') FROM unnest(p_lexemes) x $$;

-- any of the lexemes, each quoted verbatim (tsquery input: a quote is doubled, a backslash escaped)
CREATE FUNCTION opslore_search_query(p_tenant text, p_lexemes text[]) RETURNS tsquery
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT string_agg('''' || replace(replace(p_tenant || '/' || x, '\', '\\'), '''', '''''') || '''',
                          ' | ')::tsquery
        FROM unnest(p_lexemes) x $$;

-- rewrite the stored terms: the table forces RLS on its owner too, so for this one statement it does not
ALTER TABLE version_search NO FORCE ROW LEVEL SECURITY;
UPDATE version_search SET tsv = array_to_tsvector(opslore_search_terms(tenant, lexemes));
ALTER TABLE version_search FORCE ROW LEVEL SECURITY;
DROP INDEX version_search_tenant_tsv;
CREATE INDEX version_search_terms ON version_search USING gin (tsv);

DROP FUNCTION opslore_briefing_candidates(text[], text[], text, tsquery, text, int, int);
CREATE FUNCTION opslore_briefing_candidates(
    p_services text[], p_signals text[], p_alert text, p_lexemes text[], p_project text, p_limit int, p_text_cap int)
  RETURNS TABLE (family_id uuid, version int)
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = public SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
  ROWS 250
  AS $fn$
#variable_conflict use_column
DECLARE
  v_tenant text := opslore_current_tenant();
  v_tsq tsquery := opslore_search_query(opslore_current_tenant(), p_lexemes);  -- this tenant's terms only
BEGIN
  IF v_tenant IS NULL THEN
    RETURN;  -- no tenant in this transaction: nothing
  END IF;
  RETURN QUERY
    WITH by_service AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE v.tenant = v_tenant AND v.state = 'active' AND v.services && p_services
        AND (p_project IS NULL OR v.project = p_project)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT p_limit),
    by_alert AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE v.tenant = v_tenant AND v.state = 'active' AND v.alert_name = p_alert
        AND (p_project IS NULL OR v.project = p_project)
        AND (v.signals && p_signals OR cardinality(p_signals) = 0)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT p_limit),
    by_signal AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE p_alert IS NULL AND v.tenant = v_tenant AND v.state = 'active' AND v.signals && p_signals
        AND (p_project IS NULL OR v.project = p_project)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT p_limit),
    by_misleading AS (
      SELECT m.family_id, m.version FROM (
        SELECT v.family_id, v.version, v.last_verified_at FROM memory_versions v
        WHERE v.tenant = v_tenant AND v.state = 'active' AND v.misleading_signals && p_signals
          AND (p_project IS NULL OR v.project = p_project)
        OFFSET 0) m
      ORDER BY m.last_verified_at DESC NULLS LAST LIMIT p_limit),
    text_matches AS (
      SELECT s.family_id, s.version, ts_rank(s.tsv, v_tsq) AS r FROM version_search s
      WHERE v_tsq IS NOT NULL AND s.tsv @@ v_tsq AND s.tenant = v_tenant
      LIMIT p_text_cap),
    by_text AS (  -- best first; a version is looked up only until p_limit of them qualified
      SELECT m.family_id, m.version FROM (SELECT * FROM text_matches ORDER BY r DESC, family_id) m
      CROSS JOIN LATERAL (SELECT 1 FROM memory_versions v
                          WHERE v.tenant = v_tenant AND v.family_id = m.family_id AND v.version = m.version
                            AND v.state = 'active' AND (p_project IS NULL OR v.project = p_project)) v
      LIMIT p_limit)
    SELECT b.family_id, b.version FROM by_service b UNION SELECT b.family_id, b.version FROM by_alert b
    UNION SELECT b.family_id, b.version FROM by_signal b UNION SELECT b.family_id, b.version FROM by_misleading b
    UNION SELECT b.family_id, b.version FROM by_text b;
END
$fn$;

GRANT CREATE ON SCHEMA public TO opslore_search;  -- needed only to take ownership, revoked just below
ALTER FUNCTION opslore_briefing_candidates(text[], text[], text, text[], text, int, int) OWNER TO opslore_search;
REVOKE CREATE ON SCHEMA public FROM opslore_search;
REVOKE ALL ON FUNCTION opslore_briefing_candidates(text[], text[], text, text[], text, int, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_briefing_candidates(text[], text[], text, text[], text, int, int) TO opslore_app;
