-- The review queue as a metric (depth and age of pending candidates per tenant), for on-call alerting.
-- Aggregates only; owned by opslore_search (BYPASSRLS, read-only) like the briefing search function.
CREATE OR REPLACE FUNCTION opslore_review_queue()
  RETURNS TABLE (tenant text, pending bigint, oldest timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT c.tenant, count(*), min(c.created_at) FROM candidates c
     WHERE NOT EXISTS (SELECT 1 FROM candidate_reviews r
                        WHERE r.tenant = c.tenant AND r.candidate_id = c.candidate_id)
     GROUP BY c.tenant $$;
GRANT CREATE ON SCHEMA public TO opslore_search;  -- needed only to take ownership, revoked just below
ALTER FUNCTION opslore_review_queue() OWNER TO opslore_search;
REVOKE CREATE ON SCHEMA public FROM opslore_search;
REVOKE ALL ON FUNCTION opslore_review_queue() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION opslore_review_queue() TO opslore_app;
