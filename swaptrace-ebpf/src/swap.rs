//! Swap-in faults, swap reads, swap-outs, reclaim, khugepaged and swapoff
//! brackets from tracepoints only (works where kprobes and fentry do not).
//!
//! A swap-in fault is a `page_fault_user`/`page_fault_kernel` during which, in
//! the same task and outside reclaim, `rss_stat` reports MM_SWAPENTS of the
//! task's own mm (`do_swap_page()` drops it after mapping the page); the
//! fault ends at its PGFAULT count (`mm_account_fault()`), where the record is
//! sent. PSWPIN, SWPIN_ZERO, ZSWPIN and PGMAJFAULT seen meanwhile
//! (`count_memcg_events`) are the pages read for the fault and its kind. A
//! zap or MADV_PAGEOUT in a syscall is never followed by PGFAULT, so it is
//! never taken for a fault.

use crate::twin::twin;
use aya_ebpf::{
    helpers::{
        bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_current_task, bpf_ktime_get_ns,
        bpf_probe_read_kernel,
    },
    macros::{map, raw_tracepoint, tracepoint},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{RawTracePointContext, TracePointContext},
};
use swaptrace_common::{flag, kind, read_kind, unseen, RawEvent};

use crate::konst::*;

/// An anomaly for `record -v`, through aya-log. AYA_LOG_LEVEL is a load-time
/// constant (0 unless -v): the verifier then drops this code, so it costs
/// nothing. aya-log-ebpf 0.2 writes to its ring buffer and ignores the context.
macro_rules! anomaly {
    ($($arg:tt)*) => {
        aya_log_ebpf::warn!(&(), $($arg)*)
    };
}
pub(crate) use anomaly;

const PAGE_MAPPING_ANON: u64 = 1;
const PAGE_MAPPING_FLAGS: u64 = 3;
const USER_TOP: u64 = 1 << 47;
const CGROUP_DEPTH: usize = 8;
/// Wake the reader only once this much is waiting: a wake-up per event costs
/// microseconds in the traced task. The reader also drains on a timer.
pub(crate) const WAKEUP_BYTES: u64 = 512 << 10;
pub(crate) const BPF_RB_AVAIL_DATA: u64 = 0;
pub(crate) const BPF_RB_NO_WAKEUP: u64 = 1;
pub(crate) const BPF_RB_FORCE_WAKEUP: u64 = 2;

#[map]
pub(crate) static EVENTS: RingBuf = RingBuf::with_byte_size(swaptrace_common::RING_BYTES, 0);

/// Per-task state in an array indexed by the low bits of the tid, tagged
/// with the whole tid: the verifier inlines an array lookup, where a hash
/// lookup (jhash, bucket walk) cost tens of ns on every page fault. A slot
/// taken by another tid is reset, as an LRU eviction would.
const TASK_SLOTS: u32 = 1 << 16;
#[map]
static TASKS: Array<TaskState> = Array::with_max_entries(TASK_SLOTS, 0);

#[map]
static LOST: PerCpuArray<u64> = PerCpuArray::with_max_entries(unseen::SLOTS, 0);

/// Processes (tgids, a bit each) that may hold swap entries: owners of an
/// mm whose MM_SWAPENTS changed, their forks, and those userspace found
/// with VmSwap at the start. A fault of any other process cannot be a swap-in,
/// and costs only this bit test (not a clock read and the fault's state).
#[map]
static SWAP_TGIDS: Array<u64> = Array::with_max_entries(1 << 16, 0);

/// Whether process `tgid` may hold swap entries (always, when the filter
/// is off: no `mm->owner` to mark swap-outs with).
#[inline(always)]
pub(crate) fn holds_swap(tgid: u32) -> bool {
    if g(&K_TGID_FILTER) != 1 {
        return true;
    }
    SWAP_TGIDS
        .get(tgid >> 6)
        .is_none_or(|w| *w & (1u64 << (tgid & 63)) != 0)
}

#[inline(always)]
pub(crate) fn mark_tgid(tgid: u32) {
    if let Some(w) = SWAP_TGIDS.get_ptr_mut(tgid >> 6) {
        // SAFETY: an array slot; a lost race only delays a bit by a fault.
        unsafe { *w |= 1u64 << (tgid & 63) };
    }
}

/// The process that owns `mm` (`mm->owner`, CONFIG_MEMCG), by tgid.
#[inline(always)]
pub(crate) fn owner_tgid(mm: u64) -> Option<u32> {
    let owner = read_u64(mm, g(&K_MM_OWNER))?;
    task_tgid(owner)
}

#[inline(always)]
pub(crate) fn task_tgid(task: u64) -> Option<u32> {
    read_u64(task, g(&K_TASK_TGID)).map(|v| v as u32)
}

/// MM_SWAPENTS of each address space at its last zap event (the
/// percpu_counter's global part): a rise is no zap.
#[map]
static ZAP_LAST: LruHashMap<u64, i64> = LruHashMap::with_max_entries(16384, 0);

/// Address spaces of selected tasks, so swap-outs (done by the reclaimer,
/// often another task) can be filtered when a filter is set.
#[map]
static WATCHED_MM: HashMap<u64, u8> = HashMap::with_max_entries(16384, 0);

/// The PMD of a collapse's isolation (`mm_collapse_huge_page_isolate`), per
/// task, for its scan's record: after a collapse the scan's own last folio
/// is freed.
#[map]
static KHP_PMD: LruHashMap<u32, u64> = LruHashMap::with_max_entries(256, 0);

