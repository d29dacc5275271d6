# Shared by the example scripts: a temporary swap device, a memory cgroup and
# knob changes, all undone on exit (also on failure or Ctrl-C). Needs root.
# Every change goes through `swaptrace lab`, which journals it (with a knob's
# old value) under /run/swaptrace for this shell ($$) before making it: if
# the script is killed, even with SIGKILL, the next `swaptrace lab restore`
# or live swaptrace command (record, demo, top) undoes it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SWAPTRACE=${SWAPTRACE:-$ROOT/target/release/swaptrace}
WORK=$(mktemp -d /var/tmp/swaptrace-example.XXXXXX)
LOOP=""
SWAPDEV=""
CG=""

cleanup() {
	set +e
	# Kills what still runs in the cgroup, swapoff, detaches, rmdir, and
	# writes every knob back, newest first.
	[ -x "$SWAPTRACE" ] && "$SWAPTRACE" lab restore --owner $$ > /dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "$0: needs root (swap, cgroups and eBPF)" >&2
		exit 1
	fi
	if [ ! -x "$SWAPTRACE" ]; then
		(cd "$ROOT" && cargo build --release -p swaptrace)
	fi
	# The scripts flip vma_ra_enabled: journal its value now.
	knob_set /sys/kernel/mm/swap/vma_ra_enabled "$(cat /sys/kernel/mm/swap/vma_ra_enabled)"
}

# swap_on SIZE [rotational [priority]]: swap on a new loop device
# (non-rotational by default, so the kernel may use VMA readahead), in
# $LOOP and $SWAPDEV; all are removed on exit.
swap_on() {
	LOOP=$("$SWAPTRACE" lab swap "$1" --rotational "${2:-0}" ${3:+--prio "$3"} --owner $$)
	SWAPDEV=$LOOP
}

# knob_set PATH VALUE: write a sysfs knob, restored on exit.
knob_set() {
	"$SWAPTRACE" lab knob "$1" "$2" --owner $$
}

# khugepaged_fast: THP on madvise, khugepaged scanning every 100 ms,
# 16384 pages a pass (all restored on exit).
khugepaged_fast() {
	local k=/sys/kernel/mm/transparent_hugepage
	knob_set $k/enabled madvise
	knob_set $k/khugepaged/scan_sleep_millisecs 100
	knob_set $k/khugepaged/alloc_sleep_millisecs 100
	knob_set $k/khugepaged/pages_to_scan 16384
}

# cgroup_make BYTES: a memory cgroup (v1) with that limit, in $CG.
cgroup_make() {
	CG=$("$SWAPTRACE" lab cgroup "$1" --owner $$)
}
