#!/bin/sh
# One short oracle case on the real kernel, for .ci/run (CI runs as root on
# the same kind of machine). Usage: oracle/ci.sh [path/to/foliosim]
# Fails when the case fails; a case the host cannot run is reported skipped.
set -eu
FOLIOSIM=${1:-target/release/foliosim}
if ! command -v fio >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq fio >/dev/null
    else
        echo "oracle/ci.sh: fio missing and cannot be installed here; fio cases will be skipped"
    fi
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
timeout 120 "$FOLIOSIM" oracle suite --case mmap-seq-2g-512m --repeat 1 --quiet --out "$OUT"
grep -q '"status": "ran"' "$OUT/report.json" || {
    echo "oracle/ci.sh: the case did not run on this host:"
    grep -o '"reason": "[^"]*"' "$OUT/report.json" || true
}
