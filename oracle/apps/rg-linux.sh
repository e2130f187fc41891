#!/bin/bash
# ripgrep over the Linux 6.1 source tree (the cache_ext paper's file search).
. "$(dirname "$0")/common.sh"
setup() { need_pkg rg ripgrep; linux_tree "$1"; }
footprint() { footprint_of "$1/linux"; }
# Two threads (as many as the host's CPUs), one pattern, counts only.
run() { exec rg -j2 --no-messages --no-ignore --count-matches 'folio_mark_accessed|workingset' "$1/linux" >/dev/null; }
main "$@"
