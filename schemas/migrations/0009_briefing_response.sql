-- The answer an agent received, stored with the briefing in the same transaction, so that
-- GET /v1/briefings/{id} returns exactly that answer (an alert-enrichment link, an audit of what was said).
-- NULL for briefings recorded before this column existed.
ALTER TABLE briefings ADD COLUMN response jsonb;
