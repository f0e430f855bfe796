"""Fixtures shared by the integration tests: a live Prometheus; the governed services over a fresh database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.integration.governed import GovernedServices
from tests.integration.prom import LivePrometheus, live_prometheus


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LivePrometheus]:
    """A real Prometheus (own port and data directory) per test module, scraping a test exporter."""
    with live_prometheus(tmp_path_factory.mktemp("prometheus")) as live:
        yield live


@pytest.fixture()
def svc(fresh_database: Callable[[], str]) -> Iterator[GovernedServices]:
    """In-process memory, review, briefing and governance services over a fresh, migrated database."""
    services = GovernedServices(fresh_database())
    yield services
    services.close()
