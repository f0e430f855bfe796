-- Trigger of memory_versions (migration 0030): a version inserted after its family already points at it adds
-- the contribution the family's trigger could not count.
CREATE OR REPLACE FUNCTION opslore_cause_tallies_of_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM memory_families f WHERE f.tenant = NEW.tenant AND f.family_id = NEW.family_id
             AND f.state = 'active' AND f.current_version = NEW.version) THEN
    PERFORM opslore_cause_tally_add(NEW.tenant, (SELECT f.project FROM memory_families f
                                                 WHERE f.tenant = NEW.tenant AND f.family_id = NEW.family_id),
                                    NEW.family_id, NEW.version, 1);
  END IF;
  RETURN NULL;
END $$;
