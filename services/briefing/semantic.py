"""SemanticIndex: the optional embedding branch of the briefing (vectors in PostgreSQL, per model).

Write side: `index_version` stores a version's vector under `model_key(embedder)` in the caller's
transaction. Read side: `similarities` scores candidate rows against the query for the tenant's active
model. Maintenance: `reindex` fills a model's vectors for every current version of a tenant and, when
asked and complete, makes it the active model; until then briefings keep serving the old one.
Any failure of the embedder is the caller's cue to answer lexically and report `degraded: ["embedding"]`.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import numpy as np

from schemas.memory import VersionContent
from services.briefing.embedding import Embedder, HashingNgramEmbedder, MultilingualE5Embedder
from services.briefing.facts import RecordFacts
from services.common.db import Cursor, Database
from services.lexicon.index import search_text
from services.memory import records as R


def model_key(embedder: Embedder) -> str:
    return f"{embedder.name}/{embedder.version}/{embedder.dims}"


def make_embedder(name: str) -> Embedder | None:
    """`off` (default), `e5-small` (pretrained, needs the `embedding` extra) or `hash-ngram`;
    unknown names are a configuration error."""
    if name == "off":
        return None
    if name == "hash-ngram":
        return HashingNgramEmbedder()
    if name == "e5-small":
        return MultilingualE5Embedder()
    raise ValueError(f"unknown embedding {name!r}: use off, e5-small or hash-ngram")


class SemanticIndex:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model = model_key(embedder)
        self.calibration = embedder.calibration

    def index_version(self, cur: Cursor, tenant: str, family_id: UUID, version: int,
                      content: VersionContent) -> None:
        vector = self.embedder.embed([search_text(content)])[0]
        cur.execute(
            """INSERT INTO version_vectors (tenant, family_id, version, model, vector) VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT DO NOTHING""",
            (tenant, family_id, version, self.model, [float(x) for x in vector]),
        )

    def active_model(self, cur: Cursor) -> str:
        cur.execute("SELECT active_model FROM embedding_state")
        row = cur.fetchone()
        return str(row["active_model"]) if row else self.model

    def similarities(self, cur: Cursor, text: str, rows: list[RecordFacts]) -> dict[tuple[str, int], float]:
        if not rows or not text.strip():
            return {}
        model = self.active_model(cur)
        if model != self.model:  # serving an older model's vectors: the query must use that model too
            return {}
        cur.execute(
            """SELECT family_id, version, vector FROM version_vectors
               WHERE model = %s AND (family_id, version) IN (SELECT * FROM unnest(%s::uuid[], %s::int[]))""",
            (model, [r.family_id for r in rows], [r.version for r in rows]),
        )
        query = self.embedder.embed_query(text)
        return {(str(r["family_id"]), int(r["version"])): float(np.dot(np.asarray(r["vector"], np.float32), query))
                for r in cur.fetchall()}


def reindex(db: Database, index: SemanticIndex, tenant: str, *, activate: bool) -> dict[str, Any]:
    """Fill `index.model` vectors for every current version of `tenant`; flip to it when complete."""
    written = 0
    with db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT family_id, version FROM version_vectors WHERE model = %s", (index.model,))
        done = {(r["family_id"], r["version"]) for r in cur.fetchall()}
        for row in R.current_versions(cur):
            if (row["family_id"], row["version"]) not in done:
                index.index_version(cur, tenant, row["family_id"], row["version"], R.content_of(row))
                written += 1
        if activate:
            cur.execute(
                """INSERT INTO embedding_state (tenant, active_model) VALUES (%s, %s)
                   ON CONFLICT (tenant) DO UPDATE SET active_model = EXCLUDED.active_model, updated_at = now()""",
                (tenant, index.model),
            )
    return {"tenant": tenant, "model": index.model, "vectors_written": written, "active": activate}
