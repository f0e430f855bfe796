#!/usr/bin/env bash
# Installs (Debian apt) and runs a private PostgreSQL 15 cluster on 127.0.0.1:$PG_PORT with a database
# `opslore`, an owner role that runs migrations and a non-superuser application role (no BYPASSRLS).
# Usage: postgres.sh install|start|stop|status|psql. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
dir="$OPSLORE_STATE_DIR/pg"
pidfile="$dir/data/postmaster.pid"

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install() {
  if [ -x /usr/lib/postgresql/15/bin/postgres ]; then return 0; fi
  log "installing postgresql-15 from apt"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
}

ready() { as_pg "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; }

superuser_sql() { as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$PG_PORT" -d "${2:-postgres}" -c "$1"; }

init_cluster() {
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
  [ -f "$dir/data/PG_VERSION" ] && return 0
  log "initdb $dir/data"
  as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 512MB
fsync = on
log_min_messages = warning
CONF
}

create_roles() {
  superuser_sql "DO \$\$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='opslore_owner') THEN
      CREATE ROLE opslore_owner LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='opslore_app') THEN
      CREATE ROLE opslore_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB; END IF;
    -- owns only the briefing candidate-search function (migration 0005): reads memory_versions with its
    -- indexes usable, scoped inside the function to the caller's opslore.tenant setting. Cannot log in.
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='opslore_search') THEN
      CREATE ROLE opslore_search NOLOGIN NOSUPERUSER BYPASSRLS NOCREATEROLE NOCREATEDB; END IF;
  END \$\$;
  ALTER ROLE opslore_owner CREATEDB PASSWORD '$OPSLORE_OWNER_PASSWORD';
  ALTER ROLE opslore_app PASSWORD '$OPSLORE_APP_PASSWORD';
  GRANT opslore_search TO opslore_owner;
  GRANT pg_checkpoint TO opslore_owner;"
  if ! superuser_sql "SELECT 1" opslore >/dev/null 2>&1; then
    superuser_sql "CREATE DATABASE opslore OWNER opslore_owner"
  fi
  superuser_sql "REVOKE ALL ON DATABASE opslore FROM PUBLIC; GRANT CONNECT ON DATABASE opslore TO opslore_app;
    REVOKE CREATE ON SCHEMA public FROM PUBLIC; ALTER SCHEMA public OWNER TO opslore_owner;" opslore
}

start() {
  install
  init_cluster
  if ! ready; then
    log "starting postgresql on 127.0.0.1:$PG_PORT"
    as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start >/dev/null
  fi
  WAIT_SECONDS=60 wait_for ready
  create_roles
}

stop() {
  if [ -f "$pidfile" ]; then
    log "stopping postgresql"
    as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) ready ;;
  psql) shift; as_pg "$PG_BIN/psql" -X -h "$dir" -p "$PG_PORT" -d opslore "$@" ;;
  *) echo "usage: $0 install|start|stop|status|psql" >&2; exit 2 ;;
esac
