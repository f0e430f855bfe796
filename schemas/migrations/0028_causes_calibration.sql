-- The causes model of a tenant (services/briefing/causes.py), calibrated from its own lived history
-- (services/briefing/causes_calibrator.py): every approved incident asked against what was approved before it,
-- and the confirmed or refuted causes of its briefings' feedback. One row per tenant and ranker model; replaced
-- by each run. `model_doc` is CausesModel.to_json(); `report` the run's own figures (questions, Brier scores).
CREATE TABLE causes_calibration (
  tenant        text NOT NULL,
  model         text NOT NULL,
  model_doc     jsonb NOT NULL,
  records       integer NOT NULL,  -- active records (families) when it was computed
  questions     integer NOT NULL,
  report        jsonb NOT NULL,
  computed_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, model)
);
ALTER TABLE causes_calibration ENABLE ROW LEVEL SECURITY;
ALTER TABLE causes_calibration FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON causes_calibration USING (tenant = opslore_current_tenant())
  WITH CHECK (tenant = opslore_current_tenant());
GRANT SELECT, INSERT, UPDATE ON causes_calibration TO opslore_app;
