-- Full-text candidate search, per tenant in the index itself, and ranked before any version is read.
--
-- 1. Tenant-qualified index terms. version_search.tsv held the bare lexemes under a GIN (tenant, tsv):
--    every text lookup intersected the lexemes' posting lists with the tenant key's posting tree, which
--    holds every version of the tenant (2.3 of 4.6 ms per briefing at 100k versions; auto_explain), and at
--    1M versions the lexemes' lists also carried the nine other tenants' entries. The terms are now
--    '<tenant>/<lexeme>' (tenant names never contain '/': schemas.ledger.TenantName), the GIN is on tsv
--    alone, and its lists are one tenant's. The function builds the query from the bare lexemes and the
--    transaction's tenant, so a caller still cannot look into another tenant's terms; every row is also
--    rechecked on its tenant column.
-- 2. Text branch: rank the (at most p_text_cap) matches first and look up their versions (active? this
--    project?) in rank order, stopping once p_limit qualified. 0014 looked up every match before ranking:
--    200 primary-key probes where ~60 sufficed. Ties in rank break by family id: the branch is deterministic.
-- The other branches are 0014's, unchanged.
CREATE FUNCTION opslore_search_terms(p_tenant text, p_lexemes text[]) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT coalesce(array_agg(p_tenant || '/' || x), '{}') FROM unnest(p_lexemes) x $$;

-- opslore_search_terms stays defined here: the UPDATE below calls it before any repeatable file runs.
-- Squashed (#31): opslore_search_query (any of the lexemes, each quoted verbatim) and the candidate search
-- are no longer defined here, nor is the search's old signature dropped (0026 and 0027 drop every signature
-- it had). Their current definitions are schemas/sql/opslore_search_query.sql and
-- schemas/sql/opslore_briefing_matches.sql, applied after the forward migrations; the text first applied
-- is in git history, its checksum accepted in schemas/migrations/accepted_checksums.txt.

-- rewrite the stored terms: the table forces RLS on its owner too, so for this one statement it does not
ALTER TABLE version_search NO FORCE ROW LEVEL SECURITY;
UPDATE version_search SET tsv = array_to_tsvector(opslore_search_terms(tenant, lexemes));
ALTER TABLE version_search FORCE ROW LEVEL SECURITY;
DROP INDEX version_search_tenant_tsv;
CREATE INDEX version_search_terms ON version_search USING gin (tsv);
