#!/usr/bin/env bash
# Seed 000: swapoff with the swap cache's readahead statistics. A process
# writes 256 MiB in a 64 MiB memory cgroup (so most of it goes to swap) and
# holds it; the limit is lifted and swapoff is timed and recorded. On kernels with exact probes (see `swaptrace doctor`) the
# readahead windows of swapoff print argdist-style; with tracepoints only,
# the pages swapoff read are counted.
#   sudo examples/swapoff.sh [OUTDIR]
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-swapoff}
mkdir -p "$OUT"
swap_on 1G 1
cgroup_make $((64 << 20))
sh -c "echo 0 > $CG/cgroup.procs; exec $SWAPTRACE workload --size 256M --pattern shuffled-blocks:16 --hold" > "$WORK/hold.out" &
HOLDER=$!
until grep -q holding "$WORK/hold.out" 2>/dev/null; do sleep 0.2; done
echo -1 > "$CG/memory.limit_in_bytes"
"$SWAPTRACE" record -o "$OUT/swapoff.swt" -- swapoff "$SWAPDEV"
SWAPDEV=""
kill -TERM $HOLDER; wait $HOLDER || true
"$SWAPTRACE" info "$OUT/swapoff.swt" | sed -n '/^swap-ins/,/^lost/p;/^VMSTAT/,$p'
"$SWAPTRACE" hist "$OUT/swapoff.swt" --metric ra-window --during swapoff \
	|| echo "(no readahead windows: this kernel allows tracepoints only; see swaptrace doctor)"
