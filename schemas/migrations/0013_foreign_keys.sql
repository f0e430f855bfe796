-- Rows that reference rows get foreign keys (governed tables only). Every key includes the tenant, so a
-- reference can never cross tenants. The family's current pointer and its versions reference each other:
-- that key is checked at commit (DEFERRABLE INITIALLY DEFERRED), after both rows are written.
-- Not here, on purpose: a review cannot reference its candidate (candidates are a projection that a
-- rebuild truncates and re-derives, while reviews are governed and never deleted), and lineage edges
-- are polymorphic (kind, id) pairs over several tables.
ALTER TABLE memory_versions ADD CONSTRAINT memory_versions_family_fk
  FOREIGN KEY (tenant, family_id) REFERENCES memory_families (tenant, family_id);
ALTER TABLE memory_versions ADD CONSTRAINT memory_versions_supersedes_fk
  FOREIGN KEY (tenant, family_id, supersedes) REFERENCES memory_versions (tenant, family_id, version);
ALTER TABLE memory_families ADD CONSTRAINT memory_families_current_fk
  FOREIGN KEY (tenant, family_id, current_version) REFERENCES memory_versions (tenant, family_id, version)
  DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memory_audit ADD CONSTRAINT memory_audit_family_fk
  FOREIGN KEY (tenant, family_id) REFERENCES memory_families (tenant, family_id);
ALTER TABLE candidate_reviews ADD CONSTRAINT candidate_reviews_version_fk
  FOREIGN KEY (tenant, family_id, version) REFERENCES memory_versions (tenant, family_id, version);
ALTER TABLE version_vectors ADD CONSTRAINT version_vectors_version_fk
  FOREIGN KEY (tenant, family_id, version) REFERENCES memory_versions (tenant, family_id, version);
