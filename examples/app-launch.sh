#!/usr/bin/env bash
# VMA-based swap readahead: VMA (virtual address) vs cluster (swap offset) readahead on an
# application-launch style mix: one process touches its memory sequentially,
# another in shuffled blocks, both under memory pressure, then both read
# everything back in address order. Records with the kernel's VMA readahead,
# replays every policy, and draws the charts.
#   sudo examples/app-launch.sh [OUTDIR]
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-app-launch}
mkdir -p "$OUT"
swap_on 1G
cgroup_make $((128 << 20))
echo true > /sys/kernel/mm/swap/vma_ra_enabled
"$SWAPTRACE" record --cgroup "$CG" -o "$OUT/app-launch.swt" -- sh -c "
	$SWAPTRACE workload --size 128M --pattern seq --seed 1 &
	$SWAPTRACE workload --size 128M --pattern shuffled-blocks:16 --seed 2
	wait"
"$SWAPTRACE" replay "$OUT/app-launch.swt"
"$SWAPTRACE" hist "$OUT/app-launch.swt" --metric ra-window --policy cluster,vma,leap
"$SWAPTRACE" plot "$OUT/app-launch.swt" -o "$OUT"
