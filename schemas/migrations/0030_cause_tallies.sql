-- Incidents per root-cause category of each tenant's active memory (services/briefing/history.py), kept by the
-- database so that a briefing reads its base rates from a handful of rows instead of joining every family with
-- its current version (181-190 ms at 100k records, paid by each API process's first briefing of a tenant).
--
-- Invariant: a row holds, for (tenant, project, category), the sum over the ACTIVE families whose current
-- version exists and carries that category of greatest(cardinality(source_incidents), 1). Two immediate row
-- triggers keep it, whatever the order in which a writer inserts a family and its first version:
--   * a family inserted or updated (state, current_version) takes its old contribution out and puts its new one
--     in; a current version that does not exist yet contributes nothing;
--   * a version inserted adds its contribution when its family already exists, is active and points at it
--     (the case the family trigger could not count).
-- Versions' content is immutable (opslore_versions_immutable), so a contribution never changes under a row.
-- Every writer is covered: the memory service (records.apply), restore (row by row under each tenant's RLS) and
-- the benches' bulk loads. The table is derived: backups leave it out, and it can be recomputed at any time
-- with opslore_cause_tallies_recount() (the owner's; the migration runs it once for the rows that exist).
-- The upsert takes the tally row's lock until commit: approvals of one tenant's category serialise on it (they
-- are short); two transactions moving several categories in opposite orders can deadlock, which PostgreSQL
-- breaks by aborting one (503 with Retry-After, as for any transaction rollback).
CREATE TABLE cause_tallies (
  tenant     text NOT NULL,
  project    text NOT NULL,
  category   text NOT NULL,
  incidents  bigint NOT NULL,
  families   bigint NOT NULL,
  PRIMARY KEY (tenant, project, category)
);
ALTER TABLE cause_tallies ENABLE ROW LEVEL SECURITY;
ALTER TABLE cause_tallies FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON cause_tallies USING (tenant = opslore_current_tenant())
  WITH CHECK (tenant = opslore_current_tenant());
GRANT SELECT, INSERT, UPDATE ON cause_tallies TO opslore_app;

CREATE FUNCTION opslore_cause_tally_add(p_tenant text, p_project text, p_family uuid, p_version integer,
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

CREATE FUNCTION opslore_cause_tallies_of_family() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF OLD.state = NEW.state AND OLD.current_version = NEW.current_version AND OLD.project = NEW.project THEN
      RETURN NULL;
    END IF;
    IF OLD.state = 'active' THEN
      PERFORM opslore_cause_tally_add(OLD.tenant, OLD.project, OLD.family_id, OLD.current_version, -1);
    END IF;
  END IF;
  IF NEW.state = 'active' THEN
    PERFORM opslore_cause_tally_add(NEW.tenant, NEW.project, NEW.family_id, NEW.current_version, 1);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION opslore_cause_tallies_of_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM memory_families f WHERE f.tenant = NEW.tenant AND f.family_id = NEW.family_id
             AND f.state = 'active' AND f.current_version = NEW.version) THEN
    PERFORM opslore_cause_tally_add(NEW.tenant, (SELECT f.project FROM memory_families f
                                                 WHERE f.tenant = NEW.tenant AND f.family_id = NEW.family_id),
                                    NEW.family_id, NEW.version, 1);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER memory_families_cause_tallies AFTER INSERT OR UPDATE ON memory_families
  FOR EACH ROW EXECUTE FUNCTION opslore_cause_tallies_of_family();
CREATE TRIGGER memory_versions_cause_tallies AFTER INSERT ON memory_versions
  FOR EACH ROW EXECUTE FUNCTION opslore_cause_tallies_of_version();

-- The tallies recomputed from the families and versions (the owner's: it reads and writes every tenant).
CREATE FUNCTION opslore_cause_tallies_recount() RETURNS bigint LANGUAGE sql AS $$
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

-- The owner is subject to FORCE ROW LEVEL SECURITY like everyone: the one-off recount runs with it lifted.
ALTER TABLE cause_tallies NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memory_families NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memory_versions NO FORCE ROW LEVEL SECURITY;
SELECT opslore_cause_tallies_recount();
ALTER TABLE cause_tallies FORCE ROW LEVEL SECURITY;
ALTER TABLE memory_families FORCE ROW LEVEL SECURITY;
ALTER TABLE memory_versions FORCE ROW LEVEL SECURITY;

-- The uncategorised records' root causes (history.py's second statement) without a scan of every version.
CREATE INDEX memory_versions_uncategorised ON memory_versions (tenant, family_id, version)
  WHERE root_cause_category IS NULL;