#[repr(C)]
#[derive(Clone, Copy)]
struct TaskState {
    fault_ts: u64,
    fault_addr: u64,
    /// The mm whose MM_SWAPENTS changed during the fault; 0 if none did.
    fault_mm: u64,
    reads: u32,
    zero_reads: u16,
    zswap_loads: u16,
    fault_active: u8,
    major: u8,
    reclaim_depth: u8,
    /// `flag::OUT_*` counted since the last swap-out of this task.
    out_kind: u8,
    /// `zswap_store()` entered since the last swap-out of this task.
    store_entered: u8,
    /// The task whose state this slot holds.
    tid: u32,
    /// The fault writes (x86 `X86_PF_WRITE` in its error code).
    write: u8,
    /// This task's name went out with one of its events.
    comm_sent: u8,
    /// The traced fault is a GUP one ([`exact2::GUP`]): `fault_addr` is
    /// its call's range start, `gup_pages` the range's length.
    gup: u8,
    gup_pages: u32,
}

/// `fault_active`: no fault; a fault followed; a fault of a process not
/// known to hold swap entries, left untraced.
const FAULT_NONE: u8 = 0;
const FAULT_TRACED: u8 = 1;
const FAULT_SKIPPED: u8 = 2;

const EMPTY: TaskState = TaskState {
    fault_ts: 0,
    fault_addr: 0,
    fault_mm: 0,
    reads: 0,
    zero_reads: 0,
    zswap_loads: 0,
    fault_active: 0,
    major: 0,
    reclaim_depth: 0,
    out_kind: 0,
    store_entered: 0,
    tid: 0,
    write: 0,
    comm_sent: 0,
    gup: 0,
    gup_pages: 0,
};

/// This task's state, if its slot holds it.
#[inline(always)]
fn task_get(t: u32) -> Option<*mut TaskState> {
    let s = TASKS.get_ptr_mut(t & (TASK_SLOTS - 1))?;
    // SAFETY: an array slot; only the task of this tid writes it.
    (unsafe { (*s).tid } == t).then_some(s)
}

/// This task's slot, reset to `init` if another task held it.
#[inline(always)]
fn task_take(t: u32, init: TaskState) -> Option<*mut TaskState> {
    let s = TASKS.get_ptr_mut(t & (TASK_SLOTS - 1))?;
    // SAFETY: as in `task_get`.
    unsafe {
        if (*s).tid != t {
            *s = TaskState { tid: t, ..init };
        }
    }
    Some(s)
}

#[inline(always)]
pub(crate) fn g(v: &'static u64) -> u64 {
    // SAFETY: a global set before load; volatile keeps it out of constant folding.
    unsafe { core::ptr::read_volatile(v) }
}

#[inline(always)]
pub(crate) fn known(v: u64) -> bool {
    v != u64::MAX
}

#[inline(always)]
pub(crate) fn read_u64(base: u64, off: u64) -> Option<u64> {
    if base == 0 || !known(off) {
        return None;
    }
    let at = base.wrapping_add(off);
    // SAFETY: bpf_probe_read_kernel checks the address.
    match unsafe { bpf_probe_read_kernel(at as *const u64) } {
        Ok(v) => Some(v),
        Err(e) => {
            anomaly!("kernel read of {:x} failed ({})", at, e);
            None
        }
    }
}

/// The first 64 bytes of a kernel object, read at once: fields at offsets
/// below 64 come from here, others are read one by one.
pub(crate) struct Head {
    base: u64,
    words: [u64; 8],
}

impl Head {
    #[inline(always)]
    pub(crate) fn read(base: u64) -> Option<Head> {
        if base == 0 {
            return None;
        }
        // SAFETY: bpf_probe_read_kernel checks the address.
        match unsafe { bpf_probe_read_kernel(base as *const [u64; 8]) } {
            Ok(words) => Some(Head { base, words }),
            Err(e) => {
                anomaly!("kernel read of 64 bytes at {:x} failed ({})", base, e);
                None
            }
        }
    }

    #[inline(always)]
    pub(crate) fn get(&self, off: u64) -> Option<u64> {
        if off < 64 && off & 7 == 0 {
            self.words.get((off / 8) as usize).copied()
        } else {
            read_u64(self.base, off)
        }
    }
}

#[inline(always)]
pub(crate) fn tid() -> u32 {
    bpf_get_current_pid_tgid() as u32
}

#[inline(always)]
pub(crate) fn current_mm() -> u64 {
    // SAFETY: the helper returns the current task pointer.
    let task = unsafe { bpf_get_current_task() };
    read_u64(task, g(&K_TASK_MM)).unwrap_or(0)
}

/// Whether the memory cgroup of the current task is the filter's or below it.
#[inline(always)]
fn in_cgroup(want: u64) -> bool {
    // SAFETY: the helper returns the current task pointer.
    let task = unsafe { bpf_get_current_task() };
    let Some(cset) = read_u64(task, g(&K_TASK_CGROUPS)) else {
        return false;
    };
    let Some(mut css) = read_u64(cset, g(&K_CSS_SET_MEMCG)) else {
        return false;
    };
    for _ in 0..CGROUP_DEPTH {
        if css == 0 {
            return false;
        }
        let cgrp = read_u64(css, g(&K_CSS_CGROUP)).unwrap_or(0);
        let kn = read_u64(cgrp, g(&K_CGROUP_KN)).unwrap_or(0);
        if read_u64(kn, g(&K_KN_ID)) == Some(want) {
            return true;
        }
        css = read_u64(css, g(&K_CSS_PARENT)).unwrap_or(0);
    }
    false
}

