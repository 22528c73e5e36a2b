#!/usr/bin/env bash
# PostgreSQL for the store's Postgres backend tests: Debian's `postgresql` package, a throwaway
# cluster (initdb into a temp dir, run as the `postgres` user) on a random free port of
# 127.0.0.1, trust authentication for the `servebench` role plus a password-checked role
# (`servebench_pw`, md5/scram) for the wrong-password test; psycopg2 + tabulate for the
# compare_results.py cross-check. Idempotent: reuses a cluster that already answers.
# Prints the env exports on stdout; logs go to stderr. Stop and remove the cluster with
# `bash scripts/services/postgres.sh stop`. When this call created the cluster (none answered),
# it also exports SERVEBENCH_PG_STARTED=1, so scripts/test.sh stops only what it started.
#
#   SERVEBENCH_PG_ROOT   state dir (default /tmp/servebench-pg)
set -euo pipefail
root="${SERVEBENCH_PG_ROOT:-/tmp/servebench-pg}"
sudo_=""
[ "$(id -u)" -ne 0 ] && sudo_="sudo"

bindir() {
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && { echo "$d"; return; }; done
  return 1
}
as_pg() {
  if [ "$(id -un)" = postgres ]; then "$@"; else $sudo_ runuser -u postgres -- "$@"; fi
}

if [ "${1:-}" = stop ]; then
  if bin="$(bindir)" && [ -f "$root/data/postmaster.pid" ]; then
    as_pg "$bin/pg_ctl" -D "$root/data" -m immediate stop >&2 || true
  fi
  rm -rf "$root"
  exit 0
fi

if ! bin="$(bindir)"; then
  echo "[postgres] installing postgresql (Debian package)" >&2
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends postgresql >&2
  bin="$(bindir)"
fi
if ! python3 -c 'import psycopg2, tabulate' 2>/dev/null; then
  echo "[postgres] installing psycopg2-binary, tabulate (compare_results.py cross-check)" >&2
  python3 -m pip install -q --break-system-packages psycopg2-binary tabulate >&2 2>/dev/null ||
    python3 -m pip install -q psycopg2-binary tabulate >&2 ||
    echo "[postgres] warning: psycopg2 not installed; the compare_results.py test will skip" >&2
fi

up() { [ -f "$root/port" ] && "$bin/pg_isready" -q -h 127.0.0.1 -p "$(cat "$root/port")"; }

started=""
if ! up; then
  started=1
  if [ -f "$root/data/postmaster.pid" ]; then
    as_pg "$bin/pg_ctl" -D "$root/data" -m immediate stop >&2 2>/dev/null || true
  fi
  rm -rf "$root"
  mkdir -p "$root"
  chown postgres: "$root" 2>/dev/null || $sudo_ chown postgres: "$root"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  echo "$port" > "$root/port"
  echo "[postgres] initdb into $root/data, port $port" >&2
  as_pg "$bin/initdb" -D "$root/data" -U postgres -A trust --no-sync -E UTF8 >"$root/initdb.log" 2>&1 ||
    { tail -20 "$root/initdb.log" >&2; exit 1; }
  {
    echo "host all servebench_pw 127.0.0.1/32 scram-sha-256"
    echo "host all all 127.0.0.1/32 trust"
  } > "$root/hba" && cp "$root/hba" "$root/data/pg_hba.conf" && chown postgres: "$root/data/pg_hba.conf"
  as_pg "$bin/pg_ctl" -D "$root/data" -l "$root/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$root -c max_connections=200" \
    start >&2 || { tail -20 "$root/server.log" >&2; exit 1; }
  psql_() { "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@"; }
  psql_ -c "CREATE ROLE servebench LOGIN SUPERUSER" >&2
  psql_ -c "CREATE ROLE servebench_pw LOGIN PASSWORD 'right-password'" >&2
  psql_ -c "CREATE DATABASE servebench OWNER servebench" >&2
fi
port="$(cat "$root/port")"
echo "[postgres] ready: 127.0.0.1:$port (state in $root)" >&2
echo "export SERVEBENCH_PG_URL=postgres://servebench@127.0.0.1:$port/servebench"
[ -n "$started" ] && echo "export SERVEBENCH_PG_STARTED=1"
exit 0
