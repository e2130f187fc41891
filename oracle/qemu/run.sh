#!/usr/bin/env bash
# Seed 003's directional experiments on a real MGLRU kernel in a QEMU guest:
# Debian bookworm's packaged Linux 6.12 (CONFIG_LRU_GEN=y; before seed 003's
# series, i.e. the model's `reclaim-legacy`), MGLRU and the classic LRU
# switched at boot through /sys/kernel/mm/lru_gen/enabled on the same guest.
#
#   oracle/qemu/run.sh [--out DIR] [--exp aging,swapmix,ddoom,folios,ycsb,kbuild] [--lru y,n] [--quick]
#                      [--kernel 6.1|6.12|7.0|7.1|7.2|7.3|cache-ext]   (the release the guest boots, 6.12;
#                      cache-ext: the cache_ext paper's kernel as build-cache-ext.sh left it
#                      in $FSIM_QEMU_WORK/cache-ext)
#                      [--policy NAME] [--policy-cgroup PATH] [--policy-file NAME]   (cache-ext
#                      only, kbuild: cache_ext's loader cache_ext_NAME.out, from
#                      build-cache-ext-policies.sh, attached to the scenario cgroup PATH
#                      (cache_ext_ycsb) of each oracle run, watching the directory of the scenario's
#                      file NAME (db); NAME one of fifo, mru, sampling, s3fifo, lhd,
#                      get_scan, mglru; none: the kernel's own LRU). linux-cache-ext sets a
#                      memcg up for policies only when its name starts with cache_ext
#                      (mem_cgroup_css_online()), so PATH's last name must too)
#                      [--rounds N] [--threads N] [--readers N] [--think A_US,F_US]
#                      [--anon-mb N]   (the swappiness mix's anon size, 256)
#                      [--dd-mb N] [--iops N,...]   (ddoom: dd size, 512; write
#                      IOPS limits of the scratch disk, 0 = unthrottled; 0,10)
#                      [--secs N]   (ycsb's measured seconds, 30)
#                      [--swappiness N,...] [--repeat N]   (kbuild: the values
#                      swept, 35,70,105,140,175; real runs each, 1)
#                      [--scenario FILE]   (kbuild: the scenario the oracle
#                      runs, examples/kernel-build.toml)
#
# Fetches the kernel with `apt-get download`, builds an initramfs (busybox +
# mixpress.c, static + init-seed003 + the kernel modules the experiments
# need), an ext4 data disk, boots one guest per (experiment, LRU) and writes
# DIR/<exp>[-t<threads>r<readers>]-lru_<y|n>.json (one JSON object per
# line, as the guest printed them) and DIR/summary.json. Work files go to $FSIM_QEMU_WORK
# (/var/tmp/foliosim-qemu). Where qemu, busybox-static, a C compiler or the
# kernel package cannot be had, prints "skipped: <why>", writes
# {"skipped": "<why>"} to DIR/summary.json and stdout, and exits 0.
# FSIM_QEMU_NO_INSTALL=1 forbids apt-get install, FSIM_QEMU_BIN names the
# qemu binary (tests use both for the skip path). FSIM_QEMU_TRACE=1 has the
# ddoom guest trace reclaim, writeback and the OOM kill (FSIM_TRACE lines in
# its log), and the kbuild guest sum the readahead tracepoints per file
# over each oracle run (FSIM_TRACE_SUM and, for page counts, FSIM_TRACE_HIST
# lines) and print MGLRU's lru_gen_full of the oracle's groups every 3 s
# (FSIM_LRUGEN lines). FSIM_QEMU_SMP sets the guest's vCPUs (2);
# FSIM_QEMU_SCRATCH_MB the size of the kbuild experiment's scratch disk
# (1024), which holds the scenario's files.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=results/qemu-seed003
EXPS=aging,swapmix
LRUS=y,n
QUICK=0
ROUNDS=
THREADS=4
READERS=4
THINK=20,50
ANON_MB=256
DD_MB=512
IOPS=0,10
KERNEL=6.12
YCSB_SECS=30
KB_SWAPPINESS=35,70,105,140,175
KB_REPEAT=1
KB_SCENARIO=$(cd "$HERE/../.." && pwd)/examples/kernel-build.toml
POLICY=none
POLICY_CGROUP=cache_ext_ycsb
POLICY_FILE=db
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=$2; shift 2 ;;
	--exp) EXPS=$2; shift 2 ;;
	--lru) LRUS=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--readers) READERS=$2; shift 2 ;;
	--think) THINK=$2; shift 2 ;;
	--anon-mb) ANON_MB=$2; shift 2 ;;
	--dd-mb) DD_MB=$2; shift 2 ;;
	--iops) IOPS=$2; shift 2 ;;
	--kernel) KERNEL=$2; shift 2 ;;
	--secs) YCSB_SECS=$2; shift 2 ;;
	--swappiness) KB_SWAPPINESS=$2; shift 2 ;;
	--repeat) KB_REPEAT=$2; shift 2 ;;
	--scenario) KB_SCENARIO=$(realpath -m -- "$2"); shift 2 ;;
	--policy) POLICY=$2; shift 2 ;;
	--policy-cgroup) POLICY_CGROUP=$2; shift 2 ;;
	--policy-file) POLICY_FILE=$2; shift 2 ;;
	*) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
