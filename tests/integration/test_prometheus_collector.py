"""The Prometheus collector against a real Prometheus scraping metrics that the test controls."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from services.collectors.prometheus import CollectorError, PrometheusCollector
from services.collectors.signals import load_rules
from tests.integration.prom import LivePrometheus

pytestmark = pytest.mark.integration
QUERY = 'db_pool_pending{service="checkout-api"}'



def test_observations_reflect_the_exporter(prom: LivePrometheus) -> None:
    collector = PrometheusCollector(prom.url, load_rules())
    prom.pool_pending.labels(service="checkout-api").set(180)
    prom.wait_for(QUERY, 180)
    high = collector.instant(QUERY)
    assert high.signals == ["db_pool_saturation"]
    assert "service=checkout-api: last 180" in high.summary
    assert high.values()["series"][0]["last"] == 180.0

    prom.pool_pending.labels(service="checkout-api").set(3)
    prom.wait_for(QUERY, 3)
    low = collector.instant(QUERY)
    assert low.signals == [] and "last 3" in low.summary
    time.sleep(2)
    history = collector.range(QUERY, minutes=1, step="1s")
    series = history.summaries[0]
    assert series.maximum == 180 and series.last == 3 and series.trend == "falling"
    assert any(c.startswith("crossed >50") for c in series.crossings)


def test_missing_series_and_bad_queries(prom: LivePrometheus) -> None:
    collector = PrometheusCollector(prom.url, load_rules())
    empty = collector.instant('db_pool_pending{service="no-such-service"}')
    assert empty.summaries == [] and empty.signals == [] and empty.summary.startswith("no data")
    with pytest.raises(CollectorError) as err:
        collector.instant("sum(")
    assert "prometheus query failed" in err.value.message
    with pytest.raises(CollectorError):
        PrometheusCollector("http://127.0.0.1:9", load_rules(), timeout=1).instant("up")


def test_rules_file_extends_the_shipped_rules(tmp_path: Path) -> None:
    extra = tmp_path / "rules.yaml"
    extra.write_text("rules:\n  - {signal: queue_depth_high, match: jobs_waiting, op: '>=', threshold: 10}\n")
    rules = load_rules(str(extra))
    assert [r.signal for r in rules if r.match == "jobs_waiting"] == ["queue_depth_high"]
    extra.write_text("rules:\n  - {signal: x, match: y, op: '!=', threshold: 1}\n")
    with pytest.raises(ValueError):
        load_rules(str(extra))
