#!/usr/bin/env bash
# khugepaged allocstall gating (4.7, reverted in 4.8): khugepaged swapping
# pages in to collapse huge pages. The thread's
# test scaled to a memory cgroup: write 256 MiB, push it all to swap, mark it
# MADV_HUGEPAGE, touch it skipping one page in every 20, and hold it while
# khugepaged (scanning sped up, restored after) collapses it, swapping the
# skipped pages in. Run twice: alone, and beside a competing allocator in the
# same cgroup that writes 160 MiB, reads it and exits, over and over, so
# that memcg reclaim falls between khugepaged's scans. Each run is recorded,
# its footprint (smaps_rollup) sampled, and replayed through the swap-in
# gating policies.
#   sudo examples/khugepaged.sh [OUTDIR] [SECONDS]
# MAX_PTES_SWAP=N sets khugepaged/max_ptes_swap for the runs (restored after).
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-khugepaged}
WAIT=${2:-15}
mkdir -p "$OUT"
K=/sys/kernel/mm/transparent_hugepage
khugepaged_fast
[ -n "${MAX_PTES_SWAP:-}" ] && knob_set $K/khugepaged/max_ptes_swap "$MAX_PTES_SWAP"
swap_on 1G
cgroup_make $((384 << 20))
for run in calm pressure; do
	compete=""
	[ $run = pressure ] && compete="while :; do $SWAPTRACE workload --size 160M --pattern seq > /dev/null; done &"
	"$SWAPTRACE" record -o "$OUT/$run.swt" -- bash -c "
		echo \$\$ > $CG/cgroup.procs
		$SWAPTRACE workload --size 256M --pattern seq --pageout --thp --skip-every 20 --hold-after > $WORK/hold.out &
		until grep -q holding $WORK/hold.out 2>/dev/null; do sleep 0.1; done
		$compete
		sleep $WAIT
		kill \$(jobs -p) 2>/dev/null; pkill -P \$\$ 2>/dev/null; wait" > "$WORK/$run.rec"
	echo "== $run"
	"$SWAPTRACE" replay "$OUT/$run.swt" --family khugepaged
done
