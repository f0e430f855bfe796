"""`python -m replay.charts`: the evaluation's pictures for docs/ from the committed replay results.

- recall-<split>.png: Recall@5 of opslore's hints against BM25, e5 top-5 and their fusion, per condition
- checks-<split>.png: the planner's checks with memory (opslore's causes, each baseline used as hints) against
  the tenant's base rates alone, per condition
- the reliability diagrams are written by `replay realworld` and `replay within` themselves and copied here
`make replay` runs it after the runs; nothing here asks the stack anything.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "images"


def bars(path: Path, title: str, groups: list[str], series: dict[str, list[float]], ylabel: str,
         line: float | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        ax.bar([g + i * width for g in range(len(groups))], values, width, label=name)
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    if line is not None:
        ax.axhline(line, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def realworld(split: str, report: Path) -> list[Path]:
    doc = json.loads(report.read_text(encoding="utf-8"))
    conditions = list(doc["results"])
    systems = list(doc["results"][conditions[0]])
    recall = {s.split(" (")[0]: [doc["results"][c][s]["recall_at_5"] for c in conditions] for s in systems}
    checks = {"opslore causes": [doc["causes"][c]["checks_ratio"] for c in conditions]}
    checks |= {f"{s.split(' (')[0]} as hints": [doc["results"][c][s]["checks_ratio"] for c in conditions]
               for s in systems[1:]}
    out = [DOCS / f"recall-{split}.png", DOCS / f"checks-{split}.png"]
    bars(out[0], f"Recall@5 of hints, real incidents across organisations ({split})", conditions, recall,
         "Recall@5")
    bars(out[1], f"checks with memory / checks with the base rates alone ({split}); below 1 is better",
         conditions, checks, "checks ratio", line=1.0)
    return out


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for split in ("test", "fresh2"):
        report = RESULTS / f"realworld-{split}-causes.json"
        if report.exists():
            written += realworld(split, report)
    for png in RESULTS.glob("reliability-*.png"):
        written.append(Path(shutil.copy(png, DOCS / png.name)))
    print("\n".join(str(p) for p in written))


if __name__ == "__main__":
    main()
