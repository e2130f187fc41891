# Shared by the catalogue's scripts (sourced). Each script is run as
#   APP.sh setup DIR     build the dataset in DIR (idempotent, reproducible)
#   APP.sh footprint DIR print the bytes of file data a run reads
#   APP.sh run DIR [V]   run the application on it (what the oracle
#                        records); V picks a variant where the app has some
#   APP.sh reset DIR     undo what a run changed (apps that write), outside
#                        any recording
# and needs root only for setup's package install.
set -eu

need_pkg() {
    # need_pkg COMMAND PACKAGE...: install the Debian packages if COMMAND is missing.
    local cmd=$1
    shift
    if ! command -v "$cmd" >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null
    fi
    command -v "$cmd" >/dev/null 2>&1 || { echo "$0: cannot install $* (for $cmd)" >&2; exit 2; }
}

# The Linux 6.1 source tree from Debian's linux-source-6.1, extracted once
# under $1/linux (files keep the tarball's mtimes: reproducible).
linux_tree() {
    local dir=$1
    if [ ! -f "$dir/linux/.done" ]; then
        need_pkg xz xz-utils
        [ -f /usr/src/linux-source-6.1.tar.xz ] ||
            DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends linux-source-6.1 >/dev/null
        rm -rf "$dir/linux" && mkdir -p "$dir/linux"
        tar -C "$dir/linux" --strip-components=1 -xJf /usr/src/linux-source-6.1.tar.xz
        touch "$dir/linux/.done"
    fi
}

footprint_of() {
    # Bytes of regular files under the paths given.
    find "$@" -type f -printf '%s\n' | awk '{s+=$1} END {printf "%d\n", s}'
}

main() {
    local cmd=${1:-} dir=${2:-} variant=${3:-}
    if [ -z "$cmd" ] || [ -z "$dir" ]; then
        echo "usage: $0 setup|footprint|run DIR" >&2
        exit 2
    fi
    mkdir -p "$dir"
    case $cmd in
    setup) setup "$dir" ;;
    footprint) footprint "$dir" ;;
    run) run "$dir" "$variant" ;;
    reset) if declare -F reset >/dev/null; then reset "$dir"; fi ;;
    *) echo "$0: unknown command '$cmd' (setup, footprint, run, reset)" >&2; exit 2 ;;
    esac
}
