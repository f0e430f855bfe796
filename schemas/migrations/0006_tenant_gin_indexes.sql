-- Tenant-leading GIN indexes for the briefing branches (btree_gin is a trusted extension: the database
-- owner may create it). Without the tenant in the index, `services && ...` matched the same service
-- names in every tenant and the bitmap scan filtered most rows away: latency grew with the total
-- number of records instead of the tenant's own.
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE INDEX memory_versions_tenant_services ON memory_versions USING gin (tenant, services) WHERE state = 'active';
CREATE INDEX memory_versions_tenant_signals ON memory_versions USING gin (tenant, signals) WHERE state = 'active';
CREATE INDEX memory_versions_tenant_tsv ON memory_versions USING gin (tenant, search_tsv) WHERE state = 'active';
