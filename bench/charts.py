"""`python -m bench.charts`: the latency-by-size picture for docs/performance.md from the newest
`bench/results/make-bench-*.json` (the lexical briefing's p50/p95/p99 at each size the run measured). `make bench`
runs it last; nothing here measures anything."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
OUT = Path(__file__).resolve().parents[1] / "docs" / "images" / "latency-by-size.png"


def main() -> None:
    runs = sorted(RESULTS.glob("make-bench-*.json"))
    if not runs:
        print("no make-bench results yet")
        return
    doc = json.loads(runs[-1].read_text(encoding="utf-8"))
    sizes = sorted(doc["core"]["briefing"], key=int)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    for q in ("p50", "p95", "p99"):
        ax.plot([int(s) for s in sizes], [doc["core"]["briefing"][s]["latency_ms"][q] for s in sizes], marker="o",
                label=q)
    ax.set_xscale("log")
    ax.set_xlabel("records")
    ax.set_ylabel("briefing latency, ms")
    ax.set_title(f"briefing latency by size ({runs[-1].name}, {doc['core']['machine']['cpus']} cores)", fontsize=8)
    ax.legend(fontsize=7)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    plt.close(fig)
    print(OUT)


if __name__ == "__main__":
    main()
