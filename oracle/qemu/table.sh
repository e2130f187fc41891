#!/usr/bin/env bash
# Markdown rows of docs/fidelity/mglru-seed003.md from result lines: the
# guest's (run.sh's DIR/*.json) and the model's (model.sh's output), both one
# JSON object per line.
#
#   oracle/qemu/table.sh aging|swapmix|kbuild FILE...
#
# kbuild's lines carry the oracle's report: each cell is the real run's
# median, then the oracle's model side (the guest's release preset and
# latencies) after a slash.
set -euo pipefail
command -v jq >/dev/null || { echo "table.sh: needs jq" >&2; exit 2; }
exp=${1:-}
shift || true
[ $# -gt 0 ] || { echo "usage: table.sh aging|swapmix|kbuild FILE..." >&2; exit 2; }
# Who ran it: the guest's kernel with its lru_gen mask, or the model's cell.
who='if .model then "model \(.kernel) \(.lru)" else "guest \(.kernel | sub("\\+deb1[23]-amd64"; "")) \(if .lru_gen == "0x0000" then "classic" else "mglru" end)" end'
case $exp in
aging)
	echo "| run | threads x readers | rounds done | pressure OOM-killed | readers OOM-killed | oom_kill | workingset_refault_file | pgsteal (file) | workingset_nodereclaim |"
	echo "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
	cat "$@" | jq -r "select(.exp == \"aging\") | \"| \($who) | \(.threads // \"-\") x \(.readers // \"-\") | \(.run.rounds_done)/\(.run.rounds) | \(.run.pressure_oom_killed) | \(.run.readers_oom_killed) | \(.events.oom_kill // .memory_stat.oom_kill) | \(.memory_stat.workingset_refault_file) | \(.memory_stat.pgsteal // .memory_stat.pgsteal_file) | \(.memory_stat.workingset_nodereclaim // \"-\") |\""
	;;
swapmix)
	echo "| run | anon MiB | think (anon, file us) | swappiness | pswpout | pswpin | workingset_refault_anon | workingset_refault_file | pgsteal | workingset_nodereclaim |"
	echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	cat "$@" | jq -r "select(.exp == \"swapmix\") | \"| \($who) | \(.anon_mb // 256) | \(if .model then .think_us // \"20,50\" else \"\(.anon_think_us // 20),\(.file_think_us // 50)\" end) | \(.swappiness) | \(.vmstat_delta.pswpout // .memory_stat.pswpout) | \(.vmstat_delta.pswpin // .memory_stat.pswpin) | \(.memory_stat.workingset_refault_anon) | \(.memory_stat.workingset_refault_file) | \(.memory_stat.pgsteal // (.memory_stat.pgsteal_anon + .memory_stat.pgsteal_file)) | \(.memory_stat.workingset_nodereclaim // \"-\") |\""
	;;
kbuild)
	echo "| run | swappiness | pswpout | pswpin | pgpgin | pgpgout | workingset_refault_file | workingset_refault_anon | oom_kill | elapsed s |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	cell='(.[$k] // {}) | "\(.real_median // "-" | if type == "number" then round else . end) / \(.model // "-" | if type == "number" then round else . end)"'
	cat "$@" | jq -r "select(.exp == \"kbuild\") | (.oracle.case.outcome.rows // [] | map({(.counter): .}) | add // {}) as \$r | \"| \($who) | \(.swappiness) | \([\"vmstat.pswpout\", \"vmstat.pswpin\", \"vmstat.pgpgin\", \"vmstat.pgpgout\", \"workingset_refault_file\", \"workingset_refault_anon\", \"oom_kill\", \"elapsed_s\"] | map(. as \$k | \$r | $cell) | join(\" | \")) |\""
	;;
*) echo "usage: table.sh aging|swapmix|kbuild FILE..." >&2; exit 2 ;;
esac
