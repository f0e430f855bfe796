-- Trigger function of the append-only tables (memory_audit; no DELETE on versions, families, reviews, proposals,
-- governance runs): any UPDATE or DELETE it guards is refused.
CREATE OR REPLACE FUNCTION opslore_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END $$;
