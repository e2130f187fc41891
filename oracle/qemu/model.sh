#!/usr/bin/env bash
# The model's side of oracle/qemu/run.sh: the same two experiments at the
# guest's scale (model-aging.toml, model-swapmix.toml) through foliosim, on
# the kernel the guest runs (Debian's 6.12: before seeds 000, 003 and 004
# and the rest of seed 004's series, with 6.1-7.0's shadow-node sizing, so
# pf-set-active, wsprot-legacy, reclaim-legacy, feedback-legacy,
# shadow-vmstat: the --kernel 6.12 preset) and, for MGLRU, with seed
# 003's series applied (reclaim-rework, and without the isolate_folios
# fallback fix of the swappiness dispute) on 6.14's feedback rework, which
# that series builds on. One JSON object per line on stdout.
#
#   oracle/qemu/model.sh [FOLIOSIM] [SWAPPINESS,...] [ANON_US,FILE_US] [ANON_MB]
#
# The third argument replaces the swappiness mix's think times (20us, 50us,
# the model's own): TCG runs the guest's workers far slower, so the model
# can also be run at the access rates the guest reached. The fourth is
# run.sh's --anon-mb. FSIM_MODEL_EXPS=swapmix (or aging) runs one of the two;
# FSIM_MODEL_AGING=THREADS,READERS,ROUNDS (4,4,32) is run.sh's --threads,
# --readers and --rounds.
#
# FSIM_MODEL_EXPS=ddoom,ycsb runs section 4's released-kernel experiments
# with the --kernel presets (6.12, 7.0, 7.2; ext4's large folios from 6.16):
# ddoom (examples/seed003-dd-throttle-oom.toml at 512M on a 1G machine, on
# virtio and with writes of FSIM_MODEL_DD_LAT, "10ms,100ms") and ycsb
# (model-ycsb.toml with FSIM_MODEL_YCSB_CPU_US of CPU an operation, 3000:
# the guest's rate).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${1:-target/release/foliosim}
SWAPPINESS=${2:-35,70,105,140,175}
THINK=${3:-20,50}
ANON_MB=${4:-256}
EXPS=${FSIM_MODEL_EXPS:-aging,swapmix}
AGING=${FSIM_MODEL_AGING:-4,4,32}
[[ $AGING =~ ^[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*$ ]] || { echo "model.sh: FSIM_MODEL_AGING: '$AGING' is not THREADS,READERS,ROUNDS" >&2; exit 2; }
IFS=, read -r A_THREADS A_READERS A_ROUNDS <<< "$AGING"
[[ $ANON_MB =~ ^[0-9]+$ ]] || { echo "model.sh: ANON_MB: '$ANON_MB' is not a number" >&2; exit 2; }
[[ $THINK =~ ^[0-9]+,[0-9]+$ ]] || { echo "model.sh: think times: '$THINK' is not ANON_US,FILE_US" >&2; exit 2; }
command -v jq >/dev/null || { echo "model.sh: needs jq" >&2; exit 2; }
[ -x "$BIN" ] || { echo "model.sh: $BIN: no foliosim binary (cargo build --release -p foliosim-cli)" >&2; exit 2; }
K612=pf-set-active,wsprot-legacy,reclaim-legacy,feedback-legacy,shadow-vmstat
# lru, variant label, --variant value
CELLS="classic 6.12 $K612
mglru 6.12 $K612
mglru 6.12+seed003 $K612,feedback-rework,reclaim-rework
mglru 6.12+seed003-nofix $K612,feedback-rework,reclaim-rework,no-isolate-fallback-fix"
# The pressure process's touches per round: its threads' shares of 448M.
ROUND_PAGES=$(((448 / A_THREADS) * A_THREADS << 8))
tmp=$(mktemp)
swapmix=$(mktemp --suffix=.toml)
aging=$(mktemp --suffix=.toml)
trap 'rm -f "$tmp" "$swapmix" "$aging"' EXIT
# The readers' count comes first in the file, the pressure threads' second.
awk -v r=$A_READERS -v t=$A_THREADS -v n=$A_ROUNDS -v mb=$((448 / A_THREADS)) '
	/^count = 4$/ { print "count = " (++c == 1 ? r : t); next }
	/op = "loop", count = 32,/ { sub(/count = 32/, "count = " n) }
	/op = "mmap_anon", map = "share", size = "112M"/ { sub(/"112M"/, "\"" mb "M\"") }
	{ print }' "$HERE/model-aging.toml" > "$aging"
sed -e "/op = \"touch\", map = \"heap\", pattern = \"zipf/s/think = \"[0-9]*us\"/think = \"${THINK%,*}us\"/" \
    -e "/op = \"read\", file = \"table\", bs = \"4k\"/s/think = \"[0-9]*us\"/think = \"${THINK#*,}us\"/" \
    -e "s/op = \"mmap_anon\", map = \"heap\", size = \"256M\"/op = \"mmap_anon\", map = \"heap\", size = \"${ANON_MB}M\"/" \
    "$HERE/model-swapmix.toml" > "$swapmix"
while read -r lru label var; do
	[[ ,$EXPS, == *,aging,* ]] && { nice "$BIN" run "$aging" --lru "$lru" --variant "$var" --json > "$tmp"
	jq -c --arg lru "$lru" --arg kern "$label" --argjson rp $ROUND_PAGES --argjson t $A_THREADS --argjson r $A_READERS --argjson n $A_ROUNDS '
		(.processes | map(select(.name | startswith("pressure"))) | .[0]) as $p
		| {exp: "aging", model: true, lru: $lru, kernel: $kern, threads: $t, readers: $r,
		   run: {rounds: $n, rounds_done: (($p.touches / $rp) | floor), pressure_oom_killed: $p.oom_killed,
		         readers_oom_killed: ([.processes[] | select((.name | startswith("reader")) and .oom_killed)] | length)},
		   memory_stat: (.cgroups.demo | {oom_kill, pgscan_anon, pgscan_file, pgsteal_anon, pgsteal_file, workingset_refault_file, workingset_activate_file, workingset_nodereclaim, pgmajfault})}' "$tmp"; }
	[[ ,$EXPS, == *,swapmix,* ]] || continue
	for s in ${SWAPPINESS//,/ }; do
		nice "$BIN" run "$swapmix" --lru "$lru" --variant "$var" --sysctl vm.swappiness=$s --json > "$tmp"
		jq -c --arg lru "$lru" --arg kern "$label" --argjson s $s --arg think "$THINK" --argjson anon $ANON_MB '
			{exp: "swapmix", model: true, lru: $lru, kernel: $kern, swappiness: $s, think_us: $think, anon_mb: $anon,
			 memory_stat: (.cgroups.mix | {oom_kill, pswpin, pswpout, pgscan_anon, pgscan_file, pgsteal_anon, pgsteal_file,
			                                workingset_refault_anon, workingset_refault_file, workingset_nodereclaim})}' "$tmp"
	done
done <<< "$CELLS"

# Section 4: the released kernels' presets.
DD_LAT=${FSIM_MODEL_DD_LAT:-10ms,100ms}
YCSB_CPU=${FSIM_MODEL_YCSB_CPU_US:-3000}
[[ $YCSB_CPU =~ ^[0-9]+$ ]] || { echo "model.sh: FSIM_MODEL_YCSB_CPU_US: '$YCSB_CPU' is not a number" >&2; exit 2; }
[[ $DD_LAT =~ ^[0-9]+(us|ms)(,[0-9]+(us|ms))*$ ]] || { echo "model.sh: FSIM_MODEL_DD_LAT: '$DD_LAT' is not DUR[,DUR...] (us or ms)" >&2; exit 2; }
if [[ ,$EXPS, == *,ddoom,* ]]; then
	dd=$(mktemp --suffix=.toml)
	sed 's/size = "1G"/size = "512M"/' "$HERE/../../examples/seed003-dd-throttle-oom.toml" > "$dd"
	for k in 6.12 7.0 7.2; do for lru in mglru classic; do for dev in virtio ${DD_LAT//,/ }; do
		[ "$dev" = virtio ] || dev=virtio:latency=$dev
		nice "$BIN" run "$dd" --memory 1G --kernel $k --lru $lru --device $dev --json > "$tmp"
		jq -c --arg k $k --arg lru $lru --arg dev $dev '
			{exp: "ddoom", model: true, kernel: $k, lru: $lru, device: $dev,
			 dd_oom_killed: (.processes[0].oom_killed),
			 memory_stat: (.cgroups.dd | {max, oom_kill, pgsteal_file, pgrefill})}' "$tmp"
	done; done; done
	rm -f "$dd"
fi
if [[ ,$EXPS, == *,ycsb,* ]]; then
	y=$(mktemp --suffix=.toml)
	sed "s/time = \"400us\"/time = \"${YCSB_CPU}us\"/" "$HERE/model-ycsb.toml" > "$y"
	for k in 7.0 7.2; do for lru in mglru classic; do
		nice "$BIN" run "$y" --kernel $k --lru $lru --json > "$tmp"
		jq -c --arg k $k --arg lru $lru --argjson cpu $YCSB_CPU '
			([.processes[] | .ios] | add) as $ops
			| {exp: "ycsb", model: true, kernel: $k, lru: $lru, cpu_us: $cpu, ops: $ops,
			   refault_file_per_op: (.cgroups.mongo.workingset_refault_file / $ops),
			   pgpgin_kib_per_op: (.cgroups.mongo.pgpgin / $ops),
			   memory_stat: (.cgroups.mongo | {pgpgin, workingset_refault_file, pgsteal_file, pgactivate, pgrefill})}' "$tmp"
	done; done
	rm -f "$y"
fi
