#!/bin/bash
# tar of the Linux 6.1 source tree, read whole (to a pipe: tar skips
# reading files when it writes to /dev/null itself).
. "$(dirname "$0")/common.sh"
setup() { linux_tree "$1"; }
footprint() { footprint_of "$1/linux"; }
run() { tar -C "$1" -cf - linux | cat >/dev/null; }
main "$@"
