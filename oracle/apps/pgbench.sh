#!/bin/bash
# PostgreSQL 15 (Debian's postgresql) with pgbench at scale 40 (4 M
# accounts, about 0.6 GB), a cluster of its own in DIR/pg run as the
# postgres user on a Unix socket in DIR (no TCP). A run starts the server
# (shared_buffers 32 MB), runs 2 clients of 20,000 transactions each with
# a fixed seed, read-only (-S, the default variant "ro") or TPC-B-like
# read-write ("rw"), and stops it. "reset" puts back the database setup
# built (rw changes it), outside any recording.
. "$(dirname "$0")/common.sh"
BIN=/usr/lib/postgresql/15/bin
as_pg() { runuser -u postgres -- "$@"; }
pg_start() {
    as_pg "$BIN/pg_ctl" -D "$1/pg" -l "$1/sock/pg.log" -w \
        -o "-c shared_buffers=32MB -c listen_addresses='' -k $1/sock -c fsync=on" start >/dev/null
}
pg_stop() { as_pg "$BIN/pg_ctl" -D "$1/pg" -m fast -w stop >/dev/null; }
setup() {
    [ -x "$BIN/initdb" ] ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >/dev/null
    if [ ! -f "$1/pg0/.done" ]; then
        rm -rf "$1/pg" "$1/pg0" "$1/sock"
        mkdir -p "$1/pg" "$1/sock"
        chown postgres: "$1/pg" "$1/sock"
        as_pg "$BIN/initdb" -D "$1/pg" -A trust -E UTF8 --locale=C >/dev/null
        pg_start "$1"
        as_pg "$BIN/pgbench" -h "$1/sock" -i -q -s 40 postgres >/dev/null 2>&1
        as_pg "$BIN/psql" -h "$1/sock" -qc 'CHECKPOINT' postgres
        pg_stop "$1"
        cp -a "$1/pg" "$1/pg0"
        touch "$1/pg0/.done"
    fi
}
reset() { rm -rf "$1/pg" && cp -a "$1/pg0" "$1/pg" && rm -f "$1/pg/.done"; }
footprint() { footprint_of "$1/pg/base"; }
run() {
    local mode
    case ${2:-ro} in
    ro) mode=-S ;;
    rw) mode= ;;
    *) echo "$0: variant '$2': ro or rw" >&2; exit 2 ;;
    esac
    pg_start "$1"
    # shellcheck disable=SC2086
    as_pg "$BIN/pgbench" -h "$1/sock" -n $mode -c 2 -j 2 -t 20000 --random-seed=1 postgres >/dev/null
    pg_stop "$1"
}
main "$@"
