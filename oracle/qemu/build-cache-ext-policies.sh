#!/usr/bin/env bash
# Builds cache_ext's policy loaders (the paper's artifact, policies/*.c and
# their *.bpf.c) as static binaries a QEMU guest booted on the kernel of
# build-cache-ext.sh can run: the BPF objects compiled against that
# kernel's BTF, their skeletons, and the loaders linked with the libbpf of
# the same tree (cache_ext's loaders call its bpf_map__attach_cache_ext_ops()).
#
#   oracle/qemu/build-cache-ext-policies.sh [--src REPO] [--out DIR]
#
# --src: a cache-ext/cache_ext git repository (default: GitHub), cloned
#        with --shared at the artifact's final commit.
# --out: build-cache-ext.sh's directory (default
#        /var/tmp/foliosim-qemu/cache-ext): its linux/vmlinux must exist.
#        Results: DIR/policies/cache_ext_<name>.out.
#
# Needs clang (with llvm) and the static libelf, zlib and zstd (libelf-dev,
# zlib1g-dev, libzstd-dev). bpftool is built from the same tree: the
# skeletons need a libbpf that knows `.struct_ops.link` (1.2; Debian
# bookworm's bpftool has 1.1 and leaves the policies' ops map out).
# A missing one is named and the script exits 2.
set -euo pipefail
. "$(dirname "$0")/clone-at.sh"

COMMIT=0d2eeca07cde3d4e5c323d0d4b1021204c7aa7e0
URL=https://github.com/cache-ext/cache_ext.git
SRC=""
OUT=/var/tmp/foliosim-qemu/cache-ext
while [ $# -gt 0 ]; do
	case $1 in
	--src) SRC=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "build-cache-ext-policies.sh: unknown argument '$1' (--src REPO, --out DIR)" >&2; exit 2 ;;
	esac
done
for t in git clang llvm-strip make gcc; do
	command -v $t >/dev/null || { echo "build-cache-ext-policies.sh: $t is missing (Debian: apt-get install clang llvm)" >&2; exit 2; }
done
LIBDIR=/usr/lib/x86_64-linux-gnu
for a in libelf.a libz.a libzstd.a; do
	[ -f $LIBDIR/$a ] || { echo "build-cache-ext-policies.sh: $LIBDIR/$a is missing (apt-get install libelf-dev zlib1g-dev libzstd-dev)" >&2; exit 2; }
done
TREE=$OUT/linux
[ -f "$TREE/vmlinux" ] || { echo "build-cache-ext-policies.sh: $TREE/vmlinux is missing: run build-cache-ext.sh first" >&2; exit 2; }

# The tree's libbpf, static, with its headers.
LIBBPF=$OUT/libbpf
if [ ! -f "$LIBBPF/usr/lib64/libbpf.a" ]; then
	mkdir -p "$OUT/libbpf-build"
	make -s -C "$TREE/tools/lib/bpf" BUILD_STATIC_ONLY=1 OUTPUT="$OUT/libbpf-build/" \
		DESTDIR="$LIBBPF" prefix=/usr install >/dev/null
fi

BPFTOOL=$OUT/bpftool-build/bpftool
if [ ! -x "$BPFTOOL" ]; then
	mkdir -p "$OUT/bpftool-build"
	make -s -C "$TREE/tools/bpf/bpftool" OUTPUT="$OUT/bpftool-build/" >/dev/null
fi

ART=$OUT/cache_ext
if [ ! -d "$ART/policies" ]; then
	clone_at "$SRC" "$URL" "$ART" "$COMMIT"
fi

B=$OUT/policies
mkdir -p "$B"
cp "$ART"/policies/*.h "$ART"/policies/*.c "$B"/
cd "$B"
[ -s vmlinux.h ] || "$BPFTOOL" btf dump file "$TREE/vmlinux" format c > vmlinux.h
SYS=$(clang -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
for p in fifo mru sampling s3fifo lhd get_scan mglru; do
	n=cache_ext_$p
	# shellcheck disable=SC2086
	clang -O2 -g -Wall -target bpf -D__TARGET_ARCH_x86 -I"$LIBBPF/usr/include" $SYS -c $n.bpf.c -o $n.bpf.o
	"$BPFTOOL" gen skeleton $n.bpf.o > $n.skel.h
	gcc -O2 -Wall -static -I"$LIBBPF/usr/include" $n.c -o $n.out \
		"$LIBBPF/usr/lib64/libbpf.a" $LIBDIR/libelf.a $LIBDIR/libz.a $LIBDIR/libzstd.a -lpthread
done
echo "build-cache-ext-policies.sh: $(ls "$B"/*.out | tr '\n' ' ')"
