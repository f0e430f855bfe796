-- The abstention point of a tenant, calibrated from its own approved history (services/briefing/calibration.py):
-- each approved record asked with its own symptoms against the others (leave-one-out), the threshold chosen by the
-- checks a planner would spend. One row per tenant and embedding model (or 'lexical'); replaced by each run.
CREATE TABLE briefing_calibration (
  tenant        text NOT NULL,
  model         text NOT NULL,
  min_relevance double precision NOT NULL CHECK (min_relevance >= 0 AND min_relevance <= 1),
  records       integer NOT NULL,  -- indexed versions (search_corpus.docs) when it was computed
  questions     integer NOT NULL,
  recurrences   integer NOT NULL,
  novel         integer NOT NULL,
  status        text NOT NULL CHECK (status IN ('calibrated', 'insufficient')),
  curve         jsonb NOT NULL,
  computed_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, model)
);
ALTER TABLE briefing_calibration ENABLE ROW LEVEL SECURITY;
ALTER TABLE briefing_calibration FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON briefing_calibration USING (tenant = opslore_current_tenant())
  WITH CHECK (tenant = opslore_current_tenant());
GRANT SELECT, INSERT, UPDATE ON briefing_calibration TO opslore_app;
