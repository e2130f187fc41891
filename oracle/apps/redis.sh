#!/bin/bash
# Redis (Debian's redis-server 7.0) as the catalogue's anonymous-memory
# application: a run starts a server on a unix socket in DIR (no
# persistence, no port), loads 1.2 M keys of 300-byte values (about
# 0.5 GB of heap), reads 300,000 keys drawn uniformly by a fixed LCG, and
# shuts the server down. The client is redis_client.py (seeded,
# reproducible, pipelined in bounded batches), so the
# dataset is the server's anonymous memory, not files: under a limit below
# it the run swaps (give `foliosim oracle app --swap zram:SIZE`).
. "$(dirname "$0")/common.sh"
KEYS=1200000
GETS=300000
CLIENT="$(dirname "$0")/redis_client.py"
setup() {
    need_pkg redis-server redis-server
    need_pkg redis-cli redis-tools
    mkdir -p "$1/redis"
}
# The server's heap at the end of the load, measured on the reference
# host (INFO memory, used_memory_rss: 479.70 MiB); no files are read but
# the programs'.
footprint() { echo $((480 << 20)); }
run() {
    local d=$1/redis sock=$1/redis/redis.sock
    rm -f "$sock"
    redis-server --unixsocket "$sock" --unixsocketperm 700 --port 0 --save '' \
        --appendonly no --daemonize no --dir "$d" --logfile "$d/redis.log" &
    local srv=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
    [ -S "$sock" ] || { echo "$0: redis-server did not start ($d/redis.log)" >&2; exit 1; }
    python3 "$CLIENT" "$sock" load $KEYS 300
    python3 "$CLIENT" "$sock" get $KEYS $GETS 300
    redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true
    wait "$srv" || true
}
main "$@"
