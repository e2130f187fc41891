#!/usr/bin/env bash
# Builds the cache_ext paper's kernel (linux-cache-ext, 6.6.8 with the
# cache_ext hooks, at the commit its artifact repository pins as its
# `linux` submodule) for a QEMU guest: every driver the guest needs built
# in (no modules, so no initramfs module list), MGLRU compiled in and off
# at boot as the paper's default runs have it, BPF with BTF for the
# struct_ops policies; what a guest without display, sound, USB or network
# does not need is left out (the build's time). It only builds; nothing is installed or booted.
#
#   oracle/qemu/build-cache-ext.sh [--src DIR] [--out DIR] [--jobs N]
#
# --src: a linux-cache-ext git repository to take the commit from
#        (default: GitHub); it is cloned with --shared (its objects are
#        borrowed, nothing in it changes).
# --out: where the tree, the build and the result go
#        (default /var/tmp/foliosim-qemu/cache-ext); the result is
#        OUT/bzImage and OUT/config. A second run rebuilds incrementally.
#
# Needs: git, gcc, make, flex, bison, bc, libelf-dev, libssl-dev and
# pahole (Debian's dwarves) for BTF. About 1-2 hours on 2 cores. A missing
# tool is named and the script exits 2 (it changes nothing on the host).
set -euo pipefail
. "$(dirname "$0")/clone-at.sh"

# cache-ext/cache_ext at 0d2eeca ("Update to final version of paper")
# pins linux-cache-ext at this commit.
COMMIT=7442a927600ec6ded8ad56a708d293f7cb0d303d
URL=https://github.com/cache-ext/linux-cache-ext.git
SRC=""
OUT=/var/tmp/foliosim-qemu/cache-ext
JOBS=$(nproc)
while [ $# -gt 0 ]; do
	case $1 in
	--src) SRC=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--jobs) JOBS=$2; shift 2 ;;
	*) echo "build-cache-ext.sh: unknown argument '$1' (--src DIR, --out DIR, --jobs N)" >&2; exit 2 ;;
	esac
done
for t in git gcc make flex bison bc pahole; do
	command -v $t >/dev/null || { echo "build-cache-ext.sh: $t is missing (Debian: apt-get install git build-essential flex bison bc libelf-dev libssl-dev dwarves)" >&2; exit 2; }
done
for h in /usr/include/gelf.h /usr/include/openssl/ssl.h; do
	[ -f $h ] || { echo "build-cache-ext.sh: $h is missing (apt-get install libelf-dev libssl-dev)" >&2; exit 2; }
done

mkdir -p "$OUT"
TREE=$OUT/linux
if [ ! -e "$TREE/Makefile" ]; then
	clone_at "$SRC" "$URL" "$TREE" "$COMMIT"
fi
[ "$(git -C "$TREE" rev-parse HEAD)" = "$COMMIT" ] || { echo "build-cache-ext.sh: $TREE is not at $COMMIT" >&2; exit 2; }

cd "$TREE"
if [ ! -f .config ]; then
	make -s x86_64_defconfig
	make -s kvm_guest.config
	# The guest's disk, file system and checksum, zram, memcg and MGLRU
	# (off unless the guest turns it on), BPF and BTF for cache_ext's
	# struct_ops policies, and cgroup v2's BPF hooks.
	scripts/config \
		--enable VIRTIO_PCI --enable VIRTIO_BLK --enable EXT4_FS \
		--enable CRYPTO_CRC32C --enable CRYPTO_LZO --enable ZSMALLOC --enable ZRAM \
		--enable SWAP --enable MEMCG --enable CGROUPS \
		--enable LRU_GEN --disable LRU_GEN_ENABLED \
		--enable TRANSPARENT_HUGEPAGE \
		--enable BPF --enable BPF_SYSCALL --enable BPF_JIT --enable CGROUP_BPF \
		--enable DEBUG_INFO --enable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
		--disable DEBUG_INFO_REDUCED --enable DEBUG_INFO_BTF \
		--enable FTRACE --enable FUNCTION_TRACER --enable DYNAMIC_FTRACE \
		--enable FPROBE --enable DEBUG_FS --enable BLK_DEV_INITRD --enable DEVTMPFS \
		--disable DRM --disable SOUND --disable USB_SUPPORT --disable WLAN \
		--disable WIRELESS --disable NETFILTER --disable NFS_FS --disable HID \
		--disable AGP --disable NETDEVICES --disable IPV6 --disable PCCARD \
		--disable SECURITY_SELINUX --disable INPUT_JOYSTICK --disable INPUT_TABLET \
		--disable INPUT_TOUCHSCREEN --disable MACINTOSH_DRIVERS --disable FB \
		--set-str LOCALVERSION "-cache-ext" \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS ""
	make -s olddefconfig
	for o in LRU_GEN MEMCG BPF_SYSCALL DEBUG_INFO_BTF VIRTIO_BLK EXT4_FS ZRAM FUNCTION_TRACER DYNAMIC_FTRACE DEBUG_FS; do
		grep -q "^CONFIG_$o=y" .config || { echo "build-cache-ext.sh: CONFIG_$o did not stay on" >&2; exit 1; }
	done
fi
nice -n 19 make -j"$JOBS" bzImage
cp arch/x86/boot/bzImage "$OUT/bzImage"
cp .config "$OUT/config"
echo "build-cache-ext.sh: $OUT/bzImage ($(make -s kernelrelease))"
