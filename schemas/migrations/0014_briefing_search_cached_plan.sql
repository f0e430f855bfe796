-- opslore_briefing_candidates, static and with a cached plan. The dynamic SQL of 0005/0008 was planned on
-- every call with the request's literals: ~5 ms of planning per briefing (five branches over eleven
-- indexes), and at 10k versions the planner chose sequential scans of the whole tenant for the service and
-- misleading branches (cheap on paper for wide rows, 15-18 ms in fact). Now the query is static: its plan
-- is made once per connection (plan_cache_mode = force_generic_plan) and cannot flip with the values asked,
-- and enable_seqscan = off inside the function keeps every branch on its index. Isolation is unchanged:
-- every branch filters on opslore_current_tenant(), and with no tenant set the function returns nothing.
CREATE OR REPLACE FUNCTION opslore_briefing_candidates(
    p_services text[], p_signals text[], p_alert text, p_tsq tsquery, p_project text, p_limit int, p_text_cap int)
  RETURNS TABLE (family_id uuid, version int)
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = public SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
  ROWS 250
  AS $fn$
#variable_conflict use_column
DECLARE
  v_tenant text := opslore_current_tenant();
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
      SELECT s.family_id, s.version, s.tsv FROM version_search s
      WHERE p_tsq IS NOT NULL AND s.tenant = v_tenant AND s.tsv @@ p_tsq
      LIMIT p_text_cap),
    by_text AS (
      SELECT m.family_id, m.version FROM text_matches m
      JOIN memory_versions v ON v.tenant = v_tenant AND v.family_id = m.family_id AND v.version = m.version
      WHERE v.state = 'active' AND (p_project IS NULL OR v.project = p_project)
      ORDER BY ts_rank(m.tsv, p_tsq) DESC LIMIT p_limit)
    SELECT b.family_id, b.version FROM by_service b UNION SELECT b.family_id, b.version FROM by_alert b
    UNION SELECT b.family_id, b.version FROM by_signal b UNION SELECT b.family_id, b.version FROM by_misleading b
    UNION SELECT b.family_id, b.version FROM by_text b;
END
$fn$;
