#!/bin/bash
# RocksDB's db_bench (Debian's rocksdb-tools) over a database of 2 M keys
# (400-byte values, no compression, about 0.9 GB) loaded once by setup.
# The variant picks the benchmark: readrandom (uniform point reads),
# readzipf (readrandom with an exponential key skew), seekrandom (seeks,
# each followed by 10 nexts).
. "$(dirname "$0")/common.sh"
NUM=2000000
common_flags() {
    echo --db="$1/rocks" --num=$NUM --value_size=400 --compression_type=none \
        --cache_size=8388608 --seed=1 --threads=1 --statistics=0 --progress_reports=false
}
setup() {
    need_pkg db_bench rocksdb-tools
    if [ ! -f "$1/rocks/.done" ]; then
        rm -rf "$1/rocks"
        # shellcheck disable=SC2046
        db_bench --benchmarks=fillrandom,compact $(common_flags "$1") >/dev/null
        touch "$1/rocks/.done"
    fi
}
footprint() { footprint_of "$1/rocks"; }
run() {
    local b=${2:-readrandom}
    # shellcheck disable=SC2046
    case $b in
    readrandom) exec db_bench --benchmarks=readrandom --use_existing_db=1 --reads=200000 $(common_flags "$1") >/dev/null ;;
    readzipf) exec db_bench --benchmarks=readrandom --use_existing_db=1 --reads=200000 --read_random_exp_range=10 $(common_flags "$1") >/dev/null ;;
    seekrandom) exec db_bench --benchmarks=seekrandom --use_existing_db=1 --reads=50000 --seek_nexts=10 $(common_flags "$1") >/dev/null ;;
    *) echo "$0: variant '$b': readrandom, readzipf or seekrandom" >&2; exit 2 ;;
    esac
}
main "$@"
