#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, from Debian's `postgresql` package: a
# cluster made by initdb in a directory of its own, listening on a loopback port only,
# trust authentication (nothing else can reach it). As root, the server runs as the
# `postgres` user (PostgreSQL refuses to run as root) and the directory is given to it.
#
#   Tests/postgres/pg.sh start DIR [PORT]   initdb (first time) and start; prints the URL
#   Tests/postgres/pg.sh stop DIR           stop (fast: sessions are cut, like an outage)
#   Tests/postgres/pg.sh remove DIR         stop if running, then delete DIR
#
# DIR must not be inside a directory only root can enter (use mktemp -d under /tmp).
# PORT defaults to the one DIR's server used before, else a free one.
set -euo pipefail

BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
[[ -x "$BIN/pg_ctl" ]] || { echo "pg.sh: no PostgreSQL server binaries (install the Debian package postgresql)" >&2; exit 1; }

as_owner() {
    if [[ "$(id -u)" -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

command="${1:-}"; dir="${2:-}"
[[ -n "$command" && -n "$dir" ]] || { echo "usage: pg.sh start|stop|remove DIR [PORT]" >&2; exit 2; }

case "$command" in
start)
    mkdir -p "$dir"
    [[ "$(id -u)" -eq 0 ]] && chown postgres: "$dir"
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        as_owner "$BIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    port="${3:-$(cat "$dir/port" 2>/dev/null || python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
    echo "$port" >"$dir/port"
    as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='$dir'" start >/dev/null \
        || { tail -n 20 "$dir/server.log" >&2; exit 1; }
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
stop)
    as_owner "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
remove)
    [[ -d "$dir/data" ]] && as_owner "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: pg.sh start|stop|remove DIR [PORT]" >&2; exit 2
    ;;
esac
