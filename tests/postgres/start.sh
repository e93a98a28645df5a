#!/usr/bin/env bash
# Start a throwaway PostgreSQL on loopback for the database tests, installing Debian's package if
# needed. Prints the DATABASE_URL to use. Idempotent: a running cluster is reused.
set -euo pipefail
PORT="${KB_PG_PORT:-54329}"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
DATA="/tmp/kb-postgres-${PORT}"
as_postgres() { if [ "$(id -un)" = postgres ]; then "$@"; elif [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else $SUDO -u postgres "$@"; fi; }
if [ ! -f "$DATA/PG_VERSION" ]; then
  $SUDO mkdir -p "$DATA" && $SUDO chown postgres:postgres "$DATA"
  as_postgres "$BIN/initdb" -D "$DATA" -A trust -U postgres >/dev/null
fi
if ! as_postgres "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
  as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DATA -c fsync=off" start >/dev/null
fi
as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname='kb'" | grep -q 1 \
  || as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE ROLE kb LOGIN PASSWORD 'kb' CREATEDB"
as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='kb'" | grep -q 1 \
  || as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE DATABASE kb OWNER kb"
echo "postgres://kb:kb@127.0.0.1:${PORT}/kb"
