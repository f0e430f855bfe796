-- The semantic index snapshot builder (services/briefing/snapshot_builder.py) asks, each tick, which tenants have
-- vectors newer than the highest seq it has seen (schemas/sql/opslore_vector_tenants_since.sql), so that an idle
-- system costs one index probe a tick whatever the number of tenants. That function is owned by opslore_search
-- (BYPASSRLS, read-only), which reads tenant names and seqs of version_vectors through it and nothing else.
CREATE INDEX version_vectors_seq ON version_vectors (seq);
GRANT SELECT ON version_vectors TO opslore_search;
