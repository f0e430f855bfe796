"""Static HTML report with one bar chart per metric (inline SVG; no scripts, no external assets)."""

from __future__ import annotations

import html
from typing import Any

BAR_COLOURS = ("#5b6b7f", "#1f7a4d", "#b8860b")


def bar_chart(title: str, values: dict[str, float], *, fmt: str = "{:.3f}", lower_is_better: bool = False) -> str:
    width, bar_h, gap, label_w = 520, 26, 10, 120
    peak = max(values.values(), default=0) or 1.0
    rows = []
    for i, (name, value) in enumerate(values.items()):
        y = i * (bar_h + gap)
        w = max(2.0, (width - label_w - 80) * value / peak)
        rows.append(
            f'<text x="0" y="{y + 18}" class="l">{html.escape(name)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{BAR_COLOURS[i % 3]}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 18}" class="v">{fmt.format(value)}</text>')
    height = len(values) * (bar_h + gap)
    hint = "lower is better" if lower_is_better else "higher is better"
    return (f'<figure><figcaption>{html.escape(title)} <small>({hint})</small></figcaption>'
            f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" height="{height}">'
            f'{"".join(rows)}</svg></figure>')


def page(title: str, sections: list[str]) -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;margin:2rem;color:#1d2430;max-width:60rem}}
figure{{margin:1.5rem 0}}figcaption{{font-weight:600;margin-bottom:.4rem}}
.l{{font-size:13px;fill:#1d2430}}.v{{font-size:13px;fill:#1d2430}}
table{{border-collapse:collapse}}td,th{{border:1px solid #c9d1db;padding:.25rem .6rem;text-align:left}}
.pass{{color:#1f7a4d;font-weight:700}}.fail{{color:#a4262c;font-weight:700}}</style></head>
<body><h1>{html.escape(title)}</h1>{"".join(sections)}</body></html>"""


def gate_report(gate: dict[str, Any], comparison: dict[str, Any] | None) -> str:
    verdict = ('<p class="pass">Release gate: PASSED</p>' if gate["passed"] else
               '<p class="fail">Release gate: FAILED</p><ul>' +
               "".join(f"<li>{html.escape(f)}</li>" for f in gate["failures"]) + "</ul>")
    on, off = gate["memory_on"], gate["memory_off"]
    sections = [verdict, f"<p>{gate['trials']} trials.</p>",
                bar_chart("Mean rank of the true root cause", {"memory off": off["mean_rank"],
                                                               "memory on": on["mean_rank"]}, lower_is_better=True),
                bar_chart("Mean checks until verified", {"memory off": off["mean_checks"],
                                                         "memory on": on["mean_checks"]}, lower_is_better=True),
                bar_chart("Harmful-hint rate", {"memory off": off["harmful_hint_rate"],
                                                "memory on": on["harmful_hint_rate"]}, lower_is_better=True)]
    if comparison:
        systems = comparison["systems"]
        for metric, better in (("recall_at_1", False), ("recall_at_5", False), ("false_hint_rate", True)):
            sections.append(bar_chart(f"Scenario corpus: {metric}",
                                      {k: float(v[metric] or 0) for k, v in systems.items()}, lower_is_better=better))
        lat = comparison["briefing_latency_ms"]
        sections.append(bar_chart("Briefing latency (ms)", {"p50": lat["p50"], "p95": lat["p95"]}, fmt="{:.1f}",
                                  lower_is_better=True))
    rows = "".join(f"<tr><td>{html.escape(t['name'])}</td><td>{html.escape(t['true_category'])}</td>"
                   f"<td>{t['rank_off']}</td><td>{t['rank_on']}</td><td>{t['checks_off']}</td><td>{t['checks_on']}</td>"
                   f"<td>{'yes' if t['harmful'] else ''}</td></tr>" for t in gate["per_trial"])
    sections.append("<h2>Trials</h2><table><tr><th>trial</th><th>true cause</th><th>rank off</th><th>rank on</th>"
                    f"<th>checks off</th><th>checks on</th><th>harmful</th></tr>{rows}</table>")
    return page("opslore replay report", sections)
