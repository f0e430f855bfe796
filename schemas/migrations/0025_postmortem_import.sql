-- Postmortem import (CONTRACT v1.2). Candidates and versions say whether they came from a postmortem the team
-- wrote and a reviewer imported (the evidence gate's one other way in): the review queue filters on it, hints
-- citing such a version warn `imported_unverified` until adopted feedback confirms it.
ALTER TABLE candidates ADD COLUMN imported boolean NOT NULL DEFAULT false;
CREATE INDEX candidates_imported ON candidates (tenant, created_at) WHERE imported;
ALTER TABLE memory_versions ADD COLUMN imported boolean NOT NULL DEFAULT false;

-- Documents already imported, per tenant and project: the same document (same incident, same content) imported
-- again appends nothing and answers what the first import did. Written after the events were appended, so a
-- crash in between can only append the same event ids again (a no-op everywhere).
CREATE TABLE postmortem_imports (
  tenant          text NOT NULL,
  project         text NOT NULL,
  incident_id     text NOT NULL,
  content_sha256  text NOT NULL CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
  source_ref      text,
  event_ids       uuid[] NOT NULL,
  candidate       boolean NOT NULL,
  unparsed        text[] NOT NULL DEFAULT '{}',
  imported_by     text NOT NULL,
  imported_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, project, incident_id, content_sha256)
);
ALTER TABLE postmortem_imports ENABLE ROW LEVEL SECURITY;
ALTER TABLE postmortem_imports FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON postmortem_imports USING (tenant = opslore_current_tenant())
  WITH CHECK (tenant = opslore_current_tenant());
GRANT SELECT, INSERT ON postmortem_imports TO opslore_app;
