-- The briefing's search is named for what it returns: opslore_briefing_matches (schemas/sql/, the one current
-- definition, applied after the forward migrations), the keys of the records that match a question. "Candidate"
-- is the word for a Memory Candidate only. The old name goes; its definition is unchanged under the new one.
DROP FUNCTION IF EXISTS opslore_briefing_candidates(text[], text[], text, text[], text, int, int, timestamptz, text[]);
