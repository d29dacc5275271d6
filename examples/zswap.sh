#!/usr/bin/env bash
# zswap second chance and disk-swapin tracking (6.12): zswap in front of a swap device, with its shrinker. In a memory
# cgroup, a cold data set is written first and held, then a build-like job
# sweeps its working set several times, so the cold pages age into zswap
# and are written back while the working set cycles through zswap. zswap
# (and its shrinker) are switched on for the run and restored after. The
# trace is replayed through the zswap pool policies; zswap.png shows pool
# size and disk swap-ins over time per policy.
#   sudo examples/zswap.sh [OUTDIR]
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-zswap}
mkdir -p "$OUT"
knob_set /sys/module/zswap/parameters/enabled Y
knob_set /sys/module/zswap/parameters/shrinker_enabled Y
swap_on 1G
cgroup_make $((160 << 20))
"$SWAPTRACE" record --cgroup "$CG" -o "$OUT/zswap.swt" -- bash -c "
	$SWAPTRACE workload --size 96M --pattern random --seed 7 --fill 3 --hold > $WORK/cold.out &
	until grep -q holding $WORK/cold.out 2>/dev/null; do sleep 0.2; done
	$SWAPTRACE workload --size 160M --pattern shuffled-blocks:16 --passes 4 --seed 8 --fill 3
	kill -TERM %1; wait"
"$SWAPTRACE" info "$OUT/zswap.swt" | sed -n '/^against/,/^$/p'
"$SWAPTRACE" replay "$OUT/zswap.swt" --family zswap
"$SWAPTRACE" plot "$OUT/zswap.swt" -o "$OUT" --family zswap
