-- Indexes for the bounded candidate branches of the briefing read path (see services/briefing/candidates.py)
-- and the category skip-scan of the alternative_root_causes warning.
CREATE INDEX memory_versions_alert_category ON memory_versions (tenant, alert_name, root_cause_category)
  WHERE state = 'active';
CREATE INDEX memory_versions_recent ON memory_versions (tenant, last_verified_at DESC NULLS LAST) WHERE state = 'active';
CREATE INDEX memory_versions_alert_recent ON memory_versions (tenant, alert_name, last_verified_at DESC NULLS LAST)
  WHERE state = 'active';
