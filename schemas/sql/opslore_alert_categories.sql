-- The root-cause categories of an alert name's active versions, with up to 3 of each category's incidents (the
-- briefing's alternative_root_causes). PL/pgSQL with a generic plan: planned once per session, where a client
-- statement was planned again at every bind (migration 0018). SECURITY INVOKER: row-level security applies to the
-- caller; the function adds no privilege, only a cached plan.
CREATE OR REPLACE FUNCTION opslore_alert_categories(p_alert text, p_project text, p_now timestamptz)
  RETURNS TABLE (category text, incidents text[])
  LANGUAGE plpgsql STABLE
  SET plan_cache_mode = force_generic_plan
  AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    WITH RECURSIVE cats AS (
      (SELECT v.root_cause_category AS c FROM memory_versions v
        WHERE v.alert_name = p_alert AND v.state = 'active' AND v.root_cause_category IS NOT NULL
        ORDER BY v.root_cause_category LIMIT 1)
      UNION ALL
      SELECT (SELECT v.root_cause_category FROM memory_versions v
               WHERE v.alert_name = p_alert AND v.state = 'active' AND v.root_cause_category > cats.c
               ORDER BY v.root_cause_category LIMIT 1)
      FROM cats WHERE cats.c IS NOT NULL)
    SELECT cats.c, ex.incidents FROM cats
    CROSS JOIN LATERAL (
      SELECT array_agg(x.i) AS incidents FROM (
        SELECT v.source_incidents[1] AS i FROM memory_versions v
        WHERE v.alert_name = p_alert AND v.root_cause_category = cats.c AND v.state = 'active'
          AND (p_project IS NULL OR v.project = p_project)
          AND (v.valid_until IS NULL OR v.valid_until > p_now)
        LIMIT 3) x) ex
    WHERE cats.c IS NOT NULL AND ex.incidents IS NOT NULL;
END
$fn$;
GRANT EXECUTE ON FUNCTION opslore_alert_categories(text, text, timestamptz) TO opslore_app;
