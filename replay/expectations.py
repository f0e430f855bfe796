"""Pure checks of one briefing answer against a query's expectations."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from replay.scenario import Expect


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def _cites(hint: dict[str, Any], incident: str) -> bool:
    return incident in hint.get("source_incidents", [])


def check_answer(expect: Expect, answer: dict[str, Any]) -> list[Check]:
    hints: list[dict[str, Any]] = answer.get("hints", [])
    cited = [sorted(h.get("source_incidents", [])) for h in hints]
    out: list[Check] = []
    for inc in expect.cites:
        out.append(Check(f"cites {inc}", any(_cites(h, inc) for h in hints), f"hints cite {cited}"))
    if expect.top1_cites:
        ok = bool(hints) and _cites(hints[0], expect.top1_cites)
        out.append(Check(f"top1 cites {expect.top1_cites}", ok, f"hints cite {cited}"))
    for inc in expect.not_cites:
        out.append(Check(f"does not cite {inc}", not any(_cites(h, inc) for h in hints), f"hints cite {cited}"))
    for inc, codes in expect.warnings.items():
        got = [sorted(w["code"] for w in h.get("warnings", [])) for h in hints if _cites(h, inc)]
        ok = any(set(codes) <= set(g) for g in got)
        out.append(Check(f"{inc} warns {','.join(codes)}", ok, f"warnings {got or 'no hint cites it'}"))
    for inc, codes in expect.no_warnings.items():
        got = [sorted(w["code"] for w in h.get("warnings", [])) for h in hints if _cites(h, inc)]
        ok = bool(got) and all(not (set(codes) & set(g)) for g in got)
        out.append(Check(f"{inc} does not warn {','.join(codes)}", ok, f"warnings {got or 'no hint cites it'}"))
    if expect.no_hints:
        out.append(Check("no hints", not hints, f"hints cite {cited}"))
    if expect.max_hints is not None:
        out.append(Check(f"at most {expect.max_hints} hints", len(hints) <= expect.max_hints, f"{len(hints)} hints"))
    if expect.min_hints is not None:
        out.append(Check(f"at least {expect.min_hints} hints", len(hints) >= expect.min_hints, f"{len(hints)} hints"))
    if expect.top_cause:
        causes = [c["category"] for c in answer.get("causes", [])]
        out.append(Check(f"top cause {expect.top_cause}", causes[:1] == [expect.top_cause], f"causes {causes[:3]}"))
    by_category = {c["category"]: c for c in answer.get("causes", [])}
    for category in expect.raises:
        c = by_category.get(category)
        ok = c is not None and c["probability"] > c["prior"]
        detail = f"{c['probability']} vs base rate {c['prior']}" if c else "not listed"
        out.append(Check(f"raises {category}", ok, detail))
    text = json.dumps(hints, ensure_ascii=False).lower()
    for needle in expect.text_absent:
        found = needle.lower() in text
        out.append(Check(f"text absent {needle!r}", not found, "found in a hint" if found else ""))
    return out
