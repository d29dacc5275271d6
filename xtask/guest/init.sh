#!/bin/sh
# /init of the guest-test initramfs (busybox sh). Runs the scenarios, each into
# /out/<scenario>/, then writes /out as a tar onto /dev/vdc and powers off.
# Never exits early: every failure is recorded and the script goes on.
set +e
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
[ -c /dev/console ] && exec </dev/console >/dev/console 2>&1
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /tmp /out
mount -t tmpfs tmpfs /tmp

log() { echo "[guest] $*"; }
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }'; }

# Parameters from the host (kernel command line): workload size, memcg limit.
SIZE=400M
MEMCG=256M
for a in $(cat /proc/cmdline); do
	case $a in
	st.size=*) SIZE=${a#st.size=} ;;
	st.memcg=*) MEMCG=${a#st.memcg=} ;;
	esac
done

log "init: kernel $(uname -r), up $(now) s, workload $SIZE in a $MEMCG memory cgroup"
uname -r > /out/uname
cat /proc/cmdline > /out/cmdline

# Modules, in dependency order (built-in ones were left out by the host).
while read -r m; do
	[ -n "$m" ] || continue
	insmod "/lib/modules/$m" || log "insmod $m failed"
done < /etc/modules

for d in vda vdb vdc; do
	i=0
	while [ ! -b /dev/$d ] && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
	[ -b /dev/$d ] || log "no /dev/$d after 30 s"
done
# The disks stay rotational: cluster readahead is what the seeds measure.
for d in vda vdb; do
	echo "$d rotational=$(cat /sys/block/$d/queue/rotational 2>/dev/null)"
done > /out/disks

grep -E ' (last_readahead_pages|swapin_readahead_hits|swapcache_free_entries|swap_entries_free|__swap_cluster_free_entries|swap_update_readahead|zswap_writeback_entry|zswap_folio_swapin|shrink_memcg_cb)' /proc/kallsyms > /out/kallsyms.txt
cat /proc/meminfo > /out/meminfo

# Workloads run in a memory cgroup (v2) so that most of SIZE goes to swap;
# the recorder stays outside it. in_cg CMD... runs CMD in the cgroup.
CG=/sys/fs/cgroup/w
mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p $CG
printf '#!/bin/sh\necho $$ > %s/cgroup.procs || exit 97\nexec "$@"\n' $CG > /bin/in_cg
chmod 755 /bin/in_cg
memcg_limit() { echo "$1" > $CG/memory.max || log "cannot set memory.max to $1"; }
memcg_limit "$MEMCG"

# Features that colleagues are adding; fall back while they are missing.
if swaptrace workload --help 2>/dev/null | grep -q -- --hold; then
	HOLD=--hold
else
	HOLD=
	log "swaptrace workload has no --hold: swapoff/free fall back to a plain seq workload"
fi
if swaptrace record --help 2>/dev/null | grep -q -- --no-fentry; then
	NOFENTRY=--no-fentry
else
	NOFENTRY=
	log "swaptrace record has no --no-fentry: the kprobe scenario uses the default backend"
fi
echo "hold=${HOLD:-no} no_fentry=${NOFENTRY:-no}" > /out/features

# A step that can hang gets this many seconds: a background recorder spans
# its attach (10 s under a loaded TCG host), the workload and the step it
# watches (swapoff: 50 s on 6.18); all stay within the host's 30 minutes.
LIMIT=240

# note NAME STATUS: record a step's status, keep the first failure in RC.
note() {
	echo "$1 $2" >> steps.txt
	[ "$2" -ne 0 ] && [ "$RC" -eq 0 ] && RC=$2
	[ "$2" -ne 0 ] && log "$SC: $1 failed ($2)"
	return 0
}

# trace_started FILE: the trace, or the temporary file it is written to
# until it is finalized (.FILE.<random>.tmp), holds its header.
trace_started() {
	for f in "$1" .$1.*.tmp; do
		[ -s "$f" ] && return 0
	done
	return 1
}

# wait_trace FILE: until a background recorder has attached (it creates its
# trace file only then; attaching fentry programs under TCG can take seconds).
wait_trace() {
	i=0
	while ! trace_started "$1" && [ $i -lt $((LIMIT * 2)) ]; do
		i=$((i + 1))
		sleep 0.5
	done
	trace_started "$1" || log "$SC: $1 not created after $LIMIT s"
	log "$SC: recorder of $1 ready after $((i / 2)) s"
	sleep 1
}

# start_workload SIZE PATTERN: background workload, pid in W; with --hold,
# waits until it holds its memory (or exits).
start_workload() {
	in_cg swaptrace workload --size "$1" --pattern "$2" $HOLD > workload.stdout 2> workload.stderr &
	W=$!
	t=$(now)
	if [ -n "$HOLD" ]; then
		i=0
		while ! grep -q holding workload.stdout 2>/dev/null; do
			kill -0 $W 2>/dev/null || { log "$SC: workload exited before holding"; break; }
			i=$((i + 1))
			[ $i -gt $((LIMIT * 2)) ] && { log "$SC: workload not holding after $LIMIT s"; break; }
			sleep 0.5
		done
	else
		# No hold: wait until 64 MiB is in swap or the workload ends.
		i=0
		while kill -0 $W 2>/dev/null && [ $i -lt $((LIMIT * 2)) ]; do
			used=$(awk 'NR > 1 { u += $4 } END { print u + 0 }' /proc/swaps)
			[ "$used" -ge 65536 ] && break
			i=$((i + 1))
			sleep 0.5
		done
	fi
	echo "$(since "$t")" > workload.ready_time
	log "$SC: workload ready after $(cat workload.ready_time) s; $(grep -E 'SwapFree' /proc/meminfo)"
}

stop_workload() {
	kill -TERM $W 2>/dev/null
	(sleep 30; kill -KILL $W 2>/dev/null) &
	K=$!
	wait $W
	note workload $?
	kill $K 2>/dev/null
}

swap_on() {
	for d in "$@"; do
		mkswap /dev/$d >> mkswap.log 2>&1
		note "mkswap-$d" $?
		swapon_prio /dev/$d 5
		note "swapon-$d" $?
	done
}

swap_off() {
	for d in "$@"; do
		grep -q "^/dev/$d " /proc/swaps && { swapoff /dev/$d; note "swapoff-$d" $?; }
	done
	return 0
}

sc_doctor() {
	timeout 60 swaptrace doctor --json > doctor.json 2> doctor.json.stderr
	note doctor-json $?
	timeout 60 swaptrace doctor > doctor.txt 2> doctor.stderr
	note doctor $?
}

# Seed 000: swapoff of a device holding most of a workload.
sc_swapoff() {
	swap_on vda
	# A second recorder keeps the swap-outs too: the replay rebuilds the
	# swap space from them and walks it as try_to_unuse() does.
	timeout $LIMIT swaptrace record -o full.swt --duration 400s > full.stdout 2> full.stderr &
	F=$!
	wait_trace full.swt
	start_workload "$SIZE" seq
	cat /proc/swaps > swaps.before
	# swapoff brings everything back: lift the limit first.
	memcg_limit max
	t=$(now)
	timeout $LIMIT swaptrace record -o swapoff.swt -- swapoff /dev/vda > record.stdout 2> record.stderr
	note record $?
	since "$t" > swapoff.time
	# record exits 0 when its command is killed (e.g. by the OOM killer).
	grep -q "^/dev/vda " /proc/swaps && note swapoff-done 1
	log "$SC: swapoff took $(cat swapoff.time) s"
	kill -INT $F 2>/dev/null
	wait $F
	note full-record $?
	stop_workload
	swap_off vda
	memcg_limit "$MEMCG"
}

# Seed 001: a process holding swap on two equal-priority devices exits.
sc_free() {
	swap_on vda vdb
	if [ -n "$HOLD" ]; then
		# Shuffled blocks: in address order (the order of the frees) the
		# entries change device every block or so.
		start_workload "$SIZE" shuffled-blocks:16
		cat /proc/swaps > swaps.before
		timeout $LIMIT swaptrace record -o free.swt --duration 30s > record.stdout 2> record.stderr &
		R=$!
		wait_trace free.swt
		t=$(now)
		stop_workload
	else
		timeout $LIMIT swaptrace record -o free.swt --duration 400s > record.stdout 2> record.stderr &
		R=$!
		wait_trace free.swt
		t=$(now)
		in_cg swaptrace workload --size "$SIZE" --pattern seq > workload.stdout 2> workload.stderr
		note workload $?
	fi
	since "$t" > free.time
	log "$SC: workload exit took $(cat free.time) s"
	kill -INT $R 2>/dev/null
	wait $R
	note record $?
	swap_off vda vdb
}

# Both backends attached to the same run: a kprobe recorder in the
# background, the fentry one around the workload. Each is held to the
# kernel's counters of its own window, and the two to each other.
sc_both() {
	swap_on vda
	timeout $LIMIT swaptrace record $NOFENTRY -o kprobe.swt --duration 400s > kprobe.stdout 2> kprobe.stderr &
	K=$!
	wait_trace kprobe.swt
	timeout $LIMIT swaptrace record -o fentry.swt -- \
		in_cg swaptrace workload --size "$SIZE" --pattern shuffled-blocks:16 > fentry.stdout 2> fentry.stderr
	note record $?
	kill -INT $K
	wait $K
	note kprobe-record $?
	swap_off vda
}

# zswap_run NAME COLD CMD: records, in the scenario's zswap setting, a
# cold set of COLD written and held, then CMD, both in the cgroup, to
# NAME.swt.
zswap_run() {
	t=$(now)
	timeout $LIMIT swaptrace record -o "$1.swt" -- sh -c "
		in_cg swaptrace workload --size $2 --pattern random --fill 3 --hold > $1.cold &
		until grep -q holding $1.cold; do sleep 0.5; done
		in_cg $3
		kill %1; wait" > "$1.stdout" 2> "$1.stderr"
	note "record-$1" $?
	log "$SC: $1 took $(since "$t") s"
}

# A real program nobody here wrote: zstd with a 128 MiB window (--long=27)
# over 10 rounds of the swaptrace binary, a run of numbers and busybox
# (about 240 MB, with matches a round apart). It prints the compressed size.
printf '#!/bin/sh\nset -o pipefail\nfor i in 1 2 3 4 5 6 7 8 9 10; do cat /bin/swaptrace; seq $((i*1000000)) $((i*1000000+1500000)); cat /bin/busybox; done | zstd -q -3 --long=27 -c | wc -c\n' > /bin/zstd_job
chmod 755 /bin/zstd_job

# Seed 003: zswap with its shrinker; a cold set written first and held,
# then a job sweeping its working set, in the memory cgroup (v2: zswap is
# charged to it and its shrinker writes back under the cgroup's pressure).
sc_zswap() {
	Z=/sys/module/zswap/parameters
	if [ ! -w $Z/enabled ]; then
		log "$SC: no zswap in this kernel"
		note zswap-missing 1
		return
	fi
	old_enabled=$(cat $Z/enabled)
	old_shrinker=$(cat $Z/shrinker_enabled 2>/dev/null)
	echo Y > $Z/enabled
	[ -n "$old_shrinker" ] && echo Y > $Z/shrinker_enabled
	cat $Z/* > zswap.params 2>/dev/null
	swap_on vda
	memcg_limit 128M
	t=$(now)
	timeout $LIMIT swaptrace record -o zswap.swt -- sh -c "
		in_cg swaptrace workload --size 128M --pattern random --fill 2 --hold > cold.out &
		until grep -q holding cold.out; do sleep 0.5; done
		in_cg swaptrace workload --size 256M --pattern shuffled-blocks:16 --fill 2 --passes 2
		kill %1; wait" > record.stdout 2> record.stderr
	note record $?
	since "$t" > zswap.time
	log "$SC: took $(cat zswap.time) s; $(grep -E 'Zswap' /proc/meminfo | tr '\n' ' ')"
	# Other shapes, where the shrinker runs: nothing is fitted to any run.
	# The random one writes every 4th page zero (SWPOUT_ZERO, no zswap_store()).
	if [ -n "$old_shrinker" ]; then
		zswap_run zswap-random 64M "swaptrace workload --size 192M --zero-every 4 --pattern random --fill 2 --passes 2 --seed 5"
		zswap_run zswap-strided 96M "swaptrace workload --size 224M --pattern strided:4 --fill 4 --passes 3 --seed 11"
		memcg_limit 80M
		zswap_run zswap-zstd 48M zstd_job
		memcg_limit 128M
	fi
	swap_off vda
	echo "$old_enabled" > $Z/enabled
	[ -n "$old_shrinker" ] && echo "$old_shrinker" > $Z/shrinker_enabled
	memcg_limit "$MEMCG"
}

# Issue 17's jobs, recorded system-wide with bpf_stats on: two that never
# swap (which programs run off the swap path under this kernel's backends)
# and a swapping one (eBPF time per recorded event). TCG inflates the
# times: compare programs and kernels, not hosts.
sc_overhead() {
	S=/proc/sys/kernel/bpf_stats_enabled
	old_stats=$(cat $S 2>/dev/null)
	echo 1 > $S || log "$SC: cannot enable bpf_stats"
	swap_on vda
	# The kernel's best backends, then tracepoints only (as on a locked-down
	# host) on the same jobs, for the same TCG's comparison.
	for b in "" "-tp"; do
		flag=""
		[ -n "$b" ] && flag=--tracepoints
		timeout $LIMIT swaptrace record --json $flag -o faults$b.swt -- \
			swaptrace workload --size 256M --pattern seq > faults$b.json 2> faults$b.stderr
		note faults$b $?
		timeout $LIMIT swaptrace record --json $flag -o dd$b.swt -- \
			dd if=/dev/zero of=/dev/null bs=1 count=200000 > dd$b.json 2> dd$b.stderr
		note dd$b $?
		timeout $LIMIT swaptrace record --json $flag -o swap$b.swt -- \
			in_cg swaptrace workload --size 256M --pattern shuffled-blocks:16 > swap$b.json 2> swap$b.stderr
		note swap$b $?
	done
	swap_off vda
	[ -n "$old_stats" ] && echo "$old_stats" > $S
}

# scenario NAME: runs sc_NAME in /out/NAME with vmstat around it.
scenario() {
	SC=$1
	D=/out/$SC
	mkdir -p "$D"
	log "scenario $SC: start"
	t0=$(now)
	(
		cd "$D" || exit 99
		RC=0
		cat /proc/vmstat > vmstat.before
		sc_$SC
		cat /proc/vmstat > vmstat.after
		exit $RC
	)
	st=$?
	echo $st > "$D/status"
	since "$t0" > "$D/elapsed"
	log "scenario $SC: status $st after $(cat "$D/elapsed") s"
}

for s in doctor swapoff free both zswap overhead; do scenario $s; done

dmesg > /out/dmesg.txt
log "writing /out to /dev/vdc"
tar -cf /dev/vdc -C /out .
log "tar status $?"
sync
log "done, up $(now) s"
poweroff -f
