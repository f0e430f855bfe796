-- Briefing candidate search as one SECURITY DEFINER function.
-- Why: under row-level security PostgreSQL uses an index for a query predicate only when its operator is
-- LEAKPROOF; array overlap (&&) and full-text match (@@) are not, so the GIN indexes on services,
-- signals and search_tsv were unusable and every briefing scanned the tenant's whole table.
-- How it stays isolated: the function is owned by opslore_search (NOLOGIN, BYPASSRLS, SELECT on
-- memory_versions only) and filters every branch on opslore_current_tenant(), the same transaction
-- setting the RLS policies compare against; with no setting it returns nothing. It returns only ids;
-- the caller reads the rows themselves under RLS.
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'opslore_search') THEN
    RAISE EXCEPTION 'role opslore_search is missing: run deploy/local/postgres.sh start (it creates the roles)';
  END IF;
END $$;

-- Squashed (#31): the function is no longer defined here. Its one current definition is
-- schemas/sql/opslore_briefing_matches.sql, applied after the forward migrations; the text first applied
-- is in git history, its checksum accepted in schemas/migrations/accepted_checksums.txt.
GRANT SELECT ON memory_versions TO opslore_search;
