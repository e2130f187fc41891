# Sourced by build-cache-ext.sh and build-cache-ext-policies.sh.
# clone_at SRC URL DEST COMMIT: DEST becomes a checkout of COMMIT, cloned
# from the local repository SRC with --shared (its objects borrowed,
# nothing in it changed) or, when SRC is empty, from URL.
clone_at() {
	local src=$1 url=$2 dest=$3 commit=$4
	rm -rf "$dest"
	if [ -n "$src" ]; then
		git clone -q --shared --no-checkout "$src" "$dest"
	else
		git clone -q --no-checkout "$url" "$dest"
	fi
	git -C "$dest" -c advice.detachedHead=false checkout -q "$commit"
}
