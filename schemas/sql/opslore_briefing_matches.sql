-- The briefing's search: the (family_id, version) keys of the records that match a question, as the union of
-- bounded, index-driven branches, each over active versions inside their validity window at p_now, in the
-- question's project (NULL: any):
--   by_service     versions naming one of p_services, most recently verified first;
--   by_alert       versions of alert p_alert that share a signal in p_signals (or any, when p_signals is empty);
--   by_signal      without an alert, versions sharing a signal;
--   by_misleading  versions that marked one of p_signals misleading (their lesson is what such a question needs);
--   by_text        full-text matches of any of p_lexemes among this tenant's terms (at most p_text_cap of them),
--                  ranked on p_rank_lexemes (or p_lexemes), then looked up in rank order by primary key until
--                  p_limit qualified; ties break by family id.
-- Each branch returns at most p_limit keys. Call it with named arguments.
--
-- Why a SECURITY DEFINER function (ARCHITECTURE.md, "Briefing search under row-level security"): under RLS
-- PostgreSQL uses an index for a predicate only when its operator is LEAKPROOF, and && and @@ are not. The function
-- is owned by opslore_search (NOLOGIN, BYPASSRLS, SELECT on memory_versions and version_search only), filters every
-- branch on opslore_current_tenant() (no tenant: no rows) and returns keys only; the caller reads the rows under
-- RLS. The measurements behind its shape (the generic plan, the OFFSET 0 fences, the LATERAL primary-key probe,
-- enable_seqscan off) are in migrations 0014, 0015, 0016, 0019, 0020 and 0022, which defined it as
-- opslore_briefing_candidates; migration 0026 dropped that name.
--
-- CREATE OR REPLACE keeps the owner and grants: a change of its parameters or of its result needs the old signature
-- dropped by a forward migration first.
CREATE OR REPLACE FUNCTION opslore_briefing_matches(
    p_services text[], p_signals text[], p_alert text, p_lexemes text[], p_project text, p_limit int, p_text_cap int,
    p_now timestamptz, p_rank_lexemes text[])
  RETURNS TABLE (family_id uuid, version int)
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = public SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
  ROWS 250
  AS $fn$
#variable_conflict use_column
DECLARE
  v_tenant text := opslore_current_tenant();
  v_tsq tsquery := opslore_search_query(opslore_current_tenant(), p_lexemes);  -- this tenant's terms only
  v_rank tsquery := opslore_search_query(opslore_current_tenant(), p_rank_lexemes);
BEGIN
  IF v_tenant IS NULL THEN
    RETURN;  -- no tenant in this transaction: nothing
  END IF;
  RETURN QUERY
    WITH by_service AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE v.tenant = v_tenant AND v.state = 'active' AND v.services && p_services
        AND (p_project IS NULL OR v.project = p_project)
        AND v.valid_from <= p_now AND (v.valid_until IS NULL OR v.valid_until > p_now)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT p_limit),
    by_alert AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE v.tenant = v_tenant AND v.state = 'active' AND v.alert_name = p_alert
        AND (p_project IS NULL OR v.project = p_project)
        AND v.valid_from <= p_now AND (v.valid_until IS NULL OR v.valid_until > p_now)
        AND (v.signals && p_signals OR cardinality(p_signals) = 0)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT p_limit),
    by_signal AS (
      SELECT v.family_id, v.version FROM memory_versions v
      WHERE p_alert IS NULL AND v.tenant = v_tenant AND v.state = 'active' AND v.signals && p_signals
        AND (p_project IS NULL OR v.project = p_project)
        AND v.valid_from <= p_now AND (v.valid_until IS NULL OR v.valid_until > p_now)
      ORDER BY v.last_verified_at DESC NULLS LAST LIMIT p_limit),
    by_misleading AS (
      SELECT m.family_id, m.version FROM (
        SELECT v.family_id, v.version, v.last_verified_at FROM memory_versions v
        WHERE v.tenant = v_tenant AND v.state = 'active' AND v.misleading_signals && p_signals
          AND (p_project IS NULL OR v.project = p_project)
          AND v.valid_from <= p_now AND (v.valid_until IS NULL OR v.valid_until > p_now)
        OFFSET 0) m
      ORDER BY m.last_verified_at DESC NULLS LAST LIMIT p_limit),
    text_matches AS (  -- the terms are this tenant's; the tenant column is only rechecked, after the fence
      SELECT m.family_id, m.version, ts_rank(m.tsv, coalesce(v_rank, v_tsq)) AS r FROM (
        SELECT s.tenant, s.family_id, s.version, s.tsv FROM version_search s
        WHERE v_tsq IS NOT NULL AND s.tsv @@ v_tsq OFFSET 0) m
      WHERE m.tenant = v_tenant
      LIMIT p_text_cap),
    by_text AS (  -- best first; a version is looked up only until p_limit of them qualified
      SELECT m.family_id, m.version FROM (SELECT * FROM text_matches ORDER BY r DESC, family_id) m
      CROSS JOIN LATERAL (SELECT 1 FROM memory_versions v  -- LIMIT 1: one probe of the primary key per match
                          WHERE v.tenant = v_tenant AND v.family_id = m.family_id AND v.version = m.version
                            AND v.state = 'active' AND (p_project IS NULL OR v.project = p_project)
                            AND v.valid_from <= p_now AND (v.valid_until IS NULL OR v.valid_until > p_now)
                          LIMIT 1) v
      LIMIT p_limit)
    SELECT b.family_id, b.version FROM by_service b UNION SELECT b.family_id, b.version FROM by_alert b
    UNION SELECT b.family_id, b.version FROM by_signal b UNION SELECT b.family_id, b.version FROM by_misleading b
    UNION SELECT b.family_id, b.version FROM by_text b;
END
$fn$;

GRANT CREATE ON SCHEMA public TO opslore_search;  -- needed only to take ownership, revoked just below
ALTER FUNCTION opslore_briefing_matches(text[], text[], text, text[], text, int, int, timestamptz, text[])
  OWNER TO opslore_search;
REVOKE CREATE ON SCHEMA public FROM opslore_search;
REVOKE ALL ON FUNCTION opslore_briefing_matches(text[], text[], text, text[], text, int, int, timestamptz, text[])
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_briefing_matches(text[], text[], text, text[], text, int, int, timestamptz, text[])
  TO opslore_app;
