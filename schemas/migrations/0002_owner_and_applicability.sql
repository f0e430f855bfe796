-- Record versions name an owner (team or person accountable for the memory), and distinguish where a
-- lesson was learned (environment/cluster/version: a warning when they differ) from an explicit
-- restriction set by a reviewer (applicability_restricted: records outside it are dropped).
ALTER TABLE memory_versions ADD COLUMN owner text;
ALTER TABLE memory_versions ADD COLUMN applicability_restricted boolean NOT NULL DEFAULT false;
