"""PrometheusCollector: runs PromQL (instant or range) and turns results into trusted observations.

Uses prometheus-api-client. The observation keeps the query, a readable summary, the derived signals
and the values; records learned later keep only the query and signals (never the volatile values).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from requests.exceptions import RequestException

from services.collectors.signals import SeriesSummary, SignalRule, signals_for, summarize
from services.common.errors import Unavailable


class CollectorError(Unavailable):
    """A collector could not reach or query its source, or was refused."""


@dataclass(frozen=True)
class QueryResult:
    query: str
    summaries: list[SeriesSummary]
    signals: list[str]

    @property
    def summary(self) -> str:
        if not self.summaries:
            return f"no data for {self.query}"
        shown = "; ".join(s.describe() for s in self.summaries[:5])
        more = f" (+{len(self.summaries) - 5} more series)" if len(self.summaries) > 5 else ""
        return shown + more

    def values(self) -> dict[str, Any]:
        return {"series": [{"labels": s.labels, "last": s.last, "min": s.minimum, "max": s.maximum,
                            "trend": s.trend} for s in self.summaries[:20]]}


class PrometheusCollector:
    source = "prometheus"

    def __init__(self, url: str, rules: list[SignalRule], timeout: float = 10.0) -> None:
        self.client = PrometheusConnect(url=url, disable_ssl=True)
        self.client._session.request = _with_timeout(self.client._session.request, timeout)
        self.rules = rules

    def instant(self, query: str) -> QueryResult:
        data = self._call(lambda: self.client.custom_query(query=query))
        summaries = [summarize(_labels(r), [float(r["value"][1])], self.rules) for r in data]
        return QueryResult(query, summaries, signals_for(query, summaries, self.rules))

    def range(self, query: str, minutes: int = 15, step: str = "15s") -> QueryResult:
        end = datetime.now(UTC)
        data = self._call(lambda: self.client.custom_query_range(
            query=query, start_time=end - timedelta(minutes=minutes), end_time=end, step=step))
        summaries = [summarize(_labels(r), [float(v) for _, v in r["values"]], self.rules) for r in data if r["values"]]
        return QueryResult(query, summaries, signals_for(query, summaries, self.rules))

    def _call(self, fn: Any) -> list[dict[str, Any]]:
        try:
            return list(fn())
        except (PrometheusApiClientException, RequestException, ValueError) as exc:
            raise CollectorError(f"prometheus query failed: {exc}") from None


def _labels(result: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (result.get("metric") or {}).items()}


def _with_timeout(request: Any, timeout: float) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", timeout)
        return request(*args, **kwargs)
    return call
