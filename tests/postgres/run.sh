#!/usr/bin/env bash
# Run a command against a throwaway PostgreSQL on loopback: `bash tests/postgres/run.sh CMD ARGS...`.
# The cluster is new for every run (a fresh data folder on a free port) and is stopped and removed when the command
# ends, however it ends. A cluster of an earlier run that was killed (a stale postmaster.pid, orphaned backends on
# its port) therefore cannot stop this one from starting. Installs Debian's package when it is missing.
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
as_postgres() { if [ "$(id -un)" = postgres ]; then "$@"; elif [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else $SUDO -u postgres "$@"; fi; }

DATA="$(mktemp -d /tmp/kb-postgres.XXXXXX)"
stop() {
  as_postgres "$BIN/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1 || true
  $SUDO rm -rf "$DATA"
}
trap stop EXIT
trap 'exit 130' INT TERM
$SUDO chown postgres:postgres "$DATA"
as_postgres "$BIN/initdb" -D "$DATA" -A trust -U postgres >/dev/null

# A free port now; should another process take it before the server binds, the start fails and is tried again.
started=""
for _ in 1 2 3; do
  PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  if as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DATA -c fsync=off" start >/dev/null; then
    started=1
    break
  fi
done
if [ -z "$started" ]; then
  echo "PostgreSQL did not start; its log follows." >&2
  cat "$DATA/server.log" >&2 || true
  exit 1
fi
as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE ROLE kb LOGIN PASSWORD 'kb' CREATEDB"
as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE DATABASE kb OWNER kb"

status=0
DATABASE_URL="postgres://kb:kb@127.0.0.1:${PORT}/kb" "$@" || status=$?
exit "$status"
