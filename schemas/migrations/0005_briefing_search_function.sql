-- Briefing candidate search as one SECURITY DEFINER function.
-- Why: under row-level security PostgreSQL uses an index for a query predicate only when its operator is
-- LEAKPROOF; array overlap (&&) and full-text match (@@) are not, so the GIN indexes on services,
-- signals and search_tsv were unusable and every briefing scanned the tenant's whole table.
-- How it stays isolated: the function is owned by opslore_search (NOLOGIN, BYPASSRLS, SELECT on
-- memory_versions only) and filters every branch on opslore_current_tenant(), the same transaction
-- setting the RLS policies compare against; with no setting it returns nothing. It returns only ids;
-- the caller reads the rows themselves under RLS.
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'opslore_search') THEN
    RAISE EXCEPTION 'role opslore_search is missing: run deploy/local/postgres.sh start (it creates the roles)';
  END IF;
END $$;

CREATE FUNCTION opslore_briefing_candidates(
    p_services text[], p_signals text[], p_alert text, p_tsq tsquery, p_project text, p_limit int, p_text_cap int)
  RETURNS TABLE (family_id uuid, version int)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public
  ROWS 200  -- at most 4 branches x p_limit; without it the planner assumes 1000 and hash-joins whole tables
  AS $fn$
DECLARE
  v_tenant text := opslore_current_tenant();
BEGIN
  IF v_tenant IS NULL THEN
    RETURN;  -- no tenant in this transaction: nothing
  END IF;
  -- The values are inlined as quoted literals (format %L) so that each call is planned for this tenant
  -- and these services/signals: with parameters the planner guesses selectivities and picks poor indexes.
  RETURN QUERY EXECUTE format($q$
    WITH by_service AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE v.tenant = %1$L AND v.state = 'active' AND v.services && %2$L::text[] AND (%5$L::text IS NULL OR v.project = %5$L::text)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT %6$s),
    by_alert AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE v.tenant = %1$L AND v.state = 'active' AND v.alert_name = %4$L::text AND (%5$L::text IS NULL OR v.project = %5$L::text)
        AND (v.signals && %3$L::text[] OR cardinality(%3$L::text[]) = 0)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT %6$s),
    by_signal AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE %4$L::text IS NULL AND v.tenant = %1$L AND v.state = 'active' AND v.signals && %3$L::text[]
        AND (%5$L::text IS NULL OR v.project = %5$L::text)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT %6$s),
    text_matches AS (
      SELECT v.family_id, v.version, v.search_tsv FROM memory_versions v
      WHERE %7$L::tsquery IS NOT NULL AND v.tenant = %1$L AND v.state = 'active' AND v.search_tsv @@ %7$L::tsquery
        AND (%5$L::text IS NULL OR v.project = %5$L::text)
      LIMIT %8$s),
    by_text AS (
      SELECT m.family_id, m.version FROM text_matches m ORDER BY ts_rank(m.search_tsv, %7$L::tsquery) DESC LIMIT %6$s)
    SELECT * FROM by_service UNION SELECT * FROM by_alert UNION SELECT * FROM by_signal UNION SELECT * FROM by_text
  $q$, v_tenant, p_services, p_signals, p_alert, p_project, p_limit, p_tsq, p_text_cap);
END
$fn$;
GRANT SELECT ON memory_versions TO opslore_search;
GRANT CREATE ON SCHEMA public TO opslore_search;  -- needed only to take ownership, revoked just below
ALTER FUNCTION opslore_briefing_candidates(text[], text[], text, tsquery, text, int, int) OWNER TO opslore_search;
REVOKE CREATE ON SCHEMA public FROM opslore_search;
REVOKE ALL ON FUNCTION opslore_briefing_candidates(text[], text[], text, tsquery, text, int, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_briefing_candidates(text[], text[], text, tsquery, text, int, int) TO opslore_app;
