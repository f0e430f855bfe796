-- opslore core schema. Forward-only; applied by `opslore db migrate` as the owner role.
-- Three kinds of tables:
--   system      (no tenant): api_keys (reachable only through SECURITY DEFINER functions), projector_offsets
--   projection  (rebuildable from the ledger alone): ledger_events, episodes, candidates,
--               misleading_signals, family_feedback
--   governed    (decisions of people, never rebuilt, never deleted): candidate_reviews, memory_families,
--               memory_versions, memory_audit, lineage_edges, briefings
-- Every tenant table has row-level security with FORCE, keyed on the transaction-local setting
-- `opslore.tenant` that the application sets from the caller's API key.

CREATE OR REPLACE FUNCTION opslore_current_tenant() RETURNS text
  LANGUAGE sql STABLE AS $$ SELECT nullif(current_setting('opslore.tenant', true), '') $$;

-- ---------------------------------------------------------------- system
CREATE TABLE api_keys (
  key_id      uuid PRIMARY KEY,
  key_hash    text NOT NULL UNIQUE,
  tenant      text NOT NULL,
  project     text,
  role        text NOT NULL CHECK (role IN ('agent', 'reviewer', 'admin')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

CREATE FUNCTION opslore_authenticate(p_hash text)
  RETURNS TABLE (key_id uuid, tenant text, project text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT k.key_id, k.tenant, k.project, k.role FROM api_keys k
     WHERE k.key_hash = p_hash AND k.revoked_at IS NULL $$;

CREATE FUNCTION opslore_create_api_key(p_id uuid, p_hash text, p_tenant text, p_project text, p_role text)
  RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    INSERT INTO api_keys (key_id, key_hash, tenant, project, role)
    VALUES (p_id, p_hash, p_tenant, p_project, p_role) $$;

CREATE TABLE projector_offsets (
  consumer     text NOT NULL,
  topic        text NOT NULL,
  partition    integer NOT NULL,
  next_offset  bigint NOT NULL,
  PRIMARY KEY (consumer, topic, partition)
);

-- ---------------------------------------------------------------- projection
CREATE TABLE ledger_events (
  tenant        text NOT NULL,
  event_id      uuid NOT NULL,
  project       text NOT NULL,
  incident_id   text NOT NULL,
  type          text NOT NULL,
  trust         text NOT NULL,
  writer        jsonb NOT NULL,
  occurred_at   timestamptz NOT NULL,
  recorded_at   timestamptz NOT NULL,
  content_hash  text NOT NULL,
  payload       jsonb NOT NULL,
  source_partition integer NOT NULL,
  source_offset    bigint NOT NULL,
  PRIMARY KEY (tenant, event_id)
);
CREATE INDEX ledger_events_incident ON ledger_events (tenant, incident_id, occurred_at);

CREATE TABLE episodes (
  tenant       text NOT NULL,
  incident_id  text NOT NULL,
  project      text NOT NULL,
  status       text NOT NULL CHECK (status IN ('open', 'resolved')),
  event_count  integer NOT NULL,
  opened_at    timestamptz,
  resolved_at  timestamptz,
  body         jsonb NOT NULL,
  PRIMARY KEY (tenant, incident_id)
);

CREATE TABLE candidates (
  tenant        text NOT NULL,
  candidate_id  uuid NOT NULL,
  project       text NOT NULL,
  incident_id   text NOT NULL,
  memory_type   text NOT NULL CHECK (memory_type IN ('semantic', 'episodic', 'procedural')),
  summary       text NOT NULL,
  content       jsonb NOT NULL,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant, candidate_id)
);
CREATE INDEX candidates_incident ON candidates (tenant, incident_id);

CREATE TABLE misleading_signals (
  tenant       text NOT NULL,
  event_id     uuid NOT NULL,
  project      text NOT NULL,
  incident_id  text NOT NULL,
  signal       text NOT NULL,
  reason       text NOT NULL,
  PRIMARY KEY (tenant, event_id)
);
CREATE INDEX misleading_signals_signal ON misleading_signals (tenant, signal);

CREATE TABLE family_feedback (
  tenant            text NOT NULL,
  family_id         uuid NOT NULL,
  adopted           integer NOT NULL DEFAULT 0,
  refuted           integer NOT NULL DEFAULT 0,
  ignored           integer NOT NULL DEFAULT 0,
  last_feedback_at  timestamptz,
  PRIMARY KEY (tenant, family_id)
);

-- ---------------------------------------------------------------- governed
CREATE TABLE candidate_reviews (
  tenant        text NOT NULL,
  candidate_id  uuid NOT NULL,
  decision      text NOT NULL CHECK (decision IN ('approved', 'rejected')),
  reviewer      text NOT NULL,
  note          text,
  family_id     uuid,
  version       integer,
  decided_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, candidate_id)
);

CREATE TABLE memory_families (
  tenant           text NOT NULL,
  family_id        uuid NOT NULL,
  project          text NOT NULL,
  memory_type      text NOT NULL,
  state            text NOT NULL CHECK (state IN ('active', 'retracted', 'expired')),
  current_version  integer NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, family_id)
);

