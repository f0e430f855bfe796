-- The lexical search index moves out of the immutable version rows into its own derived tables,
-- written by one function (services/lexicon/index.py) in the version's transaction.
-- Why: the old column was built with to_tsvector('simple', ...), which split `concept:db_pool_exhausted`
-- into four words, so alias concepts and any lexeme containing `_ : .` never matched in SQL (the
-- benchmark built it differently, with array_to_tsvector, and measured another index). A separate
-- table also lets the index be rebuilt (a new analyzer or alias dictionary) without touching versions.
--
--   version_search   one row per indexed version: the analyzer's lexemes, as an array (for the
--                    in-process BM25) and as a tsvector built with array_to_tsvector (verbatim lexemes)
--   lexeme_stats     per tenant and lexeme: in how many indexed versions it occurs (BM25 idf)
--   search_corpus    per tenant: number of indexed versions and their total length (BM25 avgdl)
CREATE TABLE version_search (
  tenant      text NOT NULL,
  family_id   uuid NOT NULL,
  version     integer NOT NULL,
  analyzer    text NOT NULL,
  lexemes     text[] NOT NULL,
  doc_length  integer NOT NULL CHECK (doc_length >= 0),
  tsv         tsvector NOT NULL,
  PRIMARY KEY (tenant, family_id, version),
  FOREIGN KEY (tenant, family_id, version) REFERENCES memory_versions (tenant, family_id, version)
);
CREATE INDEX version_search_tenant_tsv ON version_search USING gin (tenant, tsv);

CREATE TABLE lexeme_stats (
  tenant  text NOT NULL,
  lexeme  text NOT NULL,
  df      integer NOT NULL CHECK (df >= 0),
  PRIMARY KEY (tenant, lexeme)
);
CREATE TABLE search_corpus (
  tenant        text PRIMARY KEY,
  docs          integer NOT NULL CHECK (docs >= 0),
  total_length  bigint NOT NULL CHECK (total_length >= 0)
);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['version_search', 'lexeme_stats', 'search_corpus'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant = opslore_current_tenant())
                    WITH CHECK (tenant = opslore_current_tenant())', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO opslore_app', t);
  END LOOP;
END $$;
-- a lexical reindex (new analyzer) replaces a tenant's derived rows; versions themselves never change
GRANT DELETE ON version_search, lexeme_stats, search_corpus TO opslore_app;
GRANT SELECT ON version_search TO opslore_search;

-- Backfill from the lexemes the old rows kept (space-separated, verbatim analyzer output).
INSERT INTO version_search (tenant, family_id, version, analyzer, lexemes, doc_length, tsv)
SELECT v.tenant, v.family_id, v.version, 'lexicon/0',
       coalesce(l.lexemes, '{}'), coalesce(cardinality(l.lexemes), 0), array_to_tsvector(coalesce(l.lexemes, '{}'))
FROM memory_versions v
CROSS JOIN LATERAL (SELECT array_agg(DISTINCT x) AS lexemes
                    FROM unnest(string_to_array(v.search_tokens, ' ')) x WHERE x <> '') l;
INSERT INTO lexeme_stats (tenant, lexeme, df)
SELECT tenant, x, count(*) FROM version_search, unnest(lexemes) x GROUP BY tenant, x;
INSERT INTO search_corpus (tenant, docs, total_length)
SELECT tenant, count(*), coalesce(sum(doc_length), 0) FROM version_search GROUP BY tenant;

DROP INDEX memory_versions_tenant_tsv;
DROP INDEX memory_versions_tsv;
ALTER TABLE memory_versions DROP COLUMN search_tsv;
CREATE INDEX memory_versions_tenant_misleading ON memory_versions USING gin (tenant, misleading_signals)
  WHERE state = 'active';

-- The candidate search, now with the text branch over version_search and a branch for records that marked
-- a requested signal as misleading (their lesson is exactly what such a request needs), was redefined here.
-- Squashed (#31): the function is no longer defined here. Its one current definition is
-- schemas/sql/opslore_briefing_matches.sql, applied after the forward migrations; the text first applied
-- is in git history, its checksum accepted in schemas/migrations/accepted_checksums.txt.
