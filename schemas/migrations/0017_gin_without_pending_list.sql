-- GIN indexes that briefings search: no pending list (fastupdate = off).
-- With fastupdate on, every insert goes to an unsorted pending list that each search reads in full until
-- VACUUM (or 4 MB of pending entries) merges it into the tree. Approvals trickle in, so autovacuum rarely
-- runs: on the long-lived development database `version_search_terms` had 206 pending pages (966 entries)
-- and the text branch's index scan took 1.13 ms to find 60 rows of a 143-version tenant, a third of the
-- candidate function's time. Off, an approval pays the GIN insert itself (memory writes are rare, reads are
-- the hot path) and a search's cost no longer depends on when the table was last vacuumed.
-- The entries already pending are merged now.
ALTER INDEX version_search_terms SET (fastupdate = off);
ALTER INDEX memory_versions_services SET (fastupdate = off);
ALTER INDEX memory_versions_signals SET (fastupdate = off);
ALTER INDEX memory_versions_tenant_services SET (fastupdate = off);
ALTER INDEX memory_versions_tenant_signals SET (fastupdate = off);
ALTER INDEX memory_versions_tenant_misleading SET (fastupdate = off);

SELECT gin_clean_pending_list(i::regclass) FROM unnest(ARRAY[
  'version_search_terms', 'memory_versions_services', 'memory_versions_signals', 'memory_versions_tenant_services',
  'memory_versions_tenant_signals', 'memory_versions_tenant_misleading']) AS i;