#[inline(always)]
fn filtering() -> bool {
    g(&K_FILTER_TGID) != 0 || g(&K_FILTER_CGROUP) != 0
}

#[inline(always)]
pub(crate) fn selected() -> bool {
    let pid = g(&K_FILTER_TGID);
    let cg = g(&K_FILTER_CGROUP);
    if pid == 0 && cg == 0 {
        return true;
    }
    (pid != 0 && (bpf_get_current_pid_tgid() >> 32) == pid) || (cg != 0 && in_cgroup(cg))
}

#[inline(always)]
pub(crate) fn count_lost(k: u8) {
    bump(k as u32);
}

#[inline(always)]
fn bump(slot: u32) {
    if let Some(p) = LOST.get_ptr_mut(slot) {
        // SAFETY: per-CPU slot, no concurrent writer.
        unsafe { *p += 1 };
    }
}

/// An event being built; `emit` adds the task and writes it to the ring.
#[derive(Clone, Copy)]
pub(crate) struct Ev {
    pub ts_ns: u64,
    pub mm: u64,
    pub addr: u64,
    pub entry: u64,
    pub nr: u32,
    pub aux: u32,
    pub kind: u8,
    pub flags: u8,
    pub zero: u16,
    pub zswap: u16,
    pub flags2: u8,
    /// Wake the reader at once: userspace reads the page table for it.
    pub wake: bool,
}

