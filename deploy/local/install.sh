#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine: apt packages, the Kafka jars, the Python
# package with its dev extras. Idempotent; safe to re-run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/env.sh"
need=()
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
command -v curl >/dev/null || need+=(curl)
[ -x /usr/bin/prometheus ] || need+=(prometheus)  # collector tests run a real Prometheus server
[ -x /usr/bin/prometheus-alertmanager ] || need+=(prometheus-alertmanager)  # alert intake tests run a real one
[ -x /usr/bin/chromium ] || need+=(chromium fonts-noto-cjk)  # UI tests (Playwright drives Debian's Chromium)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then log "please install: ${need[*]}"; exit 1; fi
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
"$here/kafka.sh" install
# kustomize renders deploy/kubernetes in the tests: kubectl's built-in one, else a kustomize binary, else
# one built from the Go module proxy into the cache (about two minutes, once per machine)
if ! command -v kubectl >/dev/null && ! command -v kustomize >/dev/null && [ ! -x "$OPSLORE_CACHE_DIR/bin/kustomize" ] \
   && command -v go >/dev/null; then
  log "go install kustomize v5.5.0 into $OPSLORE_CACHE_DIR/bin"
  GOBIN="$OPSLORE_CACHE_DIR/bin" GOFLAGS=-mod=mod go install sigs.k8s.io/kustomize/kustomize/v5@v5.5.0
fi
PY=${PYTHON:-python3}
if ! $PY -c "import services, kafka, psycopg, fastapi, jieba, hypothesis" 2>/dev/null \
   || [ "$root/pyproject.toml" -nt "$OPSLORE_STATE_DIR/.pip-installed" ]; then
  log "pip install -e .[dev]"
  $PY -m pip install -q --disable-pip-version-check -e "$root[dev]"
  mkdir -p "$OPSLORE_STATE_DIR" && touch "$OPSLORE_STATE_DIR/.pip-installed"
fi