CREATE TABLE memory_versions (
  tenant               text NOT NULL,
  family_id            uuid NOT NULL,
  version              integer NOT NULL CHECK (version >= 1),
  project              text NOT NULL,
  -- content (immutable once written)
  memory_type          text NOT NULL CHECK (memory_type IN ('semantic', 'episodic', 'procedural')),
  level                text NOT NULL CHECK (level IN ('long', 'permanent')),
  authority            text NOT NULL CHECK (authority IN ('background', 'clue', 'suggestion', 'rule')),
  summary              text NOT NULL,
  canonical_content    text NOT NULL,
  root_cause           text,
  root_cause_category  text,
  alert_name           text,
  services             text[] NOT NULL DEFAULT '{}',
  signals              text[] NOT NULL DEFAULT '{}',
  entities             text[] NOT NULL DEFAULT '{}',
  misleading_signals   text[] NOT NULL DEFAULT '{}',
  source_incidents     text[] NOT NULL DEFAULT '{}',
  evidence             jsonb NOT NULL DEFAULT '[]',
  verify_with          jsonb NOT NULL DEFAULT '[]',
  trust_mix            jsonb NOT NULL DEFAULT '{}',
  confidence           double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
  environment          text,
  cluster              text,
  version_range        text,
  topology_fingerprint text,
  observed_at          timestamptz,
  valid_from           timestamptz NOT NULL,
  valid_until          timestamptz,
  last_verified_at     timestamptz,
  search_tokens        text NOT NULL DEFAULT '',
  search_tsv           tsvector NOT NULL DEFAULT ''::tsvector,
  content_hash         text NOT NULL,
  -- provenance of the version itself
  candidate_id         uuid,
  supersedes           integer,
  created_by           text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  -- lifecycle (the only mutable columns)
  state                text NOT NULL CHECK (state IN ('active', 'superseded', 'retracted', 'expired')),
  state_changed_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, family_id, version)
);
CREATE INDEX memory_versions_tsv ON memory_versions USING gin (search_tsv);
CREATE INDEX memory_versions_services ON memory_versions USING gin (services);
CREATE INDEX memory_versions_signals ON memory_versions USING gin (signals);
CREATE INDEX memory_versions_alert ON memory_versions (tenant, alert_name);
CREATE INDEX memory_versions_category ON memory_versions (tenant, root_cause_category);

CREATE TABLE memory_audit (
  tenant      text NOT NULL,
  audit_id    bigint GENERATED ALWAYS AS IDENTITY,
  family_id   uuid NOT NULL,
  version     integer,
  action      text NOT NULL,
  actor       text NOT NULL,
  reason      text,
  before      jsonb,
  after       jsonb,
  at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, audit_id)
);
CREATE INDEX memory_audit_family ON memory_audit (tenant, family_id, audit_id);

CREATE TABLE lineage_edges (
  tenant     text NOT NULL,
  src_kind   text NOT NULL,
  src_id     text NOT NULL,
  relation   text NOT NULL,
  dst_kind   text NOT NULL,
  dst_id     text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, src_kind, src_id, relation, dst_kind, dst_id)
);
CREATE INDEX lineage_edges_dst ON lineage_edges (tenant, dst_kind, dst_id);

CREATE TABLE briefings (
  tenant       text NOT NULL,
  briefing_id  uuid NOT NULL,
  project      text,
  requested_by uuid,
  request      jsonb NOT NULL,
  cited        jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, briefing_id)
);

-- ---------------------------------------------------------------- invariants enforced by the database
CREATE FUNCTION opslore_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (to_jsonb(NEW) - 'state' - 'state_changed_at') IS DISTINCT FROM
     (to_jsonb(OLD) - 'state' - 'state_changed_at') THEN
    RAISE EXCEPTION 'memory versions are immutable; only state may change'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER memory_versions_immutable BEFORE UPDATE ON memory_versions
  FOR EACH ROW EXECUTE FUNCTION opslore_versions_immutable();

CREATE FUNCTION opslore_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER memory_audit_append_only BEFORE UPDATE OR DELETE ON memory_audit
  FOR EACH ROW EXECUTE FUNCTION opslore_append_only();
CREATE TRIGGER memory_versions_no_delete BEFORE DELETE ON memory_versions
  FOR EACH ROW EXECUTE FUNCTION opslore_append_only();
CREATE TRIGGER memory_families_no_delete BEFORE DELETE ON memory_families
  FOR EACH ROW EXECUTE FUNCTION opslore_append_only();
CREATE TRIGGER candidate_reviews_no_delete BEFORE DELETE ON candidate_reviews
  FOR EACH ROW EXECUTE FUNCTION opslore_append_only();

-- ---------------------------------------------------------------- row-level security and grants
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['ledger_events', 'episodes', 'candidates', 'misleading_signals',
                           'family_feedback', 'candidate_reviews', 'memory_families',
                           'memory_versions', 'memory_audit', 'lineage_edges', 'briefings']
  LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant = opslore_current_tenant())
                    WITH CHECK (tenant = opslore_current_tenant())', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO opslore_app', t);
  END LOOP;
END $$;
-- projection rows may be removed by the projector only through a rebuild (TRUNCATE, owner role)
REVOKE UPDATE ON memory_audit FROM opslore_app;
GRANT SELECT, INSERT, UPDATE ON projector_offsets TO opslore_app;
REVOKE ALL ON api_keys FROM PUBLIC;
REVOKE ALL ON FUNCTION opslore_authenticate(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION opslore_create_api_key(uuid, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_authenticate(text) TO opslore_app;
GRANT EXECUTE ON FUNCTION opslore_create_api_key(uuid, text, text, text, text) TO opslore_app;
