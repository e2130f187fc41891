#!/bin/sh
# One short oracle case on the real kernel, for scripts/test (CI runs as root
# on the same kind of machine). Usage: oracle/ci.sh [path/to/foliosim]
# Fails when the case runs and the model misses the real kernel's pgpgin or
# pgmajfault by more than the suite's tolerance; a case the host cannot run
# (no root, no memory cgroup) is reported skipped with the reason.
set -eu
FOLIOSIM=${1:-target/release/foliosim}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
timeout 120 "$FOLIOSIM" oracle suite --case mmap-seq-2g-512m --repeat 1 --quiet --out "$OUT" >/dev/null
if ! grep -q '"status": "ran"' "$OUT/report.json"; then
    echo "oracle/ci.sh: mmap-seq-2g-512m skipped on this host:"
    grep -o '"reason": "[^"]*"' "$OUT/report.json" || true
    exit 0
fi
grep -E '^\| (pgpgin|pgmajfault) ' "$OUT/report.md"
if grep -E '^\| (pgpgin|pgmajfault) ' "$OUT/report.md" | grep -q FAIL; then
    echo "oracle/ci.sh: the model is off the real kernel on mmap-seq-2g-512m"
    exit 1
fi
echo "oracle/ci.sh: mmap-seq-2g-512m: model within tolerance of the real kernel"