#[inline(always)]
pub(crate) fn emit(ev: Ev) {
    let Some(mut slot) = EVENTS.reserve::<RawEvent>(0) else {
        count_lost(ev.kind);
        anomaly!("ring buffer full: an event of kind {} dropped", ev.kind);
        return;
    };
    let pid_tgid = bpf_get_current_pid_tgid();
    // Field by field into the ring: no stack copy of the whole record.
    let p = slot.as_mut_ptr();
    // SAFETY: `p` points to the reserved, exclusively owned slot.
    unsafe {
        (*p).ts_ns = ev.ts_ns;
        (*p).mm = ev.mm;
        (*p).addr = ev.addr;
        (*p).entry = ev.entry;
        (*p).tid = pid_tgid as u32;
        (*p).pid = (pid_tgid >> 32) as u32;
        (*p).nr = ev.nr;
        (*p).aux = ev.aux;
        (*p).kind = ev.kind;
        (*p).flags = ev.flags;
        (*p).zero = ev.zero;
        (*p).zswap = ev.zswap;
        (*p).flags2 = ev.flags2;
        (*p)._pad = 0;
        // The name once per task: userspace keeps it from its first event.
        (*p).comm = match task_get(pid_tgid as u32) {
            Some(s) if (*s).comm_sent != 0 => [0; 16],
            Some(s) => {
                (*s).comm_sent = 1;
                bpf_get_current_comm().unwrap_or([0; 16])
            }
            None => bpf_get_current_comm().unwrap_or([0; 16]),
        };
    }
    let wake = if ev.wake || EVENTS.query(BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES {
        BPF_RB_FORCE_WAKEUP
    } else {
        BPF_RB_NO_WAKEUP
    };
    slot.submit(wake);
}

#[inline(always)]
pub(crate) fn event(k: u8, ts: u64) -> Ev {
    Ev {
        ts_ns: ts,
        mm: 0,
        addr: 0,
        entry: 0,
        nr: 0,
        aux: 0,
        kind: k,
        flags: 0,
        zero: 0,
        zswap: 0,
        flags2: 0,
        wake: false,
    }
}

/// `X86_PF_WRITE` of a page fault's error code.
const PF_WRITE: u64 = 1 << 1;

fn on_fault(addr: u64, error_code: u64) {
    if !selected() {
        return;
    }
    if filtering() {
        let mm = current_mm();
        if mm != 0 && WATCHED_MM.get_ptr(mm).is_none() {
            let _ = WATCHED_MM.insert(mm, 1u8, 0);
        }
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    let Some(s) = task_take(pid_tgid as u32, EMPTY) else {
        return;
    };
    // SAFETY: this task's slot; only this task writes it here.
    let s = unsafe { &mut *s };
    if !holds_swap((pid_tgid >> 32) as u32) {
        s.fault_active = FAULT_SKIPPED;
        return;
    }
    begin_fault(s, addr, error_code & PF_WRITE != 0, None);
}

/// This task's traced fault begins now, at `addr`; for a GUP fault, `addr`
/// is its call's range start and `gup_pages` the range's length.
#[inline(always)]
fn begin_fault(s: &mut TaskState, addr: u64, write: bool, gup_pages: Option<u32>) {
    s.fault_ts = unsafe { bpf_ktime_get_ns() };
    s.fault_addr = addr;
    s.fault_mm = 0;
    s.reads = 0;
    s.zero_reads = 0;
    s.zswap_loads = 0;
    s.major = 0;
    s.write = write as u8;
    s.gup = gup_pages.is_some() as u8;
    s.gup_pages = gup_pages.unwrap_or(0);
    s.fault_active = FAULT_TRACED;
}

/// A swap-in seen outside a fault (its reads, its major count, or
/// MM_SWAPENTS of the task's own mm) inside a system call that faults
/// pages in (GUP, [`crate::unmap::gup_range`]) and outside an exact
/// do_swap_page(): traced as a fault from here to its PGFAULT count,
/// which `mm_account_fault()` makes for GUP faults too. `swapents`: the
/// sign is MM_SWAPENTS (in direct I/O only it counts, and the fault's
/// reads and kind, counted before it, go untold). None otherwise.
#[inline(always)]
fn gup_fault(t: u32, swapents: bool) -> Option<*mut TaskState> {
    if crate::exact::fault_start().is_some() || !selected() {
        return None;
    }
    let (start, len, write, io) = crate::unmap::gup_range()?;
    // In a read() or write(), reads may be a tmpfs file's: only MM_SWAPENTS
    // of the task's own mm tells a swap-in there.
    if io && !swapents {
        return None;
    }
    let s = task_take(t, EMPTY)?;
    let pages = len >> (g(&K_PAGE_SHIFT) & 63);
    // SAFETY: this task's slot; only this task writes it here.
    begin_fault(
        unsafe { &mut *s },
        start,
        write,
        Some(pages.min(u32::MAX as u64) as u32),
    );
    Some(s)
}

twin! {
/// Args: (address, regs, error_code).
#[raw_tracepoint(tracepoint = "page_fault_user")]
pub fn page_fault_user / page_fault_user_2 (ctx: RawTracePointContext) -> i32 {
    on_fault(ctx.arg::<u64>(0), ctx.arg::<u64>(2));
    0
}
}

twin! {
/// Kernel-mode faults on user addresses (copy_from_user and friends).
#[raw_tracepoint(tracepoint = "page_fault_kernel")]
pub fn page_fault_kernel / page_fault_kernel_2 (ctx: RawTracePointContext) -> i32 {
    let addr = ctx.arg::<u64>(0);
    if addr < USER_TOP {
        on_fault(addr, ctx.arg::<u64>(2));
    }
    0
}
}

twin! {
/// Args: (memcg, item, val).
#[raw_tracepoint(tracepoint = "count_memcg_events")]
pub fn count_memcg_events / count_memcg_events_2 (ctx: RawTracePointContext) -> i32 {
    let item = ctx.arg::<u64>(1) & 0xffff_ffff;
    // PGFAULT, once per fault, first: the common case returns soonest.
    if item == g(&K_EV_PGFAULT) {
        fault_done();
        return 0;
    }
    // Then every item this program ignores (PGPGIN, PGSCAN…), by one bit.
    let bits = match item {
        0..64 => g(&K_EV_MASK0) >> item,
        64..128 => g(&K_EV_MASK1) >> (item - 64),
        _ => 0,
    };
    if bits & 1 == 0 {
        return 0;
    }
    let val = ctx.arg::<u64>(2);
    let read = if item == g(&K_EV_PSWPIN) {
        Some(read_kind::IO)
    } else if item == g(&K_EV_SWPIN_ZERO) {
        Some(read_kind::ZERO)
    } else if item == g(&K_EV_ZSWPIN) {
        Some(read_kind::ZSWAP)
    } else {
        None
    };
    let out = if item == g(&K_EV_PSWPOUT) {
        flag::OUT_IO
    } else if item == g(&K_EV_SWPOUT_ZERO) {
        flag::OUT_ZERO
    } else if item == g(&K_EV_ZSWPOUT) {
        flag::OUT_ZSWAP
    } else {
        0
    };
    if item == g(&K_EV_ZSWPWB) {
        if selected() {
            let mut ev = event(kind::ZSWAP_WRITEBACK, unsafe { bpf_ktime_get_ns() });
            ev.nr = val as u32;
            emit(ev);
        }
        return 0;
    }
    let majfault = item == g(&K_EV_PGMAJFAULT);
    if read.is_none() && out == 0 && !majfault {
        return 0;
    }
    let t = tid();
    if out != 0 {
        if let Some(s) = task_take(t, EMPTY) {
            // SAFETY: this task's slot.
            unsafe { (*s).out_kind |= out };
        }
        return 0;
    }
    let state = task_get(t);
    // SAFETY: this task's map value.
    let fault = state.map_or(FAULT_NONE, |s| unsafe { (*s).fault_active });
    if fault == FAULT_SKIPPED {
        // A fault left untraced: its reads are not reads outside faults.
        return 0;
    }
    let mut active = state.filter(|_| fault == FAULT_TRACED);
    // A GUP swap-in's first sign (7.x may count PSWPIN at I/O completion,
    // in whatever task runs then: only its major count tells there).
    if active.is_none() && (majfault || g(&K_READS_OUTSIDE) != 1) {
        active = gup_fault(t, false);
    }
    match (active, read) {
        (Some(s), Some(r)) => {
            let s = unsafe { &mut *s };
            let n = val as u32;
            match r {
                read_kind::IO => s.reads = s.reads.saturating_add(n),
                read_kind::ZERO => s.zero_reads = s.zero_reads.saturating_add(n as u16),
                _ => s.zswap_loads = s.zswap_loads.saturating_add(n as u16),
            }
        }
        (Some(s), None) => unsafe { (*s).major = 1 },
        (None, Some(r)) => {
            // Inside an exact do_swap_page(): the fault takes the kind.
            // Outside one, the exact swap-read probe reports the read (7.x
            // may count PSWPIN after the fault, at I/O completion).
            if crate::exact::fault_read_kind(r, val) || g(&K_READS_OUTSIDE) == 1 {
                return 0;
            }
            if selected() {
                let mut ev = event(kind::SWAP_READ, unsafe { bpf_ktime_get_ns() });
                ev.nr = val as u32;
                ev.aux = r;
                willneed(&mut ev);
                emit(ev);
            }
        }
        (None, None) => {}
    }
    0
}
}

twin! {
/// Args: (mm, member). MM_SWAPENTS of the faulting task's mm changes once
/// `do_swap_page()` has mapped the page.
#[raw_tracepoint(tracepoint = "rss_stat")]
pub fn rss_stat / rss_stat_2 (ctx: RawTracePointContext) -> i32 {
    if ctx.arg::<u64>(1) & 0xffff_ffff != g(&K_MM_SWAPENTS) {
        return 0;
    }
    let mm = ctx.arg::<u64>(0);
    let pid_tgid = bpf_get_current_pid_tgid();
    let (mut fault, mut in_reclaim) = (FAULT_NONE, false);
    if let Some(s) = task_get(pid_tgid as u32) {
        // SAFETY: this task's slot.
        let s = unsafe { &mut *s };
        fault = s.fault_active;
        in_reclaim = s.reclaim_depth != 0;
        if fault == FAULT_TRACED && !in_reclaim {
            s.fault_mm = mm;
            return 0;
        }
        if fault == FAULT_SKIPPED && !in_reclaim && mm == current_mm() {
            // A swap-in by a process not known to hold swap entries: lost,
            // counted, and its next faults traced.
            mark_tgid((pid_tgid >> 32) as u32);
            bump(unseen::FAULT_UNTRACED);
            s.fault_active = FAULT_NONE;
            return 0;
        }
    }
    // A swap-out unmapping a page (try_to_unmap_one() counts it before
    // the swap PTE is set, under the PTE lock), a zap or a swapoff: from
    // here the owner may hold swap entries, before any fault can see one.
    if g(&K_TGID_FILTER) == 1 {
        if let Some(t) = owner_tgid(mm) {
            mark_tgid(t);
        }
    }
    if fault == FAULT_NONE && !in_reclaim {
        if mm == current_mm() {
            if let Some(s) = gup_fault(pid_tgid as u32, true) {
                // SAFETY: this task's slot.
                unsafe { (*s).fault_mm = mm };
                return 0;
            }
        }
        zap(mm);
    }
    0
}
}

const PF_EXITING: u64 = 0x4;

/// A swap read outside faults inside `madvise(MADV_WILLNEED)`: the call's
/// range and address space go with it ([`exact2::WILLNEED`]).
#[inline(always)]
pub(crate) fn willneed(ev: &mut Ev) {
    if let Some((start, len)) = crate::unmap::willneed_range() {
        ev.flags2 |= swaptrace_common::exact2::WILLNEED;
        ev.mm = current_mm();
        ev.addr = start;
        ev.entry = len;
    }
}

/// MM_SWAPENTS changing outside a fault and reclaim, in the task that owns
/// the mm or in an exiting one (whose `mm` is already cleared when
/// `exit_mmap()` runs): `zap_pte_range()` freeing swap entries, a PTE
/// table at a time. Swap-outs by kswapd or another task's reclaim are not
/// the owner's; a GUP swap-in (no user fault) would pass for a zap.
#[inline(always)]
fn zap(mm: u64) {
    // SAFETY: the helper returns the current task pointer.
    let task = unsafe { bpf_get_current_task() };
    let exiting = read_u64(task, g(&K_TASK_FLAGS)).unwrap_or(0) & PF_EXITING != 0;
    if !exiting && current_mm() != mm {
        return;
    }
    if !selected() {
        return;
    }
    // Inside a call that zaps (munmap, madvise): a zap, whatever the
    // count's per-CPU batching shows of it.
    let range = if exiting {
        None
    } else {
        crate::unmap::zap_range()
    };
    let left = read_u64(mm, g(&K_MM_SWAPENTS_COUNT));
    if let Some(n) = left.map(|v| v as i64) {
        // Not lower than the last one seen: a swap-out in the owner's
        // context (MADV_PAGEOUT, a page at a time), not a free. An exit
        // only frees. Unseen before and outside a zapping call: a rise or a
        // drop, so none is sent (the replay reads only zaps with a range).
        let named = range.is_some() || exiting;
        match ZAP_LAST.get_ptr_mut(mm) {
            Some(p) => {
                // SAFETY: this mm's value; a racing writer only repeats a zap.
                let prev = unsafe { core::mem::replace(&mut *p, n) };
                if n >= prev && !named {
                    return;
                }
            }
            None => {
                let _ = ZAP_LAST.insert(mm, n, 0);
                if !named {
                    return;
                }
            }
        }
    }
    let mut ev = event(kind::ZAP, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.entry = left.unwrap_or(u64::MAX);
    if exiting {
        ev.flags = flag::EXITING;
    } else if let Some((k, start, len)) = range {
        ev.nr = k;
        ev.addr = start;
        let shift = g(&K_PAGE_SHIFT) & 63;
        let pages = (len >> shift) + (len & ((1 << shift) - 1) != 0) as u64;
        ev.aux = pages.min(u32::MAX as u64) as u32;
    }
    emit(ev);
}

/// The end of a fault (its PGFAULT count): sends the record of a swap-in.
#[inline(always)]
fn fault_done() {
    let Some(s) = task_get(tid()) else {
        return;
    };
    // SAFETY: this task's map value.
    let s = unsafe { &mut *s };
    if s.fault_active != FAULT_TRACED {
        s.fault_active = FAULT_NONE;
        return;
    }
    s.fault_active = FAULT_NONE;
    // Read, and mapped no swap entry: do_swap_page() read the page, then
    // found the PTE changed (another thread of the mm mapped the folio,
    // a swap-cache hit recorded on its own), or shared memory
    // (shmem_swapin_folio(): no swap PTE, so no entry joins it).
    let read = s.reads != 0 || s.zero_reads != 0 || s.zswap_loads != 0;
    if s.fault_mm == 0 && read {
        s.fault_mm = current_mm();
    }
    if s.fault_mm == 0 || s.fault_mm != current_mm() {
        return;
    }
    let now = unsafe { bpf_ktime_get_ns() };
    let mut ev = event(kind::SWAP_FAULT, s.fault_ts);
    ev.aux = now.saturating_sub(s.fault_ts).min(u32::MAX as u64) as u32;
    ev.mm = s.fault_mm;
    ev.addr = s.fault_addr;
    ev.nr = s.reads;
    ev.entry = ((s.zero_reads as u64) << 32) | s.zswap_loads as u64;
    if s.major != 0 {
        ev.flags = flag::MAJOR;
    }
    if s.write != 0 {
        ev.flags |= flag::WRITE;
    }
    if s.gup != 0 {
        ev.flags2 = swaptrace_common::exact2::GUP;
        ev.zero = s.gup_pages as u16;
        ev.zswap = (s.gup_pages >> 16) as u16;
    }
    emit(ev);
}

twin! {
/// Args: (folio). Every folio written out by reclaim, I/O or not.
#[raw_tracepoint(tracepoint = "mm_vmscan_write_folio")]
pub fn mm_vmscan_write_folio / mm_vmscan_write_folio_2 (ctx: RawTracePointContext) -> i32 {
    swap_out(ctx.arg::<u64>(0));
    0
}
}

/// A folio written to swap: its entry, size, and owner (mm, address)
/// through its anon_vma; the write's vm events (PSWPOUT, ZSWPOUT…) came
/// just before, in this task.
#[inline(always)]
fn swap_out(folio: u64) {
    let Some(folio) = Head::read(folio) else {
        return;
    };
    let swap = folio.get(g(&K_FOLIO_SWAP)).unwrap_or(0);
    let mapping = folio.get(g(&K_FOLIO_MAPPING)).unwrap_or(0);
    if swap == 0 {
        bump(unseen::SWAP_OUT_GONE);
        return;
    }
    // Not anonymous: a swap-cache folio never mapped (mapping NULL), e.g.
    // read ahead from zswap, which leaves it dirty when loads are
    // exclusive (6.7+), and stored again to the entry it holds. Its page
    // keeps that entry. Recorded without an owner.
    let anon = mapping & PAGE_MAPPING_FLAGS == PAGE_MAPPING_ANON;
    let index = folio.get(g(&K_FOLIO_INDEX)).unwrap_or(0);
    let mut ev = event(kind::SWAP_OUT, unsafe { bpf_ktime_get_ns() });
    ev.entry = swap;
    ev.nr = 1;
    let head = g(&K_PG_HEAD);
    if head < 64 && folio.get(g(&K_FOLIO_FLAGS)).unwrap_or(0) & (1 << head) != 0 {
        let order = folio.get(g(&K_FOLIO_FLAGS1)).unwrap_or(0) & 0xff;
        if order < 20 {
            ev.nr = 1 << order;
        } else {
            anomaly!(
                "folio {:x}: order {} (unexpected layout?)",
                folio.base,
                order
            );
        }
    }
    let mut entered = 0;
    if let Some(s) = task_get(tid()) {
        // SAFETY: this task's slot.
        let s = unsafe { &mut *s };
        ev.flags = s.out_kind;
        entered = s.store_entered;
        s.out_kind = 0;
        s.store_entered = 0;
    }
    // No zswap_store() return before this write-out. Entered: its fexit
    // was skipped (the trampoline's recursion guard, another task's
    // program preempted on this CPU), kind unknown. Not entered:
    // swap_writeout() took the zero-filled path first (6.12+), or wrote
    // without zswap.
    if ev.flags == 0 && entered == 0 && g(&K_STORES_EXACT) == 1 {
        ev.flags = if known(g(&K_EV_SWPOUT_ZERO)) {
            flag::OUT_ZERO
        } else {
            flag::OUT_IO
        };
    }
    // anon_vma -> root of its anon_vma_chain interval tree -> vma -> mm.
    let anon_vma = if anon {
        mapping & !PAGE_MAPPING_FLAGS
    } else {
        0
    };
    let node = read_u64(anon_vma, g(&K_ANON_VMA_ROOT)).unwrap_or(0);
    // The page's address in a second VMA at its offset, if any.
    let mut alt = 0;
    // A match, not a closure: with two programs calling this, LLVM would
    // keep a closure out of line, and 6.1's verifier counts its frame too.
    let fields = match crate::owner::vma_of(node, index) {
        Some((v, pgoff, a)) => {
            alt = a;
            Some((
                v.get(g(&K_VMA_MM)),
                v.get(g(&K_VMA_START)),
                Some(pgoff),
                v.get(g(&K_VMA_END)),
            ))
        }
        None => None,
    };
    match fields {
        Some((Some(mm), Some(start), Some(pgoff), end)) => {
            let shift = g(&K_PAGE_SHIFT);
            ev.mm = mm;
            ev.addr = start.wrapping_add(index.wrapping_sub(pgoff) << shift);
            if let Some(end) = end.filter(|&e| start <= ev.addr && ev.addr < e) {
                let before = (ev.addr - start) >> shift;
                let after = (end - ev.addr) >> shift;
                ev.aux = before.min(u32::MAX as u64) as u32;
                let after = after.min(u32::MAX as u64);
                ev.zero = after as u16;
                ev.zswap = (after >> 16) as u16;
                ev.flags2 = swaptrace_common::exact2::BOUNDS;
            }
        }
        _ => {
            if anon {
                anomaly!("anon folio {:x}: no VMA through its anon_vma", folio.base);
            }
            ev.flags |= flag::NO_VMA
        }
    }
    // A folio with no owner that the recording watches (read ahead by a
    // selected task, never mapped) is that task's.
    if filtering()
        && WATCHED_MM.get_ptr(ev.mm).is_none()
        && !(ev.mm == 0 && crate::cache::watched(folio.base))
    {
        return;
    }
    // Every written folio, stored ones too: 6.18's reclaim may keep a
    // folio it stored to zswap for seconds.
    crate::cache::watch(folio.base, swap, ev.ts_ns);
    if alt != 0 && alt != ev.addr {
        let mut a = event(kind::OUT_ALT, ev.ts_ns);
        (a.mm, a.addr, a.entry) = (ev.mm, alt, ev.entry);
        emit(a);
        // Which VMA: the page table tells until the page is faulted back.
        ev.wake = true;
    }
    emit(ev);
}

/// The start of this task's fault, while one is traced here.
#[inline(always)]
pub(crate) fn traced_fault_start() -> Option<u64> {
    // SAFETY: this task's slot.
    task_get(tid())
        .and_then(|s| unsafe { ((*s).fault_active == FAULT_TRACED).then_some((*s).fault_ts) })
}

/// This task entered `zswap_store()`: its next swap-out is not zero-filled.
#[inline(always)]
pub(crate) fn note_store_entered() {
    if let Some(s) = task_take(tid(), EMPTY) {
        // SAFETY: this task's slot.
        unsafe { (*s).store_entered = 1 };
    }
}

/// The kind of this task's next swap-out, from an exact probe.
#[inline(always)]
pub(crate) fn note_out_kind(kind: u8) {
    if let Some(s) = task_take(tid(), EMPTY) {
        // SAFETY: this task's slot.
        unsafe { (*s).out_kind |= kind };
    }
}

#[inline(always)]
fn reclaim(begin: bool, memcg: bool, nr_reclaimed: u64) {
    let t = tid();
    let slot = if begin {
        task_take(t, EMPTY)
    } else {
        task_get(t)
    };
    if let Some(s) = slot {
        // SAFETY: this task's slot.
        let s = unsafe { &mut *s };
        s.reclaim_depth = if begin {
            s.reclaim_depth.saturating_add(1)
        } else {
            s.reclaim_depth.saturating_sub(1)
        };
    }
    if !selected() {
        return;
    }
    let k = if begin {
        kind::RECLAIM_BEGIN
    } else {
        kind::RECLAIM_END
    };
    let mut ev = event(k, unsafe { bpf_ktime_get_ns() });
    ev.entry = nr_reclaimed;
    if memcg {
        ev.flags = flag::MEMCG;
    }
    emit(ev);
}

twin! {
/// Args: (order, gfp_flags).
#[raw_tracepoint(tracepoint = "mm_vmscan_direct_reclaim_begin")]
pub fn direct_reclaim_begin / direct_reclaim_begin_2 (_ctx: RawTracePointContext) -> i32 {
    reclaim(true, false, 0);
    0
}
}

twin! {
/// Args: (nr_reclaimed).
#[raw_tracepoint(tracepoint = "mm_vmscan_direct_reclaim_end")]
pub fn direct_reclaim_end / direct_reclaim_end_2 (ctx: RawTracePointContext) -> i32 {
    reclaim(false, false, ctx.arg::<u64>(0));
    0
}
}

twin! {
/// Args: (order, gfp_flags).
#[raw_tracepoint(tracepoint = "mm_vmscan_memcg_reclaim_begin")]
pub fn memcg_reclaim_begin / memcg_reclaim_begin_2 (_ctx: RawTracePointContext) -> i32 {
    reclaim(true, true, 0);
    0
}
}

twin! {
/// Args: (nr_reclaimed).
#[raw_tracepoint(tracepoint = "mm_vmscan_memcg_reclaim_end")]
pub fn memcg_reclaim_end / memcg_reclaim_end_2 (ctx: RawTracePointContext) -> i32 {
    reclaim(false, true, ctx.arg::<u64>(0));
    0
}
}

twin! {
/// Args: (mm, swapped_in, referenced, ret).
#[raw_tracepoint(tracepoint = "mm_collapse_huge_page_swapin")]
pub fn collapse_huge_page_swapin / collapse_huge_page_swapin_2 (ctx: RawTracePointContext) -> i32 {
    let mm = ctx.arg::<u64>(0);
    if filtering() && WATCHED_MM.get_ptr(mm).is_none() {
        return 0;
    }
    let mut ev = event(kind::KHUGEPAGED_SWAPIN, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.nr = ctx.arg::<u64>(1) as u32;
    ev.entry = ctx.arg::<u64>(2) & 0xffff_ffff;
    ev.aux = ctx.arg::<u64>(3) as u32;
    emit(ev);
    0
}
}

/// A 4- or 8-byte field of a classic tracepoint record at `off` (from the
/// format file); None when the kernel lacks it.
#[inline(always)]
fn tp_field(ctx: &TracePointContext, off: u64, wide: bool) -> Option<u64> {
    if !known(off) || off > 4096 {
        return None;
    }
    // SAFETY: bounded reads of the tracepoint record.
    unsafe {
        if wide {
            ctx.read_at::<u64>(off as usize).ok()
        } else {
            ctx.read_at::<u32>(off as usize).ok().map(u64::from)
        }
    }
}

/// khugepaged scanned a PMD: its PTE counts and verdict.
#[tracepoint(category = "huge_memory", name = "mm_khugepaged_scan_pmd")]
pub fn khugepaged_scan_pmd(ctx: TracePointContext) -> u32 {
    let Some(mm) = tp_field(&ctx, g(&K_SCAN_MM), true) else {
        return 0;
    };
    if filtering() && WATCHED_MM.get_ptr(mm).is_none() {
        return 0;
    }
    let mut ev = event(kind::KHUGEPAGED_SCAN, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.nr = tp_field(&ctx, g(&K_SCAN_REFERENCED), false).unwrap_or(0) as u32;
    ev.aux = tp_field(&ctx, g(&K_SCAN_UNMAPPED), false).unwrap_or(0) as u32;
    let none = tp_field(&ctx, g(&K_SCAN_NONE), false).unwrap_or(0);
    let status = tp_field(&ctx, g(&K_SCAN_STATUS), false).unwrap_or(0);
    ev.entry = (none << 32) | (status & 0xffff_ffff);
    emit(ev);
    0
}

/// The first 7 arguments of a raw tracepoint with 6 or 7: the first six
/// read at once (a read per argument, at its own offset: the verifier
/// refuses a load through a computed context pointer), the seventh only
/// when `seventh` (the attach refuses a program that reads past the
/// tracepoint's last argument; a load-time constant, so that the verifier
/// visits that read only where it is wanted).
#[inline(always)]
fn raw_args7(ctx: &RawTracePointContext, seventh: bool) -> [u64; 7] {
    [
        ctx.arg::<u64>(0),
        ctx.arg::<u64>(1),
        ctx.arg::<u64>(2),
        ctx.arg::<u64>(3),
        ctx.arg::<u64>(4),
        ctx.arg::<u64>(5),
        if seventh { ctx.arg::<u64>(6) } else { 0 },
    ]
}

/// khugepaged scanned a PMD, as a raw tracepoint: (mm, folio, [writable,]
/// referenced, none_or_zero, status, unmapped), and the PMD: from the
/// collapse's isolation in this call, else from the last folio the scan
/// examined (still mapped where the scan stopped or the collapse failed).
#[raw_tracepoint(tracepoint = "mm_khugepaged_scan_pmd")]
pub fn khugepaged_scan_pmd_raw(ctx: RawTracePointContext) -> i32 {
    let mm = ctx.arg::<u64>(0);
    // This call's isolation, taken whether or not the scan is recorded.
    let t = tid();
    // SAFETY: a copy out of the map's value.
    let isolated = unsafe { KHP_PMD.get(t) }.copied();
    if isolated.is_some() {
        let _ = KHP_PMD.remove(t);
    }
    if filtering() && WATCHED_MM.get_ptr(mm).is_none() {
        return 0;
    }
    let places = [
        g(&K_SCANA_FOLIO),
        g(&K_SCANA_REFERENCED),
        g(&K_SCANA_NONE),
        g(&K_SCANA_STATUS),
        g(&K_SCANA_UNMAPPED),
    ];
    let args = raw_args7(&ctx, places.contains(&6));
    let arg = |global: &'static u64| args.get(g(global) as usize).copied().unwrap_or(0);
    let mut ev = event(kind::KHUGEPAGED_SCAN, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.nr = arg(&K_SCANA_REFERENCED) as u32;
    ev.aux = arg(&K_SCANA_UNMAPPED) as u32;
    let none = arg(&K_SCANA_NONE) & 0xffff_ffff;
    ev.entry = (none << 32) | (arg(&K_SCANA_STATUS) & 0xffff_ffff);
    ev.addr = isolated.unwrap_or_else(|| folio_pmd(arg(&K_SCANA_FOLIO)));
    emit(ev);
    0
}

/// The PMD of an anonymous folio from its index (its address in pages,
/// less any mremap() since its VMA was made); 0 if not anonymous (freed).
#[inline(always)]
fn folio_pmd(folio: u64) -> u64 {
    let Some(folio) = Head::read(folio) else {
        return 0;
    };
    let mapping = folio.get(g(&K_FOLIO_MAPPING)).unwrap_or(0);
    let shift = g(&K_PAGE_SHIFT);
    if mapping & PAGE_MAPPING_FLAGS != PAGE_MAPPING_ANON || shift >= 32 {
        return 0;
    }
    let index = folio.get(g(&K_FOLIO_INDEX)).unwrap_or(0);
    (index << shift) & !((1u64 << (shift + 9)) - 1)
}

/// A collapse isolated its PMD's pages: the PMD, for the scan's record.
/// Args: (folio or page, ...).
#[raw_tracepoint(tracepoint = "mm_collapse_huge_page_isolate")]
pub fn collapse_isolate(ctx: RawTracePointContext) -> i32 {
    let pmd = folio_pmd(ctx.arg::<u64>(0));
    if pmd != 0 {
        let _ = KHP_PMD.insert(tid(), pmd, 0);
    }
    0
}

/// A collapse attempt ended.
#[tracepoint(category = "huge_memory", name = "mm_collapse_huge_page")]
pub fn collapse_huge_page(ctx: TracePointContext) -> u32 {
    let Some(mm) = tp_field(&ctx, g(&K_COLL_MM), true) else {
        return 0;
    };
    if filtering() && WATCHED_MM.get_ptr(mm).is_none() {
        return 0;
    }
    let mut ev = event(kind::COLLAPSE, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.flags = (tp_field(&ctx, g(&K_COLL_ISOLATED), false).unwrap_or(0) & 1) as u8;
    ev.entry = tp_field(&ctx, g(&K_COLL_STATUS), false).unwrap_or(0) & 0xffff_ffff;
    emit(ev);
    0
}
