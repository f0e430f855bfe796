"""Shared fixtures. Integration tests use real Kafka and PostgreSQL, never mocks.

Where the infrastructure comes from: when a Docker engine answers and OPSLORE_TESTCONTAINERS=1, the
`infrastructure` fixture starts PostgreSQL and Kafka with testcontainers; otherwise it uses the local
stack that `make up` started, named by the OPSLORE_* environment variables (the default here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from services.cli.client import OpsloreClient
from services.common.kafka import LEDGER_TOPIC_CONFIG
from services.common.migrate import apply_migrations
from services.common.settings import Settings


@dataclass(frozen=True)
class Infrastructure:
    settings: Settings


def _docker_answers() -> bool:
    if os.environ.get("OPSLORE_TESTCONTAINERS") != "1" or not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="session")
def infrastructure() -> Iterator[Infrastructure]:
    if not _docker_answers():
        yield Infrastructure(Settings())
        return
    from testcontainers.kafka import KafkaContainer
    from testcontainers.postgres import PostgresContainer

    with PostgresContainer("postgres:15") as pg, KafkaContainer() as kafka:
        url = pg.get_connection_url().replace("+psycopg2", "")
        yield Infrastructure(Settings(database_url=url, owner_database_url=url,
                                      kafka_bootstrap=kafka.get_bootstrap_server()))


@pytest.fixture(scope="session")
def settings(infrastructure: Infrastructure) -> Settings:
    return infrastructure.settings


@pytest.fixture(scope="session")
def api(settings: Settings) -> OpsloreClient:
    """The bootstrap client of the running API (make up)."""
    if not settings.admin_token:
        pytest.fail("OPSLORE_ADMIN_TOKEN must be set for integration tests (make test sets it)")
    return OpsloreClient(settings.api_url, settings.admin_token)


TenantFactory = Callable[..., OpsloreClient]


@pytest.fixture
def tenant_client(api: OpsloreClient, settings: Settings) -> TenantFactory:
    """Factory: a client with a key of a brand-new tenant (`role`, optional `project`)."""

    def make(role: str = "reviewer", project: str | None = "default", tenant: str | None = None) -> OpsloreClient:
        tenant = tenant or f"t-{uuid.uuid4().hex[:12]}"
        key = api.create_key(tenant, role, project)
        client = OpsloreClient(settings.api_url, key)
        client.tenant = tenant  # type: ignore[attr-defined]
        return client

    return make


@contextmanager
def scratch_databases(settings: Settings) -> Iterator[Callable[[], str]]:
    """Factory of new, empty databases on the same server (returns the name); all dropped on exit."""
    created: list[str] = []

    def make() -> str:
        name = f"opslore_t_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        return name

    try:
        yield make
    finally:
        with psycopg.connect(settings.owner_database_url, autocommit=True) as conn:
            for name in created:
                _drop_database(conn, name)


@pytest.fixture
def fresh_database(settings: Settings) -> Iterator[Callable[[], str]]:
    """Factory: a new migrated database on the same server; returns the app-role URL."""
    with scratch_databases(settings) as empty:

        def make() -> str:
            name = empty()
            apply_migrations(_with_db(settings.owner_database_url, name))
            return _with_db(settings.database_url, name)

        yield make


def _drop_database(conn: psycopg.Connection[Any], name: str) -> None:
    """DROP ... WITH (FORCE) may meet an application-role session that a closing pool is still tearing
    down (terminating it would need pg_signal_backend, which the owner role does not have): wait for it."""
    for attempt in range(40):
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectInUse):
            if attempt == 39:
                raise
            time.sleep(0.25)


@pytest.fixture
def fresh_topic(settings: Settings) -> Iterator[Callable[..., str]]:
    """Factory: a new ledger topic with the production configuration and `partitions` partitions."""
    admin = KafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    created: list[str] = []

    def make(partitions: int = 3) -> str:
        name = f"ledger-test-{uuid.uuid4().hex[:10]}"
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=LEDGER_TOPIC_CONFIG)])
        created.append(name)
        time.sleep(0.5)
        return name

    yield make
    if created:
        admin.delete_topics(created)
    admin.close()


def _with_db(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"
