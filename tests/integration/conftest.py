"""Fixtures shared by the integration tests that need a live Prometheus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.prom import LivePrometheus, live_prometheus


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LivePrometheus]:
    """A real Prometheus (own port and data directory) per test module, scraping a test exporter."""
    with live_prometheus(tmp_path_factory.mktemp("prometheus")) as live:
        yield live
