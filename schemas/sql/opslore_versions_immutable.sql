-- Trigger function (memory_versions, BEFORE UPDATE): a version is immutable; only its state may change.
CREATE OR REPLACE FUNCTION opslore_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (to_jsonb(NEW) - 'state' - 'state_changed_at') IS DISTINCT FROM
     (to_jsonb(OLD) - 'state' - 'state_changed_at') THEN
    RAISE EXCEPTION 'memory versions are immutable; only state may change'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
