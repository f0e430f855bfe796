-- The tsquery of any of the lexemes among this tenant's terms, each quoted verbatim (tsquery input: a quote is
-- doubled, a backslash escaped); NULL for no lexemes. PL/pgSQL, not SQL: it keeps its compiled body and plan for
-- the session, where a non-inlinable SQL function was parsed and planned again per transaction (migration 0023).
CREATE OR REPLACE FUNCTION opslore_search_query(p_tenant text, p_lexemes text[]) RETURNS tsquery
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
BEGIN
  RETURN (SELECT string_agg('''' || replace(replace(p_tenant || '/' || x, '\', '\\'), '''', '''''') || '''',
                            ' | ')::tsquery
          FROM unnest(p_lexemes) x);
END
$$;
