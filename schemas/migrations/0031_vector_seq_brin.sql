-- 0029's btree on version_vectors (seq) let the planner answer a tenant's "vectors newer than my snapshot" read
-- (services/briefing/vectors.py: model, seq > the snapshot's, ORDER BY seq LIMIT n) by walking that global index
-- and filtering on the tenant: with a tenant whose snapshot covers its rows and other tenants writing after it,
-- every briefing walked every newer row of every other tenant (943 ms at 1M vectors in ten tenants, the bench's
-- shape), where (tenant, model, seq) answers in 0.4 ms. A BRIN index serves the snapshot builder's tick
-- (opslore_vector_tenants_since: seq > a watermark, rows appended in seq order, so a few block ranges at the
-- table's end) and gives no order, so no per-tenant read can be planned on it.
DROP INDEX version_vectors_seq;
CREATE INDEX version_vectors_seq_brin ON version_vectors USING brin (seq);
