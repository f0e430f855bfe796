-- cause_tallies recomputed from the families' current versions (the owner's: every tenant; migration 0030).
CREATE OR REPLACE FUNCTION opslore_cause_tallies_recount() RETURNS bigint LANGUAGE sql AS $$
  DELETE FROM cause_tallies;
  INSERT INTO cause_tallies (tenant, project, category, incidents, families)
    SELECT f.tenant, f.project, v.root_cause_category, sum(greatest(cardinality(v.source_incidents), 1)), count(*)
    FROM memory_families f
    JOIN memory_versions v ON v.tenant = f.tenant AND v.family_id = f.family_id AND v.version = f.current_version
    WHERE f.state = 'active' AND v.root_cause_category IS NOT NULL
    GROUP BY f.tenant, f.project, v.root_cause_category;
  SELECT count(*) FROM cause_tallies;
$$;
REVOKE ALL ON FUNCTION opslore_cause_tallies_recount() FROM PUBLIC;
