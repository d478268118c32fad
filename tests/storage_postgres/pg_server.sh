#!/bin/sh
# pg_server.sh start|stop|restart|halt|promote|kill DIR, pg_server.sh standby DIR PRIMARY — a private PostgreSQL server for the tests
# (the ctest fixture lcc_pg_server). It listens only on a unix socket in DIR (no TCP),
# with fsync on and synchronous_commit on, and trusts the local user. `start` prints the
# libpq conninfo; the tests get it as LCC_TEST_PG_CONNINFO ("host=DIR port=5432
# dbname=postgres"). Server binaries: PG_BIN, else pg_config --bindir, else the newest
# /usr/lib/postgresql/*/bin (Debian: apt install postgresql). PostgreSQL refuses to run
# as root: as root the server runs as the user `postgres` (DIR is then chowned to it,
# so DIR must be in a folder that user can reach, e.g. /tmp).
set -eu
cmd=${1:?usage: pg_server.sh start|stop|restart|halt|kill DIR}
dir=${2:?usage: pg_server.sh start|stop|restart|halt|kill DIR}

find_bin() {
  if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then echo "$PG_BIN"; return; fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  echo ""
}

bin=$(find_bin)
if [ -z "$bin" ]; then
  echo "pg_server.sh: no PostgreSQL server binaries (initdb, pg_ctl): apt install postgresql" >&2
  exit 1
fi

# Runs a server binary as the owner of the data (root may not own it).
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# DIR made new, mode 0700: `mkdir` without -p fails on anything planted there after the
# rm, and `chown -h` never follows a link. The socket is 0700 too (see the conf below):
# trust authentication, so only the owner and root may reach it.
fresh_dir() {
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  mkdir -m 0700 "$dir"
  if [ "$(id -u)" = 0 ]; then chown -h postgres "$dir"; fi
}

case "$cmd" in
  start)
    # A server left running in DIR by an interrupted run is stopped first.
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m immediate stop >/dev/null 2>&1 || true
    fi
    fresh_dir
    as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 </dev/null || {
      cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
unix_socket_permissions = 0700
port = 5432
fsync = on
synchronous_commit = on
max_connections = 200
shared_buffers = 32MB
CONF
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null || {
      cat "$dir/server.log" >&2; exit 1; }
    echo "host=$dir port=5432 user=postgres dbname=postgres"
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -m fast restart >/dev/null
    ;;
  standby)
    # DIR becomes a streaming standby of the server in PRIMARY (a running pg_server.sh
    # server): pg_basebackup over PRIMARY's socket, its own socket in DIR. Prints its conninfo.
    primary=${3:?usage: pg_server.sh standby DIR PRIMARY}
    fresh_dir
    as_owner "$bin/pg_basebackup" -D "$dir/data" -h "$primary" -p 5432 -U postgres -R -X stream >"$dir/basebackup.log" 2>&1 </dev/null || {
      cat "$dir/basebackup.log" >&2; exit 1; }
    cat >>"$dir/data/postgresql.conf" <<CONF
unix_socket_directories = '$dir'
unix_socket_permissions = 0700
hot_standby = on
CONF
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null || {
      cat "$dir/server.log" >&2; exit 1; }
    echo "host=$dir port=5432 user=postgres dbname=postgres"
    ;;
  promote)
    # A standby becomes a primary (a failover).
    as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null
    ;;
  halt)
    # Stops the server and keeps its data (a server that is down for a while); `restart` starts it again.
    as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null
    ;;
  kill)
    # The server's postmaster dies at once (a crash); start it again with `restart`.
    kill -9 "$(head -1 "$dir/data/postmaster.pid")"
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_server.sh start|stop|restart|halt|kill DIR" >&2
    exit 2
    ;;
esac
