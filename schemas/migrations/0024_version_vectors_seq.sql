-- The semantic branch recalls over all of a tenant's current records through an in-process HNSW index
-- (services/briefing/vectors.py), built from these rows per tenant and model and kept current by reading the
-- rows added since the last one it holds. `seq` is that order: an identity, so each process can ask "what is
-- new since seq N" by an index range scan. PostgreSQL stays the source of truth; the index is derived.
ALTER TABLE version_vectors ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX version_vectors_tenant_model_seq ON version_vectors (tenant, model, seq);
