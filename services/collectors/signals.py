"""Pure summaries of metric series and the rules that turn them into signals."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

OPS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, ">=": operator.ge, "<": operator.lt,
                                                  "<=": operator.le}


@dataclass(frozen=True)
class SignalRule:
    signal: str
    match: str
    op: str
    threshold: float

    def fires(self, value: float) -> bool:
        return OPS[self.op](value, self.threshold)


@dataclass(frozen=True)
class SeriesSummary:
    """One series (labels) summarised: last value, extremes, trend and where it crossed thresholds."""

    labels: dict[str, str]
    last: float
    minimum: float
    maximum: float
    trend: str  # rising | falling | flat
    points: int
    crossings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        name = ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()) if k != "__name__") or "series"
        text = f"{name}: last {self.last:g} (min {self.minimum:g}, max {self.maximum:g}, {self.trend})"
        return text + (f"; {', '.join(self.crossings)}" if self.crossings else "")


def load_rules(extra: str | None = None) -> list[SignalRule]:
    docs = [yaml.safe_load((resources.files("services.collectors") / "data" / "signal_rules.yaml").read_text())]
    if extra:
        docs.append(yaml.safe_load(Path(extra).read_text(encoding="utf-8")))
    rules: list[SignalRule] = []
    for doc in docs:
        for r in doc.get("rules", []):
            if r["op"] not in OPS:
                raise ValueError(f"signal rule {r['signal']}: op must be one of {', '.join(OPS)}")
            rules.append(SignalRule(str(r["signal"]), str(r["match"]), str(r["op"]), float(r["threshold"])))
    return rules


def trend(values: list[float]) -> str:
    """Least-squares slope over the points, relative to the mean magnitude (flat within 5%)."""
    n = len(values)
    if n < 2:
        return "flat"
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    slope = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values)) / sum((i - mean_x) ** 2 for i in range(n))
    change = slope * (n - 1)
    scale = max(abs(mean_y), 1e-9)
    if abs(change) / scale < 0.05:
        return "flat"
    return "rising" if change > 0 else "falling"


def summarize(labels: dict[str, str], values: list[float], rules: list[SignalRule]) -> SeriesSummary:
    crossings = []
    for rule in rules:
        before = [rule.fires(v) for v in values]
        if any(before) and not all(before):
            first = before.index(not before[0])
            crossings.append(f"crossed {rule.op}{rule.threshold:g} at point {first + 1}/{len(values)}")
    return SeriesSummary(labels, values[-1], min(values), max(values), trend(values), len(values), crossings)


def signals_for(query: str, summaries: list[SeriesSummary], rules: list[SignalRule]) -> list[str]:
    """Signals whose rule matches the query's metric and fires on some series' last value."""
    out: list[str] = []
    for rule in rules:
        if rule.match in query and any(rule.fires(s.last) for s in summaries) and rule.signal not in out:
            out.append(rule.signal)
    return out
