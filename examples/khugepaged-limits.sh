#!/usr/bin/env bash
# khugepaged's `max_ptes_swap`, live and replayed. 256 MiB written, paged
# out, marked MADV_HUGEPAGE and read back skipping one page in 20 in even
# 2 MiB blocks and one in 5 in odd ones (about 25 and 102 swapped-out PTEs
# per PMD), beside a competing allocator in a 384 MiB cgroup (pressure).
# Each run is recorded at one limit (0, 64, 511 in turn, RUNS times), then
# every trace is replayed with the kernel's rule (referenced-half) at every
# limit (`--param max-ptes-swap=N`): the prediction of a limit from the
# other limits' traces against its live runs.
#   sudo examples/khugepaged-limits.sh [OUTDIR] [RUNS] [SECONDS]
# LIMITS="0 64 511" and SKIP=20,5 change the limits and the skips; RUNS 0
# scores the traces OUTDIR holds; FIRST=N numbers the runs from N (to add
# runs to an OUTDIR).
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 > /dev/null || { echo "$0: needs python3 for the table" >&2; exit 1; }
OUT=${1:-khugepaged-limits}
RUNS=${2:-3}
WAIT=${3:-15}
LIMITS=${LIMITS:-0 64 511}
SKIP=${SKIP:-20,5}
mkdir -p "$OUT"
K=/sys/kernel/mm/transparent_hugepage
khugepaged_fast
swap_on 1G
cgroup_make $((384 << 20))
for r in $(seq $((${FIRST:-1})) $((${FIRST:-1} + RUNS - 1))); do
	for n in $LIMITS; do
		knob_set $K/khugepaged/max_ptes_swap "$n"
		echo "== max_ptes_swap $n, run $r"
		"$SWAPTRACE" record -o "$OUT/limit$n-$r.swt" -- bash -c "
			echo \$\$ > $CG/cgroup.procs
			$SWAPTRACE workload --size 256M --pattern seq --pageout --thp --skip-every $SKIP --hold-after > $WORK/hold.out &
			until grep -q holding $WORK/hold.out 2>/dev/null; do sleep 0.1; done
			$SWAPTRACE workload --size 224M --pattern random --passes 1000 --seed 3 &
			sleep $WAIT
			kill \$(jobs -p) 2>/dev/null; wait" > "$WORK/rec.out"
	done
done
SWAPTRACE="$SWAPTRACE" python3 - "$OUT" <<'PY'
import glob, json, os, re, statistics, subprocess, sys
out, exe = sys.argv[1], os.environ["SWAPTRACE"]
runs = {}
for f in sorted(glob.glob(f"{out}/limit*-*.swt")):
    runs.setdefault(int(re.match(r"limit(\d+)-", os.path.basename(f)).group(1)), []).append(f)
limits = sorted(runs)
live, pred = {}, {}
for n, files in runs.items():
    for f in files:
        for m in limits:
            # The kernel's rule (referenced-half) at limit m.
            j = json.loads(subprocess.run([exe, "replay", f, "--family", "khugepaged", "--json",
                                           "--policy", "referenced-half", "--param", f"max-ptes-swap={m}"],
                                          check=True, capture_output=True).stdout)
            p = j["policies"][0]
            if m == n:
                k = j["live"]["kernel"]
                live.setdefault(n, []).append(
                    (k["swapins"], k["swapin_pmds"], k["swapin_pages"], k["collapses_succeeded"]))
            else:
                pred.setdefault(m, []).append((p["swapins"], p["swapin_pmds"], p["pages_in"], p["collapses"]))
mean = lambda rows: [statistics.mean(r[i] for r in rows) for i in range(4)]
pct = lambda p, l: "=" if p == l else (f"{100 * (p - l) / l:+.1f}%" if l else "n/a")
print("\nswap-in calls / PMDs swapped in / pages swapped in / collapses")
print("| max_ptes_swap | live runs | live mean | predicted from the other limits' traces, mean |")
print("| --- | --- | --- | --- |")
for n in limits:
    lm, pm = mean(live[n]), mean(pred.get(n, live[n]))
    runs_s = "; ".join(" / ".join(f"{v:,}" for v in r) for r in live[n])
    print(f"| {n} | {runs_s} | " + " / ".join(f"{v:,.0f}" for v in lm) + " | "
          + " / ".join(f"{p:,.0f} ({pct(p, l)})" for p, l in zip(pm, lm)) + " |")
PY
