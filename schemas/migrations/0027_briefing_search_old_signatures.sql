-- Every signature the briefing search had under its old name, opslore_briefing_candidates, goes (0026 dropped the
-- last one). Since the squash of #31 the migrations 0005-0022 no longer define or drop it, so a database that had
-- applied some of them as they were (say up to 0014) and the rest as they are now would keep an older signature;
-- here it goes too. A database that never had one drops nothing.
DROP FUNCTION IF EXISTS opslore_briefing_candidates(text[], text[], text, tsquery, text, int, int);
DROP FUNCTION IF EXISTS opslore_briefing_candidates(text[], text[], text, text[], text, int, int);
DROP FUNCTION IF EXISTS opslore_briefing_candidates(text[], text[], text, text[], text, int, int, timestamptz);
DROP FUNCTION IF EXISTS opslore_briefing_candidates(text[], text[], text, text[], text, int, int, timestamptz, text[]);
