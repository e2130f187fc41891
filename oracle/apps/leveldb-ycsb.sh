#!/bin/bash
# YCSB C (zipfian) or Uniform reads over LevelDB, through the project's own
# driver (leveldb_ycsb.cc, built by setup with Debian's libleveldb-dev):
# 1 M records of 1 KB (about 1 GB), 200,000 reads a run.
. "$(dirname "$0")/common.sh"
RECORDS=1000000
setup() {
    need_pkg g++ g++
    [ -f /usr/include/leveldb/db.h ] ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libleveldb-dev >/dev/null
    local src
    src="$(dirname "$0")/leveldb_ycsb.cc"
    if [ ! -x "$1/leveldb_ycsb" ] || [ "$src" -nt "$1/leveldb_ycsb" ]; then
        g++ -O2 -o "$1/leveldb_ycsb" "$src" -lleveldb
    fi
    if [ ! -f "$1/leveldb/.done" ]; then
        rm -rf "$1/leveldb"
        "$1/leveldb_ycsb" load "$1/leveldb" $RECORDS
        touch "$1/leveldb/.done"
    fi
}
footprint() { footprint_of "$1/leveldb"; }
run() { exec "$1/leveldb_ycsb" run "$1/leveldb" $RECORDS 200000 "${2:-zipfian}" >/dev/null; }
main "$@"
