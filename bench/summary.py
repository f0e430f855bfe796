"""The closing step of `make bench`: one JSON with every figure of this run, and a short table.

    python -m bench.summary --since <unix time the run started>

Collects the newest result of each benchmark written since `--since` (bench.run's latest-full/small,
mcp, governance, throughput, projector-scaleout), writes bench/results/make-bench-<time>.json and
prints the figures next to the scale-out goals (issue "scale out on the engines we already run").
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
KINDS = {"core": "bench-*.json", "mcp": "mcp-*.json", "governance": "governance-*.json",
         "throughput": "throughput-*.json", "projector_scaleout": "projector-scaleout-*.json"}


def newest(pattern: str, since: float) -> dict[str, Any] | None:
    files = [f for f in RESULTS.glob(pattern) if f.stat().st_mtime >= since and "partial" not in f.name]
    if not files:
        return None
    data: dict[str, Any] = json.loads(max(files, key=lambda f: f.stat().st_mtime).read_text())
    return data


def goals(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, measured, goal) rows for the table."""
    rows: list[tuple[str, str, str]] = []
    core = run.get("core") or {}
    for size, b in (core.get("briefing") or {}).items():
        ms = b["latency_ms"]
        rows.append((f"briefing in-process at {int(size):,} records", f"p50 {ms['p50']} / p95 {ms['p95']} / "
                     f"p99 {ms['p99']} ms", "p95 <= 15, p99 <= 45 ms at 1M" if size == "1000000" else ""))
        cold, hit = b.get("latency_without_version_cache_ms"), b.get("version_cache_hit_ratio")
        if cold and hit:
            rows.append(("  same questions, version cache off", f"p50 {cold['p50']} / p95 {cold['p95']} / "
                         f"p99 {cold['p99']} ms (cache hit ratio: facts {hit['facts']}, details {hit['details']})",
                         ""))
        sem = b.get("semantic")
        if sem:
            ms, hit_ms, emb = sem["latency_ms"], sem["latency_question_cached_ms"], sem["embed_query_alone_ms"]
            rows.append((f"  embedding on ({sem['vectors_in_snapshot']:,} vectors in the snapshot, "
                         f"{sem['vectors_scanned_exactly']:,} scanned exactly)",
                         f"p50 {ms['p50']} / p95 {ms['p95']} / p99 {ms['p99']} ms (question embedded; cached: p95 "
                         f"{hit_ms['p95']} ms; embed_query alone p95 {emb['p95']} ms)",
                         "p95 <= 50, p99 <= 100 ms at 1M" if size == "1000000" else ""))
            rows.append(("  first briefing of the tenant in a process (maps its snapshot)",
                         f"{sem['first_briefing_maps_snapshot_ms']} ms (snapshot built off the request path in "
                         f"{sem['snapshot_build_seconds']} s)", "<= 1 s at 100k"))
        for embedding, h in (b.get("http") or {}).items():
            pr = h["probe"]
            rows.append((f"  HTTP, embedding {embedding}, 1 client", f"p95 {h['sequential_ms']['p95']} ms, API CPU "
                         f"{h['sequential_api_cpu_ms_per_briefing']} ms/briefing", ""))
            rows.append((f"  HTTP, embedding {embedding}, {pr['clients']} clients",
                         f"p95 {pr['ms']['p95']} ms, {pr['errors']} errors, {pr['per_s']}/s, API CPU "
                         f"{pr['api_cpu_ms_per_briefing']} ms/briefing",
                         "p95 <= 250 ms, 0 errors, CPU <= 1.3x embedding" if embedding.startswith("e5") else ""))
    for kind, rec in (core.get("hnsw_recall") or {}).items():
        rows.append((f"HNSW vs exact, {kind} ({rec['vectors']:,} vectors)", f"recall@10 {rec['recall_at_10']}", ""))
    ri = core.get("reindex")
    if ri:
        rows.append((f"reindex-semantic, {ri['records']:,} real-text records", f"{ri['records_per_s']} records/s",
                     "reported"))
    t = core.get("throughput")
    if t:
        rows.append(("projector / raw Kafka consume", f"{t['projector']['events_per_s']:,} / "
                     f"{t['raw_kafka_consume']['events_per_s']:,} events/s = {t['projector_vs_slower_raw_rate']}",
                     ">= 0.5"))
        stages = t["projector"].get("stages_us_per_event")
        if stages:
            rows.append(("projector, us per event by stage", ", ".join(f"{k} {v}" for k, v in stages.items()), ""))
    r = core.get("rebuild")
    if r:
        rows.append((f"rebuild of {r['events']:,} events ({r.get('rebuild_processes', 1)} processes)",
                     f"{r['rebuild_seconds']} s, identical to live: {r['identical_to_live']}", "<= 120 s"))
        rows.append(("live projection, 1 process", f"{r['live_projection']['events_per_s']:,} events/s", ""))
    raw = t["raw_kafka_consume"]["events_per_s"] if t else None
    for s in (run.get("projector_scaleout") or {}).get("runs", []):
        ratio = f" = {s['events_per_s'] / raw:.3f} of raw consume" if raw else ""
        rows.append((f"projector, {s['processes']} processes", f"{s['events_per_s']:,} events/s{ratio}",
                     ">= 0.5 of raw, or the 2-process figure and the stage profile" if s["processes"] == 2 else ""))
    th = run.get("throughput")
    if th:
        spread = {r["clients"]: [x["ratio_p95"] for x in r["rounds"]] for r in th.get("per_round", [])}
        for b, n in zip(th["briefing"], th["noop"], strict=True):
            ratios = spread.get(b["clients"])
            rounds = f"; rounds x{min(ratios)}-x{max(ratios)}" if ratios else ""
            rows.append((f"HTTP, {b['clients']} clients", f"{b['per_s']} briefings/s, p95 {b['ms']['p95']} ms "
                         f"(no-op p95 {n['ms']['p95']} ms, x{b['ms']['p95'] / n['ms']['p95']:.1f}{rounds})",
                         "x <= 3 at 8 clients" if b["clients"] == 8 else ""))
    m = run.get("mcp")
    if m:
        rows.append(("MCP get_briefing vs HTTP briefing", f"p95 {m['mcp_ms']['p95']} vs {m['http_ms']['p95']} ms", ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--since", type=float, required=True)
    args = parser.parse_args()
    run: dict[str, Any] = {"at": datetime.now(UTC).isoformat()}
    for kind, pattern in KINDS.items():
        run[kind] = newest(pattern, args.since)
    run["goals"] = [{"figure": f, "measured": m, "goal": g} for f, m, g in goals(run)]
    out = RESULTS / f"make-bench-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    width = max((len(f) for f, _, _ in goals(run)), default=10)
    for figure, measured, goal in goals(run):
        print(f"{figure:<{width}}  {measured}" + (f"   [goal {goal}]" if goal else ""))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
