# Shared defaults for the local stack scripts. Everything listens on loopback only.
# Sourced by kafka.sh, postgres.sh and stack.sh; every value can be overridden by the environment.
: "${OPSLORE_STATE_DIR:=/var/tmp/opslore}"          # data, logs and pid files of the local stack
: "${OPSLORE_CACHE_DIR:=$HOME/.cache/opslore}"     # downloaded Kafka jars (outside the repo)
: "${KAFKA_VERSION:=4.1.1}"
: "${KAFKA_PORT:=9092}"
: "${KAFKA_CONTROLLER_PORT:=9093}"
: "${PG_PORT:=5433}"
: "${OPSLORE_API_PORT:=9001}"
: "${OPSLORE_API_WORKERS:=2}"                      # the suite runs against a multi-worker API
: "${OPSLORE_TOPIC:=evidence-ledger}"
: "${OPSLORE_TOPIC_PARTITIONS:=6}"
: "${OPSLORE_ADMIN_TOKEN:=opslore-dev-admin-token}"
: "${OPSLORE_APP_PASSWORD:=opslore-app}"
: "${OPSLORE_OWNER_PASSWORD:=opslore-owner}"
PG_BIN=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)
export OPSLORE_STATE_DIR OPSLORE_CACHE_DIR KAFKA_VERSION KAFKA_PORT KAFKA_CONTROLLER_PORT PG_PORT \
  OPSLORE_API_PORT OPSLORE_API_WORKERS OPSLORE_TOPIC OPSLORE_TOPIC_PARTITIONS OPSLORE_ADMIN_TOKEN OPSLORE_APP_PASSWORD \
  OPSLORE_OWNER_PASSWORD PG_BIN
export OPSLORE_INDEX_DIR="${OPSLORE_INDEX_DIR:-$OPSLORE_STATE_DIR/index}"   # semantic index snapshots (derived)
export OPSLORE_DATABASE_URL="${OPSLORE_DATABASE_URL:-postgresql://opslore_app:${OPSLORE_APP_PASSWORD}@127.0.0.1:${PG_PORT}/opslore}"
export OPSLORE_OWNER_DATABASE_URL="${OPSLORE_OWNER_DATABASE_URL:-postgresql://opslore_owner:${OPSLORE_OWNER_PASSWORD}@127.0.0.1:${PG_PORT}/opslore}"
export OPSLORE_KAFKA_BOOTSTRAP="${OPSLORE_KAFKA_BOOTSTRAP:-127.0.0.1:${KAFKA_PORT}}"

log() { printf '[opslore] %s\n' "$*" >&2; }

# wait_for CMD... : retry a check for up to $WAIT_SECONDS (default 60)
wait_for() {
  local deadline=$(( $(date +%s) + ${WAIT_SECONDS:-60} ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then return 1; fi
    sleep 0.5
  done
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfile() {
  local pidfile=$1 name=$2
  if pid_alive "$pidfile"; then
    log "stopping $name (pid $(cat "$pidfile"))"
    kill "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 60); do pid_alive "$pidfile" || break; sleep 0.5; done
    pid_alive "$pidfile" && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}