for e in ${EXPS//,/ }; do case $e in aging|swapmix|ddoom|folios|ycsb|kbuild) ;; *) echo "run.sh: --exp: unknown experiment '$e' (aging, swapmix, ddoom, folios, ycsb, kbuild)" >&2; exit 2 ;; esac; done
case $KERNEL in 6.1|6.12|7.[0-9]|cache-ext) ;; *) echo "run.sh: --kernel: '$KERNEL' is not 6.1, 6.12, 7.N (7.0 to 7.3 are packaged) or cache-ext" >&2; exit 2 ;; esac
case $POLICY in none|fifo|mru|sampling|s3fifo|lhd|get_scan|mglru) ;; *) echo "run.sh: --policy: '$POLICY' is not none, fifo, mru, sampling, s3fifo, lhd, get_scan or mglru" >&2; exit 2 ;; esac
[ "$POLICY" = none ] || [ "$KERNEL" = cache-ext ] || { echo "run.sh: --policy needs --kernel cache-ext" >&2; exit 2; }
[[ $POLICY_CGROUP =~ ^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$ && /$POLICY_CGROUP/ != */../* && /$POLICY_CGROUP/ != */./* ]] || { echo "run.sh: --policy-cgroup: '$POLICY_CGROUP' is not a cgroup path (name[/name...])" >&2; exit 2; }
[[ ${POLICY_CGROUP##*/} == cache_ext* ]] || { echo "run.sh: --policy-cgroup: '$POLICY_CGROUP': linux-cache-ext runs policies only in cgroups named cache_ext*" >&2; exit 2; }
[[ $POLICY_FILE =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "run.sh: --policy-file: '$POLICY_FILE' is not a file name" >&2; exit 2; }
[[ $IOPS =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "run.sh: --iops: '$IOPS' is not N[,N...]" >&2; exit 2; }
[[ $KB_SWAPPINESS =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "run.sh: --swappiness: '$KB_SWAPPINESS' is not N[,N...]" >&2; exit 2; }
[ -f "$KB_SCENARIO" ] || { echo "run.sh: --scenario: '$KB_SCENARIO' is not a file" >&2; exit 2; }
for l in ${LRUS//,/ }; do case $l in y|n) ;; *) echo "run.sh: --lru: '$l' is not y or n" >&2; exit 2 ;; esac; done
[[ $THINK =~ ^[0-9]+,[0-9]+$ ]] || { echo "run.sh: --think: '$THINK' is not A_US,F_US" >&2; exit 2; }
for o in "secs:$YCSB_SECS:3600" "dd-mb:$DD_MB:4096" "anon-mb:$ANON_MB:512" "rounds:${ROUNDS:-1}:1000" "repeat:$KB_REPEAT:10" "threads:$THREADS:64" "readers:$READERS:256"; do
	IFS=: read -r name v max <<< "$o"
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge 1 ] && [ "$v" -le "$max" ] || { echo "run.sh: --$name: '$v' is not 1..$max" >&2; exit 2; }
done
SMP=${FSIM_QEMU_SMP:-2}
[[ $SMP =~ ^[0-9]+$ ]] && [ "$SMP" -ge 1 ] && [ "$SMP" -le 64 ] || { echo "run.sh: FSIM_QEMU_SMP: '$SMP' is not 1..64" >&2; exit 2; }
SCRATCH_MB=${FSIM_QEMU_SCRATCH_MB:-1024}
[[ $SCRATCH_MB =~ ^[0-9]+$ ]] && [ "$SCRATCH_MB" -ge 256 ] && [ "$SCRATCH_MB" -le 65536 ] || { echo "run.sh: FSIM_QEMU_SCRATCH_MB: '$SCRATCH_MB' is not 256..65536" >&2; exit 2; }
mkdir -p "$OUT"
WORK=${FSIM_QEMU_WORK:-/var/tmp/foliosim-qemu}

skip() {
	local why=${1//\"/\'}
	echo "skipped: $why" >&2
	printf '{"skipped": "%s"}\n' "$why" | tee "$OUT/summary.json"
	exit 0
}

# ---- tools ----
QEMU=${FSIM_QEMU_BIN:-qemu-system-x86_64}
need_pkgs=()
command -v "$QEMU" >/dev/null || need_pkgs+=(qemu-system-x86)
bb=$(command -v busybox || true)
is_static() { case $(ldd "$1" 2>&1 || true) in *"not a dynamic"*) return 0 ;; esac; return 1; }
{ [ -n "$bb" ] && is_static "$bb"; } || need_pkgs+=(busybox-static)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	[ "${FSIM_QEMU_NO_INSTALL:-0}" = 1 ] && skip "missing ${need_pkgs[*]} (install not allowed)"
	[ "$(id -u)" = 0 ] || skip "missing ${need_pkgs[*]} and not root to install them"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >&2 || \
		skip "apt-get install ${need_pkgs[*]} failed"
fi
QEMU=$(command -v "$QEMU") || skip "no $QEMU after installing qemu-system-x86"
BUSYBOX=$(command -v busybox) || skip "no busybox"
is_static "$BUSYBOX" || skip "$BUSYBOX is not static (busybox-static)"
for t in gcc mkfs.ext4 xz gzip; do command -v $t >/dev/null || skip "no $t"; done
# kbuild runs foliosim's oracle in the guest: this checkout's release build
# (FSIM_FOLIOSIM names another), with the shared libraries it links.
FOLIOSIM=
if [[ ,$EXPS, == *,kbuild,* ]]; then
	FOLIOSIM=${FSIM_FOLIOSIM:-$(cd "$HERE/../.." && pwd)/target/release/foliosim}
	if [ -z "${FSIM_FOLIOSIM:-}" ]; then
		command -v cargo >/dev/null || skip "no cargo to build foliosim for kbuild"
		(cd "$HERE/../.." && cargo build --release -q -p foliosim-cli) >&2 || skip "cargo build of foliosim failed"
	fi
	[ -x "$FOLIOSIM" ] || skip "no foliosim binary at $FOLIOSIM"
fi

# ---- kernel: Debian's packaged 6.1 or 6.12 (bookworm) or 7.N (trixie-backports) ----
mkdir -p "$WORK"
cd "$WORK"
if [ "$KERNEL" = cache-ext ]; then
	# Built here (build-cache-ext.sh): every driver built in, no modules.
	PKG=linux-cache-ext
elif [ "$KERNEL" = 6.1 ] || [ "$KERNEL" = 6.12 ]; then
	# bookworm names 6.1 by its ABI (linux-image-6.1.0-N-amd64-unsigned),
	# 6.12 (from its security updates) by version.
	if [ "$KERNEL" = 6.1 ]; then pat='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$'; else pat='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$'; fi
	PKG=${FSIM_QEMU_KERNEL_PKG:-$(apt-cache search --names-only "$pat" 2>/dev/null | awk '{print $1}' | sort -V | tail -1)}
	[ -n "$PKG" ] || skip "no $pat package in apt's lists (apt-get update?)"
	if [ ! -d "kernel-$PKG" ]; then
		rm -f "$PKG"_*.deb
		apt-get download "$PKG" >&2 2>/dev/null || skip "apt-get download $PKG failed"
		mkdir -p "kernel-$PKG.tmp" && dpkg-deb -x "$PKG"_*.deb "kernel-$PKG.tmp" && mv "kernel-$PKG.tmp" "kernel-$PKG"
		rm -f "$PKG"_*.deb
	fi
else
	# Newer releases are packaged for trixie-backports as three .debs:
	# linux-binary (vmlinuz), linux-base (config) and linux-modules. The
	# suite's index keeps the binary of older point releases but not always
	# their modules, so the newest binary of the release names the version
	# and all three are fetched from the pool of the mirror this host's apt
	# already uses (FSIM_QEMU_MIRROR overrides it).
	MIRROR=${FSIM_QEMU_MIRROR:-$(sed -n 's|^URIs: *\(https\?://[^ ]*/debian\)/*$|\1|p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)}
	[ -n "$MIRROR" ] || MIRROR=$(sed -n 's|^deb \(https\?://[^ ]*/debian\)/* .*|\1|p' /etc/apt/sources.list 2>/dev/null | head -1)
	[ -n "$MIRROR" ] || skip "no Debian mirror in /etc/apt (set FSIM_QEMU_MIRROR)"
	command -v curl >/dev/null || skip "no curl to fetch the $KERNEL kernel"
	idx=trixie-backports-Packages
	if [ ! -s "$idx" ] || [ -n "$(find "$idx" -mmin +1440)" ]; then
		curl -fsS -m 300 "$MIRROR/dists/trixie-backports/main/binary-amd64/Packages.xz" | xz -dc > "$idx.tmp" \
			&& mv "$idx.tmp" "$idx" || skip "cannot fetch trixie-backports' package index"
	fi
	kv=${KERNEL//./\\.}
	V=$(sed -n "s/^Package: linux-binary-\($kv\.[0-9]*\)+deb13-amd64\$/\1/p" "$idx" | sort -V | tail -1)
	[ -n "$V" ] || skip "no linux-binary-$KERNEL.*+deb13-amd64 in trixie-backports"
	DV=$(awk -v p="linux-binary-$V+deb13-amd64" '$1 == "Package:" { on = ($2 == p) } on && $1 == "Version:" { print $2; exit }' "$idx")
	PKG=linux-$V+deb13-amd64
	if [ ! -d "kernel-$PKG" ]; then
		rm -rf "kernel-$PKG.tmp" && mkdir -p "kernel-$PKG.tmp"
		for part in binary:linux-signed-amd64 base:linux modules:linux; do
			deb=linux-${part%%:*}-$V+deb13-amd64_${DV}_amd64.deb
			curl -fsS -m 900 -o "$deb" "$MIRROR/pool/main/l/${part#*:}/$deb" || skip "cannot fetch $deb"
			dpkg-deb -x "$deb" "kernel-$PKG.tmp" && rm -f "$deb"
		done
		mv "kernel-$PKG.tmp" "kernel-$PKG"
	fi
fi
if [ "$KERNEL" = cache-ext ]; then
	CE=$WORK/cache-ext
	VMLINUZ=$CE/bzImage
	CONFIG=$CE/config
	[ -f "$VMLINUZ" ] && [ -f "$CONFIG" ] || skip "no $CE/bzImage: build it with oracle/qemu/build-cache-ext.sh"
	MODDIR=
	KVER=6.6.8-cache-ext
	if [ "$POLICY" != none ]; then
		POLICY_BIN=$CE/policies/cache_ext_$POLICY.out
		[ -x "$POLICY_BIN" ] || skip "no $POLICY_BIN: build it with oracle/qemu/build-cache-ext-policies.sh"
	fi
else
	K=$WORK/kernel-$PKG
	# 6.12's .deb has /boot and /lib/modules; the split 7.N packages keep
	# vmlinuz and config beside the modules in /usr/lib/modules/VER (7.0's
	# linux-base still has /boot).
	MODDIR=$(ls -d "$K"/lib/modules/* "$K"/usr/lib/modules/* 2>/dev/null | head -1 || true)
	[ -n "$MODDIR" ] || skip "$PKG has no modules directory"
	KVER=$(basename "$MODDIR")
	VMLINUZ=$K/boot/vmlinuz-$KVER; [ -f "$VMLINUZ" ] || VMLINUZ=$MODDIR/vmlinuz
	CONFIG=$K/boot/config-$KVER; [ -f "$CONFIG" ] || CONFIG=$MODDIR/config
fi
[ -f "$VMLINUZ" ] && [ -f "$CONFIG" ] || skip "$PKG has no vmlinuz or config"
grep -q '^CONFIG_LRU_GEN=y' "$CONFIG" || skip "$PKG has no CONFIG_LRU_GEN"
grep -q '^CONFIG_MEMCG=y' "$CONFIG" || skip "$PKG has no CONFIG_MEMCG"

# The modules the guest needs (those not built in), dependencies first. The
# .deb has no modules.dep (depmod makes it at install time), so each module's
# dependencies are read from the "depends=" of its .modinfo section.
declare -A modpath=() seen=()
while IFS= read -r f; do
	b=$(basename "$f"); b=${b%%.ko*}; modpath[${b//-/_}]=$f
done < <([ -z "$MODDIR" ] || { cd "$MODDIR" && find kernel -name '*.ko*'; })
order=()
modcat() { case $1 in *.xz) xz -dc "$1" ;; *.zst) zstd -dc "$1" ;; *) cat "$1" ;; esac; }
add_mod() { # module name
	local m=${1//-/_} d deps
	[ -n "${seen[$m]:-}" ] && return
	seen[$m]=1
	[ -n "${modpath[$m]:-}" ] || skip "module $m not in $PKG"
	deps=$(modcat "$MODDIR/${modpath[$m]}" | tr '\0' '\n' | sed -n 's/^depends=//p' | head -1)
	for d in ${deps//,/ }; do add_mod "$d"; done
	order+=("${modpath[$m]}")
}
# ext4 asks the crypto API for "crc32c" by name (metadata_csum), not by
# symbol: the generic implementation is added by hand.
# virtio_pci is a module too on Debian's 6.1 (built in on 6.12).
# From 6.15 its module is crc32c-cryptoapi.
crc32c=crc32c_generic; [ -n "${modpath[crc32c_cryptoapi]:-}" ] && crc32c=crc32c_cryptoapi
for sym in VIRTIO_PCI:virtio_pci VIRTIO_BLK:virtio_blk CRYPTO_CRC32C:$crc32c EXT4_FS:ext4 ZRAM:zram; do
	opt=${sym%%:*}
	if grep -q "^CONFIG_$opt=m" "$CONFIG"; then
		add_mod "${sym#*:}"
	elif ! grep -q "^CONFIG_$opt=y" "$CONFIG"; then
		skip "$PKG has no CONFIG_$opt"
	fi
done
# zram's default compressor (lz4 on Debian) is a module of its own that zram
# uses by symbol only from 6.12's backends (zcomp), so add it by name too.
comp=$(sed -n 's/^CONFIG_ZRAM_DEF_COMP="\(.*\)"/\1/p' "$CONFIG")
for m in ${comp}_compress ${comp}_decompress; do [ -n "${modpath[$m]:-}" ] && add_mod $m; done

# ---- initramfs and data disk ----
rm -rf initramfs && mkdir -p initramfs/{bin,proc,sys,dev,mnt,tmp,lib/modules}
cp "$BUSYBOX" initramfs/bin/busybox
cp "$HERE/init-seed003" initramfs/init && chmod +x initramfs/init
gcc -O2 -Wall -static -pthread -o initramfs/mixpress "$HERE/mixpress.c" -lm
gcc -O2 -Wall -static -o initramfs/folioprobe "$HERE/folioprobe.c"
if [ -n "$FOLIOSIM" ]; then
	cp "$FOLIOSIM" initramfs/foliosim
	cp "$KB_SCENARIO" initramfs/kbuild.toml
	[ "$POLICY" = none ] || cp "$POLICY_BIN" initramfs/policy
	# The dynamic loader and libraries, at the paths the binary asks for.
	for lib in $(ldd "$FOLIOSIM" | grep -o '/[^ ]*'); do
		mkdir -p "initramfs$(dirname "$lib")" && cp -L "$lib" "initramfs$lib"
	done
fi
: > initramfs/modules.order
for m in "${order[@]}"; do
	b=$(basename "$m"); b=${b%.xz}; b=${b%.zst}
	modcat "$MODDIR/$m" > "initramfs/lib/modules/$b"
	echo "$b" >> initramfs/modules.order
done
(cd initramfs && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1) > initrd.gz

# Scale: seed 003's reproducer is 14G anon + 8G file in a 16G memcg; the
# guest runs it at 1/32 (448M + 256M in 512M). The swappiness mix is
# examples/swappiness-mix.toml at 1/2 (256M anon + 256M file in 384M).
FILE_MB=256
if [ ! -f "disk-$FILE_MB.img" ]; then
	rm -rf diskdir && mkdir diskdir
	head -c $((FILE_MB << 20)) /dev/urandom > diskdir/data.bin
	mkfs.ext4 -q -F -d diskdir "disk-$FILE_MB.img.tmp" $((FILE_MB + 64))M
	mv "disk-$FILE_MB.img.tmp" "disk-$FILE_MB.img"
	rm -rf diskdir
fi

# ddoom's scratch disk: an empty ext4 to write into, made fresh per boot.
scratch_img() {
	rm -f scratch.img
	mkfs.ext4 -q -F scratch.img $((DD_MB + 256))M
}

# TCG by default: the /dev/kvm of the VM this was written on accepts a guest
# but cannot run it (it fails on the first VEX instruction), so KVM is only
# used when asked for (FSIM_QEMU_ACCEL=kvm).
ACCEL=${FSIM_QEMU_ACCEL:-tcg}
CPU=max; [ $ACCEL = kvm ] && CPU=host
if [ $QUICK = 1 ]; then R=4; SECS=10; SWAPPINESS=35,175; else R=32; SECS=30; SWAPPINESS=35,70,105,140,175; fi
ROUNDS=${ROUNDS:-$R}

boot() { # exp lru args...
	local exp=$1 lru=$2; shift 2
	local log="$OUT/$exp-lru_$lru.log"
	[ "$exp" = aging ] && log="$OUT/$exp-t${THREADS}r${READERS}-lru_$lru.log"
	[ "$exp" = kbuild ] && [ "$POLICY" != none ] && log="$OUT/$exp-$POLICY-lru_$lru.log"
	[ "$exp" = swapmix ] && log="$OUT/$exp-anon${ANON_MB}-think${THINK/,/-}-lru_$lru.log"
	local extra=()
	if [ "$exp" = ddoom ]; then
		local iops=${DDIOPS:-0}
		log="$OUT/$exp-iops$iops-lru_$lru.log"
		scratch_img
		local thr=""; [ "$iops" -gt 0 ] && thr=",throttling.iops-write=$iops"
		extra=(-drive "file=$WORK/scratch.img,if=virtio,format=raw$thr")
	fi
	if [ "$exp" = kbuild ]; then
		# The scenario's files (292M for kernel-build.toml) and room.
		rm -f scratch.img
		mkfs.ext4 -q -F scratch.img ${SCRATCH_MB}M
		extra=(-drive "file=$WORK/scratch.img,if=virtio,format=raw")
	fi
	if [ "$exp" = folios ]; then
		scratch_img
		extra=(-drive "file=$WORK/scratch.img,if=virtio,format=raw")
	fi
	echo "run.sh: booting $KVER ($ACCEL) exp=$exp lru_gen=$lru" >&2
	nice -n 10 timeout "${FSIM_QEMU_TIMEOUT:-1500}" "$QEMU" -machine q35,accel=$ACCEL -cpu $CPU -smp "$SMP" -m 1024 \
		-kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
		-drive file="$WORK/disk-$FILE_MB.img",if=virtio,format=raw,readonly=on "${extra[@]}" \
		-append "console=ttyS0 quiet panic=-1 fsim_exp=$exp fsim_lru=$lru $*" \
		-nographic -no-reboot > "$log" 2>&1 || echo "run.sh: qemu exited with $? (see $log)" >&2
	local json=${log%.log}.json
	tr -d '\r' < "$log" | sed -n 's/^FSIM_JSON //p' > "$json"
	[ -s "$json" ] || echo "{\"exp\":\"$exp\",\"error\":\"no result, see $log\"}" > "$json"
}
for e in ${EXPS//,/ }; do
	for l in ${LRUS//,/ }; do
		case $e in
		aging) boot aging $l fsim_limit_mb=512 fsim_anon_mb=448 fsim_threads=$THREADS fsim_readers=$READERS \
			fsim_rounds=$ROUNDS fsim_wait_ms=1000 fsim_limit_s=$((ROUNDS * THREADS * 8 + 120)) ;;
		ddoom) for DDIOPS in ${IOPS//,/ }; do
			boot ddoom $l fsim_limit_mb=64 fsim_dd_mb=$DD_MB fsim_iops=$DDIOPS fsim_trace=${FSIM_QEMU_TRACE:-0}
		done ;;
		folios) boot folios $l fsim_ra_kb=8192 ;;
		# The MongoDB proxy (examples/seed003-mongodb-ycsb.toml) at half
		# its size, reads only: 72M cache + the 256M file in a 160M memcg.
		ycsb) boot ycsb $l fsim_limit_mb=160 fsim_anon_mb=72 fsim_threads=8 fsim_secs=$YCSB_SECS \
			fsim_read_kb=32 fsim_cpu_us=400 ;;
		# The oracle runs the scenario at each swappiness; its model side
		# runs too (the host's latencies as the oracle measures them).
		kbuild) boot kbuild $l fsim_swappiness=$KB_SWAPPINESS fsim_repeat=$KB_REPEAT fsim_trace=${FSIM_QEMU_TRACE:-0} \
			fsim_policy=$POLICY fsim_policy_cgroup=$POLICY_CGROUP fsim_policy_file=$POLICY_FILE ;;
		swapmix) boot swapmix $l fsim_limit_mb=384 fsim_anon_mb=$ANON_MB fsim_zram_mb=512 fsim_secs=$SECS \
			fsim_anon_think_us=${THINK%,*} fsim_file_think_us=${THINK#*,} fsim_swappiness=$SWAPPINESS ;;
		esac
	done
done
# summary.json: every result line, as one JSON array.
{
	printf '{"kernel_package":"%s","accel":"%s","scale":{"aging":"1/32 of seed 003 (448M anon + 256M file, 512M memcg)","swapmix":"1/2 of examples/swappiness-mix.toml (256M anon + 256M file, 384M memcg, zram 512M)","ddoom":"examples/seed003-dd-throttle-oom.toml: dd of '"$DD_MB"'M in 1M writes into a 64M memcg, cgroup v2","ycsb":"1/2 of examples/seed003-mongodb-ycsb.toml without its writes (72M anon + 256M file, 160M memcg, 8 threads, 32K preads, 400 us CPU each)","kbuild":"'"$(basename "$KB_SCENARIO")"' as written (its own scale), run by foliosim oracle run --repeat '"$KB_REPEAT"'"},"results":[' "$PKG" "$ACCEL"
	sep=
	for f in "$OUT"/*-lru_*.json; do
		while IFS= read -r line; do printf '%s%s' "$sep" "$line"; sep=,; done < "$f"
	done
	printf ']}\n'
} > "$OUT/summary.json"
echo "run.sh: results in $OUT/summary.json" >&2
