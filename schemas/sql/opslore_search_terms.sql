-- A version's index terms: each lexeme qualified by its tenant ('<tenant>/<lexeme>'; tenant names never contain
-- '/'), so that one GIN posting list of version_search.tsv holds one tenant's entries (migration 0015).
CREATE OR REPLACE FUNCTION opslore_search_terms(p_tenant text, p_lexemes text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT coalesce(array_agg(p_tenant || '/' || x), '{}') FROM unnest(p_lexemes) x $$;
