-- The transaction's tenant, from the setting `opslore.tenant` that the application sets from the caller's API key;
-- NULL when unset. Every row-level security policy compares against it (so it is replaced in place, never dropped).
CREATE OR REPLACE FUNCTION opslore_current_tenant() RETURNS text
  LANGUAGE sql STABLE AS $$ SELECT nullif(current_setting('opslore.tenant', true), '') $$;
