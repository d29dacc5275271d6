#!/usr/bin/env bash
# A/B for a patch description: the same deterministic workload recorded
# twice with swap on a non-rotational loop device, with VMA readahead
# (vma_ra_enabled=true) and without (cluster readahead), then `compare`:
# counters with the change in %, window tables, latencies, and A/B charts.
#   sudo examples/compare.sh [OUTDIR]
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-compare}
mkdir -p "$OUT"
swap_on 1G
cgroup_make $((128 << 20))
for ra in true false; do
	echo $ra > /sys/kernel/mm/swap/vma_ra_enabled
	"$SWAPTRACE" record --cgroup "$CG" -o "$OUT/vma-$ra.swt" -- \
		"$SWAPTRACE" workload --size 256M --pattern shuffled-blocks:2 --seed 3 > /dev/null
done
"$SWAPTRACE" compare "$OUT/vma-true.swt" "$OUT/vma-false.swt" --label A=vma,B=cluster --plot "$OUT"
