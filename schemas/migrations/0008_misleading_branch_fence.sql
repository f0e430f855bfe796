-- The misleading-signal branch of opslore_briefing_candidates: almost no version marks a misleading
-- signal, but the planner estimated ~1000 matches and walked the recency index over the whole tenant
-- (150 ms at 100k versions, 0 rows). OFFSET 0 fences the GIN-filtered set before it is ordered.
CREATE OR REPLACE FUNCTION opslore_briefing_candidates(
    p_services text[], p_signals text[], p_alert text, p_tsq tsquery, p_project text, p_limit int, p_text_cap int)
  RETURNS TABLE (family_id uuid, version int)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public
  ROWS 250
  AS $fn$
DECLARE
  v_tenant text := opslore_current_tenant();
BEGIN
  IF v_tenant IS NULL THEN
    RETURN;  -- no tenant in this transaction: nothing
  END IF;
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
    by_misleading AS (
      SELECT m.family_id, m.version FROM (
        SELECT v.family_id, v.version, v.last_verified_at FROM memory_versions v
        WHERE v.tenant = %1$L AND v.state = 'active' AND v.misleading_signals && %3$L::text[]
          AND (%5$L::text IS NULL OR v.project = %5$L::text)
        OFFSET 0) m
      ORDER BY m.last_verified_at DESC NULLS LAST LIMIT %6$s),
    text_matches AS (
      SELECT s.family_id, s.version, s.tsv FROM version_search s
      WHERE %7$L::tsquery IS NOT NULL AND s.tenant = %1$L AND s.tsv @@ %7$L::tsquery
      LIMIT %8$s),
    by_text AS (
      SELECT m.family_id, m.version FROM text_matches m
      JOIN memory_versions v ON v.tenant = %1$L AND v.family_id = m.family_id AND v.version = m.version
      WHERE v.state = 'active' AND (%5$L::text IS NULL OR v.project = %5$L::text)
      ORDER BY ts_rank(m.tsv, %7$L::tsquery) DESC LIMIT %6$s)
    SELECT * FROM by_service UNION SELECT * FROM by_alert UNION SELECT * FROM by_signal
    UNION SELECT * FROM by_misleading UNION SELECT * FROM by_text
  $q$, v_tenant, p_services, p_signals, p_alert, p_project, p_limit, p_tsq, p_text_cap);
END
$fn$;
