-- The review queue as a metric (depth and age of pending candidates per tenant), for on-call alerting.
-- Aggregates only; owned by opslore_search (BYPASSRLS, read-only) like the briefing search function.
-- Squashed (#31): the function is no longer defined here. Its one current definition is
-- schemas/sql/opslore_review_queue.sql, applied after the forward migrations; the text first applied
-- is in git history, its checksum accepted in schemas/migrations/accepted_checksums.txt.
GRANT SELECT ON candidates, candidate_reviews TO opslore_search;
