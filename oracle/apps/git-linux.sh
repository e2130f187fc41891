#!/bin/bash
# git over a repository of the Linux 6.1 tree (one commit, packed; its git
# directory beside the tree, DIR/linux.git, so the tree rg and tar read
# stays plain): status (stats the work tree, reads the index), grep of the
# committed tree (reads the pack), then log -p of the commit's mm/ and fs/
# (the whole tree's patch takes 47 s cold).
. "$(dirname "$0")/common.sh"
setup() {
    need_pkg git git
    linux_tree "$1"
    export GIT_DIR="$1/linux.git" GIT_WORK_TREE="$1/linux"
    if [ ! -f "$GIT_DIR/.done" ]; then
        rm -rf "$GIT_DIR"
        export GIT_AUTHOR_DATE='2023-01-01T00:00:00Z' GIT_COMMITTER_DATE='2023-01-01T00:00:00Z'
        git -c init.defaultBranch=main init -q
        # No automatic gc, in setup (commit would start one in the
        # background, racing the gc below) or inside a recorded run.
        git config gc.auto 0
        # Debian's tree ignores everything (its .gitignore ends with /*).
        git add -A -f
        git -c user.name=foliosim -c user.email=foliosim@localhost commit -qm linux-6.1
        git gc -q --prune=now
        # A refreshed index (racily clean entries settled): a run's status
        # stats the files instead of reading them all again.
        sleep 2
        git update-index -q --really-refresh
        git status --porcelain >/dev/null
        touch "$GIT_DIR/.done"
    fi
}
footprint() { footprint_of "$1/linux.git"; }
run() {
    export GIT_DIR="$1/linux.git" GIT_WORK_TREE="$1/linux"
    cd "$1/linux"
    git status --porcelain >/dev/null
    git grep -c 'folio_mark_accessed' HEAD >/dev/null
    git log -p -1 --stat -- mm fs >/dev/null
}
main "$@"
