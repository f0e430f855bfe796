-- Adds (p_sign 1) or takes out (-1) one family's contribution to cause_tallies: its version's category and
-- incidents (migration 0030); a missing version or one without a category contributes nothing.
CREATE OR REPLACE FUNCTION opslore_cause_tally_add(p_tenant text, p_project text, p_family uuid, p_version integer,
                                        p_sign integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c text; n bigint;
BEGIN
  SELECT v.root_cause_category, greatest(cardinality(v.source_incidents), 1) INTO c, n
    FROM memory_versions v WHERE v.tenant = p_tenant AND v.family_id = p_family AND v.version = p_version;
  IF c IS NULL THEN
    RETURN;  -- no such version yet, or one without a category (history.py groups those by root cause)
  END IF;
  INSERT INTO cause_tallies AS t (tenant, project, category, incidents, families)
    VALUES (p_tenant, p_project, c, p_sign * n, p_sign)
    ON CONFLICT (tenant, project, category)
    DO UPDATE SET incidents = t.incidents + EXCLUDED.incidents, families = t.families + EXCLUDED.families;
END $$;
