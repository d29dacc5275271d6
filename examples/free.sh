#!/usr/bin/env bash
# Sorted swap-entry freeing (4.12): freeing swap entries at exit. A process writes 384 MiB in
# shuffled 16-page blocks in a 64 MiB memory cgroup, with swap on two loop
# devices of equal priority (so its entries interleave between them), holds
# it, and is killed; the exit (the thread's "memory freeing time") is timed
# and recorded. With exact probes (see `swaptrace doctor`) the trace has
# every swapcache_free_entries() batch: its latency, and the batch-free
# policies replayed on its entries. With tracepoints only it has the zap
# batches of exit_mmap() (MM_SWAPENTS drops, a PTE table at a time).
#   sudo examples/free.sh [OUTDIR]
. "$(dirname "$0")/lib.sh"
need_root
OUT=${1:-free}
mkdir -p "$OUT"
swap_on 512M 0 5
swap_on 512M 0 5
cgroup_make $((64 << 20))
bash -c "echo 0 > $CG/cgroup.procs; exec $SWAPTRACE workload --size 384M --pattern shuffled-blocks:16 --hold" > "$WORK/hold.out" &
HOLDER=$!
until grep -q holding "$WORK/hold.out" 2>/dev/null; do sleep 0.2; done
grep -E '^/' /proc/swaps
"$SWAPTRACE" record -o "$OUT/free.swt" --pid $HOLDER --duration 30s > "$WORK/record.out" &
REC=$!
sleep 2
t0=$(date +%s.%N)
kill -KILL $HOLDER
wait $HOLDER 2>/dev/null || true
echo "exit (memory freeing) took $(echo "$(date +%s.%N) - $t0" | bc) s"
kill -INT $REC
wait $REC || true
"$SWAPTRACE" hist "$OUT/free.swt" --metric free-latency 2>/dev/null \
	|| "$SWAPTRACE" hist "$OUT/free.swt" --metric zap-interval
"$SWAPTRACE" replay "$OUT/free.swt" --family free || true
