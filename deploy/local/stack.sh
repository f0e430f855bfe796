#!/usr/bin/env bash
# Brings the whole local stack up or down: Kafka, PostgreSQL (+ migrations), topics, API, projector, and the
# semantic index snapshot builder (indexer).
# `stack.sh up` returns when everything is healthy and prints the URL; re-running it is safe.
# `stack.sh down` stops only what `up` started (pid files under $OPSLORE_STATE_DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
run="$OPSLORE_STATE_DIR/run"
mkdir -p "$run"
PY=${PYTHON:-python3}

api_ready() { curl -fsS "http://127.0.0.1:$OPSLORE_API_PORT/healthz"; }

start_bg() {  # name, command...
  local name=$1; shift
  if pid_alive "$run/$name.pid"; then log "$name already running (pid $(cat "$run/$name.pid"))"; return 0; fi
  log "starting $name (log $run/$name.log)"
  nohup "$@" >>"$run/$name.log" 2>&1 &
  echo $! > "$run/$name.pid"
}

up() {
  local t0; t0=$(date +%s)
  "$here/postgres.sh" start
  "$here/kafka.sh" start
  $PY -m services.cli.main db migrate >/dev/null
  $PY -m services.cli.main topics
  if ! pid_alive "$run/api.pid" && api_ready >/dev/null 2>&1; then
    log "port $OPSLORE_API_PORT already answers, but not from this stack ($OPSLORE_STATE_DIR); stop it first"
    exit 1
  fi
  start_bg api $PY -m services.cli.main api
  start_bg projector $PY -m services.cli.main projector run
  start_bg indexer $PY -m services.cli.main index snapshots
  WAIT_SECONDS=60 wait_for api_ready || { log "API did not become healthy"; tail -n 40 "$run/api.log" >&2; exit 1; }
  pid_alive "$run/projector.pid" || { log "projector died"; tail -n 40 "$run/projector.log" >&2; exit 1; }
  log "stack up in $(( $(date +%s) - t0 ))s: http://127.0.0.1:$OPSLORE_API_PORT (admin token from OPSLORE_ADMIN_TOKEN)"
  echo "http://127.0.0.1:$OPSLORE_API_PORT"
}

down() {
  stop_pidfile "$run/indexer.pid" indexer
  stop_pidfile "$run/projector.pid" projector
  stop_pidfile "$run/api.pid" api
  "$here/kafka.sh" stop
  "$here/postgres.sh" stop
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  restart-app)
    stop_pidfile "$run/projector.pid" projector; stop_pidfile "$run/api.pid" api; stop_pidfile "$run/indexer.pid" indexer
    start_bg api $PY -m services.cli.main api; start_bg projector $PY -m services.cli.main projector run
    start_bg indexer $PY -m services.cli.main index snapshots
    WAIT_SECONDS=60 wait_for api_ready ;;
  status) api_ready && pid_alive "$run/projector.pid" && "$here/kafka.sh" status && "$here/postgres.sh" status ;;
  *) echo "usage: $0 up|down|restart-app|status" >&2; exit 2 ;;
esac
