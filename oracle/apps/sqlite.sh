#!/bin/bash
# SQLite (Debian's sqlite3 shell) over a 3 M-row table of 200-byte
# payloads (about 0.8 GB), built once by setup; a run makes 100,000 point
# lookups by primary key, the keys from a fixed LCG (written by setup).
. "$(dirname "$0")/common.sh"
ROWS=3000000
setup() {
    need_pkg sqlite3 sqlite3
    if [ ! -f "$1/sqlite/.done" ]; then
        rm -rf "$1/sqlite" && mkdir -p "$1/sqlite"
        sqlite3 "$1/sqlite/t.db" <<SQL
PRAGMA page_size=4096;
PRAGMA journal_mode=OFF;
CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < $ROWS)
INSERT INTO t SELECT i, zeroblob(200) FROM c;
SQL
        # 100,000 keys from x = (69069 x + 1) mod 2^32 (exact in awk's doubles).
        awk -v n=$ROWS 'BEGIN { x = 1; for (k = 0; k < 100000; k++) {
            x = (69069 * x + 1) % 4294967296;
            printf "SELECT length(payload) FROM t WHERE id=%d;\n", 1 + x % n } }' >"$1/sqlite/lookups.sql"
        touch "$1/sqlite/.done"
    fi
}
footprint() { footprint_of "$1/sqlite/t.db"; }
run() { exec sqlite3 "$1/sqlite/t.db" ".read $1/sqlite/lookups.sql" >/dev/null; }
main "$@"
