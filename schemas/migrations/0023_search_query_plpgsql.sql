-- opslore_search_query in PL/pgSQL instead of SQL: same body, same result, one plan per session.
-- The candidate function computes its two tsqueries with it in its DECLARE block. A SQL function that is not
-- inlinable (this one has a FROM) is parsed and planned again whenever its call site's executor state is new,
-- and a PL/pgSQL simple expression's state lasts one transaction: every briefing paid two parses and plans of
-- this body. A PL/pgSQL function keeps its compiled body and the inner query's plan for the session.
-- pgbench, one client, BEGIN + set_config + the candidate function + COMMIT for a bench question against a
-- 40-version tenant: 0.61-0.80 ms before, 0.61-0.67 ms after (3 alternating runs of 4 s); a call of the
-- function alone in a loop inside one transaction cost the same either way, as it should.
CREATE OR REPLACE FUNCTION opslore_search_query(p_tenant text, p_lexemes text[]) RETURNS tsquery
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
BEGIN
  RETURN (SELECT string_agg('''' || replace(replace(p_tenant || '/' || x, '\', '\\'), '''', '''''') || '''',
                            ' | ')::tsquery
          FROM unnest(p_lexemes) x);
END
$$;
