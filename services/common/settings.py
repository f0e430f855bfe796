"""Settings from `OPSLORE_*` environment variables and an optional TOML/env config file.

The file is named by `OPSLORE_CONFIG` (a `.env`-style file); environment variables win over it.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="OPSLORE_", env_file=os.environ.get("OPSLORE_CONFIG"), extra="ignore"
    )

    database_url: str = "postgresql://opslore_app:opslore-app@127.0.0.1:5433/opslore"
    owner_database_url: str = "postgresql://opslore_owner:opslore-owner@127.0.0.1:5433/opslore"
    kafka_bootstrap: str = "127.0.0.1:9092"
    topic: str = "evidence-ledger"
    dlq_topic: str = "evidence-ledger-dlq"
    topic_partitions: int = 6
    consumer_group: str = "opslore-projector"
    ready_max_lag: int = 10_000  # /readyz fails when the projector is further behind the ledger than this
    admin_token: str = Field(default="", repr=False)
    api_host: str = "127.0.0.1"
    api_port: int = 9001
    log_format: str = "text"  # text | json (one JSON object per line with tenant, incident, briefing, trace ids)
    projector_metrics_host: str = "127.0.0.1"
    projector_metrics_port: int = 9101  # the projector's /metrics (lag per partition, events, dead letters)
    governance_metrics_host: str = "127.0.0.1"
    api_workers: int = 1  # API processes (uvicorn workers); one connection pool each
    db_pool_size: int = 16  # connections per API process
    api_url: str = "http://127.0.0.1:9001"
    api_key: str = Field(default="", repr=False)
    # MCP over streamable HTTP: Host headers accepted at /mcp (DNS-rebinding protection); "*" disables the check
    mcp_allowed_hosts: list[str] = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    # briefing
    briefing_min_score: float = 0.5
    stale_after_days: int = 90
    episodic_half_life_days: float = 30.0
    low_confidence_below: float = 0.5
    alias_file: str | None = None
    embedding: str = "off"  # off | hash-ngram: the optional semantic branch (services/briefing/semantic.py)
    # governance (services/governance): job thresholds and the worker (`opslore governance run`)
    governance_never_hit_days: int = 90
    governance_min_refutations: int = 2
    governance_duplicate_similarity: float = 0.5
    governance_interval_seconds: int = 3600  # how often the worker previews every tenant
    governance_auto_expire: bool = True  # the worker executes `expire` proposals (validity passed) itself
    governance_metrics_port: int = 9102  # the worker's /metrics
    # live checks (collectors and hint verification)
    prometheus_url: str | None = None
    kube_host: str | None = None  # an API server URL; otherwise kubeconfig / in-cluster configuration
    kubeconfig: str | None = None
    kube_namespace: str = "default"
    signal_rules: str | None = None
    # review UI sessions (signed cookie); a random secret per process when unset
    ui_secret: str | None = Field(default=None, repr=False)
    ui_secure_cookie: bool = False  # set true behind HTTPS  # extra signal rules (YAML), merged over the shipped ones


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
