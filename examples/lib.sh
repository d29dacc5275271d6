# Shared by the example scripts: a temporary swap device and memory cgroup,
# both removed on exit (also on failure or Ctrl-C). Needs root.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SWAPTRACE=${SWAPTRACE:-$ROOT/target/release/swaptrace}
WORK=$(mktemp -d /var/tmp/swaptrace-example.XXXXXX)
LOOP=""
SWAPDEV=""
LOOPS=()
CG=""
VMA_OLD=$(cat /sys/kernel/mm/swap/vma_ra_enabled)
KNOBS=()

cleanup() {
	set +e
	for l in "${LOOPS[@]}"; do
		grep -q "^$l " /proc/swaps && swapoff "$l" 2>/dev/null
		losetup -d "$l" 2>/dev/null
	done
	if [ -n "$CG" ] && [ -d "$CG" ]; then
		for p in $(cat "$CG/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/memory/cgroup.procs; done
		rmdir "$CG"
	fi
	echo "$VMA_OLD" > /sys/kernel/mm/swap/vma_ra_enabled
	for k in "${KNOBS[@]}"; do echo "${k#*=}" > "${k%%=*}"; done
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
}

# swap_on SIZE [rotational [priority]]: swap on a new loop device
# (non-rotational by default, so the kernel may use VMA readahead), in
# $LOOP and $SWAPDEV; all are removed on exit.
swap_on() {
	local f="$WORK/swap${#LOOPS[@]}"
	fallocate -l "$1" "$f"
	chmod 600 "$f"
	LOOP=$(losetup -f --show "$f")
	LOOPS+=("$LOOP")
	echo "${2:-0}" > "/sys/block/${LOOP#/dev/}/queue/rotational"
	mkswap "$LOOP" > /dev/null
	swapon ${3:+-p "$3"} "$LOOP"
	SWAPDEV=$LOOP
}

# knob_set PATH VALUE: write a sysfs knob, restored on exit.
knob_set() {
	local old
	old=$(cat "$1")
	# "always [madvise] never" is written back as "madvise".
	[[ $old =~ \[([^]]*)\] ]] && old=${BASH_REMATCH[1]}
	KNOBS+=("$1=$old")
	echo "$2" > "$1"
}

# cgroup_make BYTES: a memory cgroup (v1) with that limit, in $CG.
cgroup_make() {
	CG=/sys/fs/cgroup/memory/swaptrace-example-$$
	mkdir "$CG"
	echo "$1" > "$CG/memory.limit_in_bytes"
}
