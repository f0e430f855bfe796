-- Trigger of memory_families (migration 0030): a family inserted or moved (state, current version, project)
-- takes its old contribution to cause_tallies out and puts its new one in.
CREATE OR REPLACE FUNCTION opslore_cause_tallies_of_family() RETURNS trigger LANGUAGE plpgsql AS $$
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
