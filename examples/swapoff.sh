#!/usr/bin/env bash
# The 5.8 swapoff readahead-statistics fix: swapoff and the swap cache's readahead statistics. A process
# writes 256 MiB in shuffled 16-page blocks in a 64 MiB memory cgroup (so
# most of it goes to swap) and holds it; the limit is lifted and swapoff is
# timed. All of it is recorded, so the replay rebuilds the swap space and
# walks it as try_to_unuse() does, with the 5.8 fix (hits during swapoff
# feed the readahead window) and without. Exact probes (see `swaptrace
# doctor`) also give the live windows; with tracepoints only, the pages
# swapoff read are counted.
#   sudo examples/swapoff.sh [OUTDIR]
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-swapoff}
mkdir -p "$OUT"
swap_on 1G 1
cgroup_make $((64 << 20))
"$SWAPTRACE" record -o "$OUT/swapoff.swt" -- bash -c "
	set -e
	bash -c 'echo 0 > $CG/cgroup.procs; exec $SWAPTRACE workload --size 256M --pattern shuffled-blocks:16 --hold' > $WORK/hold.out &
	until grep -q holding $WORK/hold.out 2>/dev/null; do sleep 0.2; done
	echo -1 > $CG/memory.limit_in_bytes
	t0=\$(date +%s.%N)
	swapoff $SWAPDEV
	echo \"swapoff took \$(echo \"\$(date +%s.%N) - \$t0\" | bc) s\"
	kill -TERM %1; wait || true"
SWAPDEV=""
"$SWAPTRACE" info "$OUT/swapoff.swt" | sed -n '/^swap-ins/,/^lost/p;/^VMSTAT/,$p'
"$SWAPTRACE" hist "$OUT/swapoff.swt" --metric ra-window --during swapoff \
	|| echo "(no live readahead windows: this kernel allows tracepoints only; see swaptrace doctor)"
"$SWAPTRACE" replay "$OUT/swapoff.swt"
"$SWAPTRACE" hist "$OUT/swapoff.swt" --metric ra-window --during swapoff \
	--policy cluster,cluster-swapoff-fix,cluster-no-swapoff-fix
"$SWAPTRACE" plot "$OUT/swapoff.swt" -o "$OUT" --policy cluster,cluster-swapoff-fix,cluster-no-swapoff-fix
