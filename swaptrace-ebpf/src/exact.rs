//! The swap path's own functions, by fentry/fexit or kprobe/kretprobe
//! (userspace loads one pair per metric): swap-in faults, readahead windows,
//! swap-cache lookups, free batches, zswap stores, loads and writebacks.
//! Kernel addresses of data symbols come from kallsyms through the
//! `K_*_ADDR` globals.

use crate::konst::{
    K_CI_SIZE, K_FOLIO_FLAGS, K_FOLIO_SWAP, K_LAST_RA_ADDR, K_LRU_REMOVED_RETRY, K_PG_READAHEAD,
    K_RA_HITS_ADDR, K_READS_OUTSIDE, K_SI_CLUSTER_INFO, K_SI_TYPE, K_SWAPFILE_CLUSTER, K_VMA_MM,
    K_VMF_ADDRESS, K_VMF_FLAGS, K_VMF_ORIG_PTE, K_VMF_VMA, K_WB_SWPENTRY_ARG, K_ZE_LRU,
    K_ZE_SWPENTRY, K_ZSWAP_LOAD_ALL, K_ZSWAP_RET_INT,
};
use crate::swap::{
    count_lost, emit, event, g, known, read_u64, selected, tid, BPF_RB_AVAIL_DATA,
    BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, EVENTS, WAKEUP_BYTES,
};
use crate::twin::twin;
use aya_ebpf::{
    helpers::generated::bpf_probe_read_kernel as probe_read_raw,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, bpf_probe_read_kernel},
    macros::{fentry, fexit, kprobe, kretprobe, map},
    maps::{LruHashMap, PerCpuArray},
    programs::{FEntryContext, FExitContext, ProbeContext, RetProbeContext},
    EbpfContext,
};
use swaptrace_common::{exact, flag, kind, read_kind, FreeBatchEvent, FREE_BATCH_MAX};

const RA: u64 = 1;
const CACHE: u64 = 2;
const FREE: u64 = 3;
const FREE_RANGE: u64 = 5;
const WRITEBACK: u64 = 6;

/// State kept from a function's entry to its return, per task and function.
#[repr(C)]
#[derive(Clone, Copy)]
struct Stash {
    ts: u64,
    a: u64,
    b: u64,
    c: u64,
    d: u64,
}

#[map]
static STASH: LruHashMap<u64, Stash> = LruHashMap::with_max_entries(16384, 0);

#[inline(always)]
fn key(which: u64) -> u64 {
    ((tid() as u64) << 8) | which
}

#[inline(always)]
fn read_int(addr: u64) -> u64 {
    if !known(addr) {
        return 0;
    }
    // SAFETY: bpf_probe_read_kernel checks the address.
    unsafe { bpf_probe_read_kernel(addr as *const u32) }.unwrap_or(0) as u64
}

#[inline(always)]
fn stash(which: u64, a: u64, b: u64) {
    let s = Stash {
        ts: unsafe { bpf_ktime_get_ns() },
        a,
        b,
        c: 0,
        d: 0,
    };
    let _ = STASH.insert(key(which), s, 0);
}

#[inline(always)]
fn unstash(which: u64) -> Option<Stash> {
    let k = key(which);
    // SAFETY: a copy out of this task's slot.
    let s = unsafe { STASH.get(k) }.copied();
    let _ = STASH.remove(k);
    s
}

// ---- readahead window: swap_cluster_readahead(entry, ...) ----

#[inline(always)]
fn ra_enter(entry: u64) {
    if selected() {
        stash(RA, entry, read_int(g(&K_RA_HITS_ADDR)));
    }
}

#[inline(always)]
fn ra_exit(flags: u8) {
    let Some(s) = unstash(RA) else {
        return;
    };
    let mut ev = event(kind::RA_WINDOW, s.ts);
    ev.entry = s.a;
    ev.aux = s.b as u32;
    ev.nr = read_int(g(&K_LAST_RA_ADDR)) as u32;
    ev.flags = flags | exact::RA_LAST_READAHEAD_PAGES;
    emit(ev);
}

#[kprobe]
pub fn ra_kprobe(ctx: ProbeContext) -> u32 {
    ra_enter(ctx.arg::<u64>(0).unwrap_or(0));
    0
}

#[kretprobe]
pub fn ra_kretprobe(_ctx: RetProbeContext) -> u32 {
    ra_exit(0);
    0
}

twin! {
#[fentry(function = "swap_cluster_readahead")]
pub fn ra_fentry / ra_fentry_2 (ctx: FEntryContext) -> u32 {
    ra_enter(ctx.arg::<u64>(0));
    0
}
}

twin! {
#[fexit(function = "swap_cluster_readahead")]
pub fn ra_fexit / ra_fexit_2 (_ctx: FExitContext) -> u32 {
    ra_exit(exact::FENTRY);
    0
}
}

// ---- swap-cache lookup: swap_cache_get_folio(entry, vma, addr) ----

#[inline(always)]
fn cache_enter(entry: u64) {
    if selected() {
        stash(CACHE, entry, read_int(g(&K_RA_HITS_ADDR)));
    }
}

#[inline(always)]
fn cache_exit(ret: u64, flags: u8) {
    let Some(s) = unstash(CACHE) else {
        return;
    };
    let mut ev = event(kind::CACHE_LOOKUP, s.ts);
    ev.entry = s.a;
    ev.flags = flags;
    if ret != 0 {
        ev.flags |= exact::HIT;
        if read_int(g(&K_RA_HITS_ADDR)) != s.b {
            ev.flags |= exact::RA_HIT;
        }
    }
    emit(ev);
}

#[kprobe]
pub fn cache_kprobe(ctx: ProbeContext) -> u32 {
    cache_enter(ctx.arg::<u64>(0).unwrap_or(0));
    0
}

#[kretprobe]
pub fn cache_kretprobe(ctx: RetProbeContext) -> u32 {
    cache_exit(ctx.ret::<u64>(), 0);
    0
}

twin! {
#[fentry(function = "swap_cache_get_folio")]
pub fn cache_fentry / cache_fentry_2 (ctx: FEntryContext) -> u32 {
    cache_enter(ctx.arg::<u64>(0));
    0
}
}

twin! {
#[fexit(function = "swap_cache_get_folio")]
pub fn cache_fexit / cache_fexit_2 (ctx: FExitContext) -> u32 {
    cache_exit(ctx.ret::<u64>().unwrap_or(0), exact::FENTRY);
    0
}
}

// ---- swap-cache hit (6.18+): swap_update_readahead(folio, vma, addr) ----

/// `swap_update_readahead()` runs for each folio found in the swap cache at
/// swap-in; it clears PG_readahead (`folio_test_clear_readahead`) and counts
/// SWAP_RA_HIT when it was set, so the bit read at entry is the readahead hit.
#[inline(always)]
fn cache_hit(folio: u64, flags: u8) {
    if !selected() {
        return;
    }
    let mut ev = event(kind::CACHE_LOOKUP, unsafe { bpf_ktime_get_ns() });
    ev.entry = read_u64(folio, g(&K_FOLIO_SWAP)).unwrap_or(0);
    ev.flags = flags | exact::HIT;
    let bit = g(&K_PG_READAHEAD);
    if bit < 64 {
        if let Some(f) = read_u64(folio, g(&K_FOLIO_FLAGS)) {
            if (f >> bit) & 1 != 0 {
                ev.flags |= exact::RA_HIT;
            }
        }
    }
    emit(ev);
}

#[kprobe]
pub fn cache_ra_kprobe(ctx: ProbeContext) -> u32 {
    cache_hit(ctx.arg::<u64>(0).unwrap_or(0), 0);
    0
}

twin! {
#[fentry(function = "swap_update_readahead")]
pub fn cache_ra_fentry / cache_ra_fentry_2 (ctx: FEntryContext) -> u32 {
    cache_hit(ctx.arg::<u64>(0), exact::FENTRY);
    0
}
}

// ---- free batches: swapcache_free_entries(entries, n) ----

/// A batch's entries as passed in: the kernel sorts them by device inside
/// (sorted swap-entry freeing, 4.12), so they are copied at entry, not at
/// return.
#[repr(C)]
#[derive(Clone, Copy)]
struct Entries {
    v: [u64; FREE_BATCH_MAX],
}

#[map]
static FREE_SCRATCH: PerCpuArray<Entries> = PerCpuArray::with_max_entries(1, 0);
#[map]
static FREE_ENTRIES: LruHashMap<u32, Entries> = LruHashMap::with_max_entries(1024, 0);

#[inline(always)]
fn free_enter(entries: u64, n: u64) {
    stash(FREE, entries, n);
    let Some(scratch) = FREE_SCRATCH.get_ptr_mut(0) else {
        return;
    };
    let size = (n.min(FREE_BATCH_MAX as u64) * 8) as u32;
    if size == 0 || size > 512 {
        return;
    }
    // SAFETY: this CPU's scratch value, 512 bytes; the helper checks the source.
    unsafe {
        if probe_read_raw(scratch.cast(), size, entries as *const core::ffi::c_void) != 0 {
            return;
        }
        // By reference: a 512-byte value would not fit the eBPF stack.
        #[allow(clippy::needless_borrows_for_generic_args)]
        let _ = FREE_ENTRIES.insert(tid(), &*scratch, 0);
    }
}

/// A free batch at return: the entries copied at entry, or (`range`) the
/// range `s.a` (first entry) + `s.b` (count) of one cluster.
#[inline(always)]
fn free_exit(s: Stash, flags: u8, range: bool) {
    let Some(mut slot) = EVENTS.reserve::<FreeBatchEvent>(0) else {
        count_lost(kind::FREE_BATCH);
        return;
    };
    let now = unsafe { bpf_ktime_get_ns() };
    let n = if range {
        (s.b & 0xffff_ffff) as usize
    } else {
        (s.b as usize).min(FREE_BATCH_MAX)
    };
    let pid_tgid = bpf_get_current_pid_tgid();
    let p = slot.as_mut_ptr();
    // SAFETY: `p` is the reserved slot; the entries are read by the helper,
    // which checks the source address.
    unsafe {
        let mut head = event(kind::FREE_BATCH, s.ts);
        head.nr = n as u32;
        head.aux = now.saturating_sub(s.ts).min(u32::MAX as u64) as u32;
        head.flags = flags | if range { exact::RANGE } else { 0 };
        (*p).head.ts_ns = head.ts_ns;
        (*p).head.mm = 0;
        (*p).head.addr = 0;
        (*p).head.entry = if range { s.a } else { 0 };
        (*p).head.tid = pid_tgid as u32;
        (*p).head.pid = (pid_tgid >> 32) as u32;
        (*p).head.nr = head.nr;
        (*p).head.aux = head.aux;
        (*p).head.kind = head.kind;
        (*p).head.flags = head.flags;
        (*p).head.zero = 0;
        (*p).head.zswap = 0;
        (*p).head.flags2 = 0;
        (*p).head._pad = 0;
        (*p).head.comm = aya_ebpf::helpers::bpf_get_current_comm().unwrap_or([0; 16]);
        if range {
            // No entry array: zeroed, not left with stale ring memory.
            core::ptr::write_bytes(core::ptr::addr_of_mut!((*p).entries), 0, 1);
        } else {
            copy_entries(p, n);
        }
    }
    let wake = if EVENTS.query(BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES {
        BPF_RB_FORCE_WAKEUP
    } else {
        BPF_RB_NO_WAKEUP
    };
    slot.submit(wake);
}

/// Copies the `n` entries stashed at entry into the event (none if gone).
#[inline(always)]
unsafe fn copy_entries(p: *mut FreeBatchEvent, n: usize) {
    // SAFETY: the caller's reserved slot; the helper checks the source.
    unsafe {
        let dst = core::ptr::addr_of_mut!((*p).entries).cast::<core::ffi::c_void>();
        let size = (n * 8) as u32;
        // The entries as they came in; without them, none (not the sorted ones).
        let src = FREE_ENTRIES
            .get_ptr(tid())
            .map_or(core::ptr::null(), |e| e.cast::<core::ffi::c_void>());
        if size == 0 || src.is_null() || probe_read_raw(dst, size & 0x3ff, src) != 0 {
            (*p).head.nr = 0;
        }
        let _ = FREE_ENTRIES.remove(tid());
    }
}

#[kprobe]
pub fn free_kprobe(ctx: ProbeContext) -> u32 {
    if selected() {
        let entries = ctx.arg::<u64>(0).unwrap_or(0);
        let n = ctx.arg::<u64>(1).unwrap_or(0) & 0xffff_ffff;
        free_enter(entries, n);
    }
    0
}

#[kretprobe]
pub fn free_kretprobe(_ctx: RetProbeContext) -> u32 {
    if let Some(s) = unstash(FREE) {
        free_exit(s, 0, false);
    }
    0
}

twin! {
#[fentry(function = "swapcache_free_entries")]
pub fn free_fentry / free_fentry_2 (ctx: FEntryContext) -> u32 {
    if selected() {
        let entries = ctx.arg::<u64>(0);
        let n = ctx.arg::<u64>(1) & 0xffff_ffff;
        free_enter(entries, n);
    }
    0
}
}

twin! {
#[fexit(function = "swapcache_free_entries")]
pub fn free_fexit / free_fexit_2 (_ctx: FExitContext) -> u32 {
    if let Some(s) = unstash(FREE) {
        free_exit(s, exact::FENTRY, false);
    }
    0
}
}

// ---- free ranges (6.15+): the last references of one cluster's entries ----
// 6.15-6.18: swap_entries_free(si, ci, entry, nr), under the cluster lock.
// 7.x: __swap_cluster_free_entries(si, ci, ci_start, nr_pages), likewise.

#[inline(always)]
fn free_range_enter(first: u64, nr: u64) {
    if selected() && first != u64::MAX {
        stash(FREE_RANGE, first, nr & 0xffff_ffff);
    }
}

#[inline(always)]
fn free_range_exit(flags: u8) {
    if let Some(s) = unstash(FREE_RANGE) {
        free_exit(s, flags, true);
    }
}

/// The swap entry of `ci_start` in cluster `ci` of device `si`: the cluster
/// index is `ci`'s place in `si->cluster_info[]`.
#[inline(always)]
fn cluster_entry(si: u64, ci: u64, ci_start: u64) -> u64 {
    let size = g(&K_CI_SIZE);
    let (Some(ty), Some(base)) = (
        read_u64(si, g(&K_SI_TYPE)),
        read_u64(si, g(&K_SI_CLUSTER_INFO)),
    ) else {
        return u64::MAX;
    };
    if !known(size) || size == 0 || ci < base {
        return u64::MAX;
    }
    let idx = (ci - base) / size;
    ((ty & 0x1f) << 58) | (idx * g(&K_SWAPFILE_CLUSTER) + (ci_start & 0xffff_ffff))
}

twin! {
#[fentry(function = "swap_entries_free")]
pub fn free_range_fentry / free_range_fentry_2 (ctx: FEntryContext) -> u32 {
    free_range_enter(ctx.arg::<u64>(2), ctx.arg::<u64>(3));
    0
}
}

#[kprobe]
pub fn free_range_kprobe(ctx: ProbeContext) -> u32 {
    free_range_enter(
        ctx.arg::<u64>(2).unwrap_or(u64::MAX),
        ctx.arg::<u64>(3).unwrap_or(0),
    );
    0
}

/// Argument `i` of an fentry program as a plain number: the verifier types
/// BTF pointer arguments and refuses arithmetic on them (`ci - base`).
#[inline(always)]
fn scalar_arg(ctx: &FEntryContext, i: usize) -> u64 {
    let p = (ctx.as_ptr() as *const u64).wrapping_add(i);
    // SAFETY: the helper reads the trampoline's argument slot.
    unsafe { bpf_probe_read_kernel(p) }.unwrap_or(0)
}

twin! {
#[fentry(function = "__swap_cluster_free_entries")]
pub fn free_cluster_fentry / free_cluster_fentry_2 (ctx: FEntryContext) -> u32 {
    let e = cluster_entry(scalar_arg(&ctx, 0), scalar_arg(&ctx, 1), ctx.arg::<u64>(2));
    free_range_enter(e, ctx.arg::<u64>(3));
    0
}
}

#[kprobe]
pub fn free_cluster_kprobe(ctx: ProbeContext) -> u32 {
    let a = |i| ctx.arg::<u64>(i).unwrap_or(0);
    free_range_enter(cluster_entry(a(0), a(1), a(2)), a(3));
    0
}

twin! {
#[fexit(function = "swap_entries_free")]
pub fn free_range_fexit / free_range_fexit_2 (_ctx: FExitContext) -> u32 {
    free_range_exit(exact::FENTRY);
    0
}
}

twin! {
#[fexit(function = "__swap_cluster_free_entries")]
pub fn free_cluster_fexit / free_cluster_fexit_2 (_ctx: FExitContext) -> u32 {
    free_range_exit(exact::FENTRY);
    0
}
}

#[kretprobe]
pub fn free_range_kretprobe(_ctx: RetProbeContext) -> u32 {
    free_range_exit(0);
    0
}

// ---- zswap: zswap_store/zswap_load (bool), zswap_frontswap_* (int) ----

#[inline(always)]
fn zswap(ret: u64, load: bool, flags: u8) {
    // Bit 0: loads return int 0 on success, bit 1: stores do (else bool).
    let int = (g(&K_ZSWAP_RET_INT) >> if load { 0 } else { 1 }) & 1 == 1;
    let ok = if int {
        ret & 0xffff_ffff == 0
    } else {
        ret & 0xff != 0
    };
    // The swap-out that follows in this task (pageout()'s tracepoint) was
    // stored, or refused and written (whoever the task is).
    if !load {
        crate::swap::note_out_kind(if ok { flag::OUT_ZSWAP } else { flag::OUT_IO });
    } else {
        fault_zswap_load(ok);
    }
    if !selected() {
        return;
    }
    let mut ev = event(kind::ZSWAP_OP, unsafe { bpf_ktime_get_ns() });
    ev.flags = flags | if load { exact::LOAD } else { 0 } | if ok { exact::OK } else { 0 };
    emit(ev);
}

#[kretprobe]
pub fn zswap_store_kretprobe(ctx: RetProbeContext) -> u32 {
    zswap(ctx.ret::<u64>(), false, 0);
    0
}

#[kretprobe]
pub fn zswap_load_kretprobe(ctx: RetProbeContext) -> u32 {
    zswap(ctx.ret::<u64>(), true, 0);
    0
}

#[kprobe]
pub fn zswap_store_kprobe(_ctx: ProbeContext) -> u32 {
    crate::swap::note_store_entered();
    0
}

twin! {
#[fentry(function = "zswap_store")]
pub fn zswap_store_fentry / zswap_store_fentry_2 (_ctx: FEntryContext) -> u32 {
    crate::swap::note_store_entered();
    0
}
}

twin! {
#[fexit(function = "zswap_store")]
pub fn zswap_store_fexit / zswap_store_fexit_2 (ctx: FExitContext) -> u32 {
    zswap(ctx.ret::<u64>().unwrap_or(0), false, exact::FENTRY);
    0
}
}

twin! {
#[fexit(function = "zswap_load")]
pub fn zswap_load_fexit / zswap_load_fexit_2 (ctx: FExitContext) -> u32 {
    zswap(ctx.ret::<u64>().unwrap_or(0), true, exact::FENTRY);
    0
}
}

/// `zswap_writeback_entry()` returned 0: one page written back, of
/// `swpentry` (its second argument since 6.8), else unknown (0).
#[inline(always)]
fn zswap_writeback(ret: u64, swpentry: u64, flags: u8) {
    if ret & 0xffff_ffff == 0 {
        zswap_written_back(swpentry, flags);
    }
}

/// One page written back from zswap to the swap device (ZSWPWB): `swpentry`
/// its swap entry's value plus one, 0 when unknown. Shrinker and pool-limit
/// writeback run in kworkers and kswapd, so this is system-wide, as the
/// counter is.
#[inline(always)]
fn zswap_written_back(swpentry: u64, flags: u8) {
    let mut ev = event(kind::ZSWAP_WRITEBACK, unsafe { bpf_ktime_get_ns() });
    ev.nr = 1;
    ev.flags = flags;
    if swpentry != 0 {
        ev.entry = swpentry - 1;
        ev.flags |= exact::ENTRY;
    }
    emit(ev);
}

twin! {
#[fexit(function = "zswap_writeback_entry")]
pub fn zswap_wb_fexit / zswap_wb_fexit_2 (ctx: FExitContext) -> u32 {
    let swpentry = if g(&K_WB_SWPENTRY_ARG) == 1 {
        ctx.arg::<u64>(1).wrapping_add(1)
    } else {
        0
    };
    zswap_writeback(ctx.ret::<u64>().unwrap_or(1), swpentry, exact::FENTRY);
    0
}
}

#[kretprobe]
pub fn zswap_wb_kretprobe(ctx: RetProbeContext) -> u32 {
    zswap_writeback(ctx.ret::<u64>(), 0, 0);
    0
}

/// `shrink_memcg_cb()`, the zswap LRU walk's callback, which 6.18 inlines
/// `zswap_writeback_entry()` into: LRU_REMOVED_RETRY when it wrote one
/// entry back (failures return LRU_RETRY or LRU_STOP, a second chance
/// LRU_ROTATE). The entry, read at the call (it is freed by the return),
/// comes from the stash.
#[inline(always)]
fn zswap_writeback_cb(ret: u64, flags: u8) {
    let swpentry = unstash(WRITEBACK).map_or(0, |s| s.a);
    if ret & 0xffff_ffff == g(&K_LRU_REMOVED_RETRY) {
        zswap_written_back(swpentry, flags);
    }
}

twin! {
#[fentry(function = "shrink_memcg_cb")]
pub fn zswap_wb_cb_fentry / zswap_wb_cb_fentry_2 (ctx: FEntryContext) -> u32 {
    // The list item is `&zswap_entry->lru`.
    let (lru, swp) = (g(&K_ZE_LRU), g(&K_ZE_SWPENTRY));
    if known(lru) && known(swp) {
        let entry = ctx.arg::<u64>(0).wrapping_sub(lru);
        if let Some(v) = read_u64(entry, swp) {
            stash(WRITEBACK, v.wrapping_add(1), 0);
        }
    }
    0
}
}

twin! {
#[fexit(function = "shrink_memcg_cb")]
pub fn zswap_wb_cb_fexit / zswap_wb_cb_fexit_2 (ctx: FExitContext) -> u32 {
    zswap_writeback_cb(ctx.ret::<u64>().unwrap_or(u64::MAX), exact::FENTRY);
    0
}
}

#[kretprobe]
pub fn zswap_wb_cb_kretprobe(ctx: RetProbeContext) -> u32 {
    zswap_writeback_cb(ctx.ret::<u64>(), 0);
    0
}

// ---- swap-in faults: do_swap_page(vmf), with the reads made inside it ----

const FAULT: u64 = 4;
const VM_FAULT_MAJOR: u64 = 0x4;
/// Swap types from here up are migration, device, hwpoison and marker
/// entries (MAX_SWAPFILES is 32 less those, at least 24 on x86_64).
const MAX_SWAPFILES: u64 = 24;

const VM_FAULT_RETRY: u64 = 0x400;
/// Stash.d bit: an earlier attempt of this fault was major.
const WAS_MAJOR: u64 = 1;
/// Stash.d bit: count_memcg_events gave the kind of this fault's reads;
/// I/O pages in d bits 16..32, zero pages 32..48, zswap loads 48..64.
const KINDS: u64 = 2;
/// The fault writes: `FAULT_FLAG_WRITE` at entry (do_swap_page clears it
/// once it has mapped the page writable).
const WRITES: u64 = 4;
const IO_SHIFT: u64 = 16;
const ZERO_SHIFT: u64 = 32;
const ZSWAP_SHIFT: u64 = 48;

/// do_swap_page() entry: a = vmf, b = reads, c = the swap PTE (read now:
/// the kernel overwrites vmf->orig_pte with the new PTE once mapped), d = flags.
#[inline(always)]
fn fault_enter(vmf: u64) {
    if !selected() {
        return;
    }
    let pte = read_u64(vmf, g(&K_VMF_ORIG_PTE)).unwrap_or(0);
    // A retried attempt (VM_FAULT_RETRY) continues the same fault.
    if let Some(s) = STASH.get_ptr_mut(key(FAULT)) {
        // SAFETY: this task's slot.
        let s = unsafe { &mut *s };
        if s.c == pte && s.d & WAS_MAJOR != 0 {
            s.a = vmf;
            return;
        }
    }
    // FAULT_FLAG_WRITE; the flags are an enum (4 bytes), low half of the word.
    let writes = read_u64(vmf, g(&K_VMF_FLAGS)).unwrap_or(0) & 1 != 0;
    let s = Stash {
        ts: unsafe { bpf_ktime_get_ns() },
        a: vmf,
        b: 0,
        c: pte,
        d: if writes { WRITES } else { 0 },
    };
    let _ = STASH.insert(key(FAULT), s, 0);
}

/// Counts a swap read made inside this task's pending do_swap_page();
/// outside one (swapoff, GUP), reports it where no count_memcg_events does.
#[inline(always)]
fn fault_read() {
    if let Some(s) = STASH.get_ptr_mut(key(FAULT)) {
        // SAFETY: this task's slot.
        unsafe { (*s).b += 1 };
    } else if g(&K_READS_OUTSIDE) == 1 && selected() {
        let mut ev = event(kind::SWAP_READ, unsafe { bpf_ktime_get_ns() });
        ev.nr = 1;
        ev.aux = read_kind::UNKNOWN;
        crate::swap::willneed(&mut ev);
        emit(ev);
    }
}

/// Stash.b of a fault: swap reads in bits 0..32, zswap_load() hits in
/// 32..48 and misses in 48..64.
const HIT_SHIFT: u64 = 32;
const MISS_SHIFT: u64 = 48;

/// A zswap_load() result inside this task's pending do_swap_page().
#[inline(always)]
fn fault_zswap_load(ok: bool) {
    if let Some(s) = STASH.get_ptr_mut(key(FAULT)) {
        let shift = if ok { HIT_SHIFT } else { MISS_SHIFT };
        // SAFETY: this task's slot.
        let s = unsafe { &mut *s };
        if (s.b >> shift) & 0xffff < 0xffff {
            s.b += 1 << shift;
        }
    }
}

/// `count_memcg_events(PSWPIN|SWPIN_ZERO|ZSWPIN, n)` in this task: when an
/// exact do_swap_page() is pending, its read is counted by kind there (the
/// counters saturate at 16 bits). False when no exact fault is pending.
#[inline(always)]
pub(crate) fn fault_read_kind(rk: u32, n: u64) -> bool {
    let Some(s) = STASH.get_ptr_mut(key(FAULT)) else {
        return false;
    };
    let shift = match rk {
        read_kind::IO => IO_SHIFT,
        read_kind::ZERO => ZERO_SHIFT,
        _ => ZSWAP_SHIFT,
    };
    // SAFETY: this task's slot.
    let s = unsafe { &mut *s };
    let old = (s.d >> shift) & 0xffff;
    let new = (old + n).min(0xffff);
    s.d = (s.d & !(0xffff << shift)) | (new << shift) | KINDS;
    true
}

/// The start of this task's pending do_swap_page(), if one is.
#[inline(always)]
pub(crate) fn fault_start() -> Option<u64> {
    // SAFETY: the value is copied out at once.
    unsafe { STASH.get(key(FAULT)) }.map(|s| s.ts)
}

#[inline(always)]
fn fault_exit(ret: u64, flags: u8) {
    if ret & VM_FAULT_RETRY != 0 {
        // The fault will be retried: keep its start, reads and kind.
        if let Some(s) = STASH.get_ptr_mut(key(FAULT)) {
            if ret & VM_FAULT_MAJOR != 0 {
                // SAFETY: this task's slot.
                unsafe { (*s).d |= WAS_MAJOR };
            }
        }
        return;
    }
    let Some(s) = unstash(FAULT) else {
        return;
    };
    let vmf = s.a;
    let pte = s.c;
    // x86_64 swap PTE: type in the top 5 bits, offset inverted from bit 9.
    if pte == 0 || pte & 1 != 0 {
        return;
    }
    let ty = pte >> 59;
    if ty >= MAX_SWAPFILES {
        crate::swap::anomaly!("swap PTE {:x}: type {} out of range", pte, ty);
        return;
    }
    let offset = ((!pte) << 5) >> 14;
    let now = unsafe { bpf_ktime_get_ns() };
    let mut ev = event(kind::SWAP_FAULT, s.ts);
    ev.aux = now.saturating_sub(s.ts).min(u32::MAX as u64) as u32;
    ev.addr = read_u64(vmf, g(&K_VMF_ADDRESS)).unwrap_or(0);
    ev.mm = read_u64(read_u64(vmf, g(&K_VMF_VMA)).unwrap_or(0), g(&K_VMA_MM)).unwrap_or(0);
    ev.entry = (ty << 58) | offset;
    let reads = s.b & 0xffff_ffff;
    ev.nr = reads as u32;
    let (hits, misses) = ((s.b >> HIT_SHIFT) & 0xffff, (s.b >> MISS_SHIFT) & 0xffff);
    if s.d & KINDS != 0 {
        ev.nr = ((s.d >> IO_SHIFT) & 0xffff) as u32;
        ev.zero = ((s.d >> ZERO_SHIFT) & 0xffff) as u16;
        ev.zswap = ((s.d >> ZSWAP_SHIFT) & 0xffff) as u16;
        ev.flags2 = swaptrace_common::exact2::KINDS;
    } else if hits | misses != 0 {
        // No count_memcg_events (before 6.13): swap_read_folio() asks zswap
        // first, after the zero map (6.10+); what zswap misses is read
        // from disk. Frontswap asks zswap only for pages it holds.
        let io = if g(&K_ZSWAP_LOAD_ALL) == 1 {
            misses
        } else {
            reads.saturating_sub(hits)
        };
        let io = io.min(reads);
        ev.nr = io as u32;
        ev.zswap = hits.min(reads) as u16;
        ev.zero = reads.saturating_sub(hits).saturating_sub(io) as u16;
        ev.flags2 = swaptrace_common::exact2::KINDS;
    }
    ev.flags = flags | exact::ENTRY;
    if ret & VM_FAULT_MAJOR != 0 || s.d & WAS_MAJOR != 0 {
        ev.flags |= swaptrace_common::flag::MAJOR;
    }
    if s.d & WRITES != 0 {
        ev.flags |= swaptrace_common::flag::WRITE;
    }
    emit(ev);
}

#[kprobe]
pub fn fault_kprobe(ctx: ProbeContext) -> u32 {
    fault_enter(ctx.arg::<u64>(0).unwrap_or(0));
    0
}

#[kretprobe]
pub fn fault_kretprobe(ctx: RetProbeContext) -> u32 {
    fault_exit(ctx.ret::<u64>() & 0xffff_ffff, 0);
    0
}

#[kprobe]
pub fn read_kprobe(_ctx: ProbeContext) -> u32 {
    fault_read();
    0
}

twin! {
#[fentry(function = "do_swap_page")]
pub fn fault_fentry / fault_fentry_2 (ctx: FEntryContext) -> u32 {
    fault_enter(ctx.arg::<u64>(0));
    0
}
}

twin! {
#[fexit(function = "do_swap_page")]
pub fn fault_fexit / fault_fexit_2 (ctx: FExitContext) -> u32 {
    fault_exit(ctx.ret::<u64>().unwrap_or(0) & 0xffff_ffff, exact::FENTRY);
    0
}
}

twin! {
#[fentry(function = "swap_read_folio")]
pub fn read_fentry / read_fentry_2 (_ctx: FEntryContext) -> u32 {
    fault_read();
    0
}
}

// ---- swapon(2)/swapoff(2): the system call functions themselves ----
// No syscall tracepoint: enabling any of them sends every system call of
// the host through the tracing slow path (TIF_SYSCALL_TRACEPOINT).

#[inline(always)]
fn syscall_event(k: u8, ret: Option<i64>) {
    let mut ev = event(k, unsafe { bpf_ktime_get_ns() });
    if let Some(r) = ret {
        ev.entry = r as u64;
    }
    emit(ev);
}

twin! {
#[fentry(function = "__x64_sys_swapoff")]
pub fn swapoff_fentry / swapoff_fentry_2 (_ctx: FEntryContext) -> u32 {
    syscall_event(kind::SWAPOFF_ENTER, None);
    0
}
}

twin! {
#[fexit(function = "__x64_sys_swapoff")]
pub fn swapoff_fexit / swapoff_fexit_2 (ctx: FExitContext) -> u32 {
    syscall_event(kind::SWAPOFF_EXIT, Some(ctx.ret::<i64>().unwrap_or(0)));
    0
}
}

twin! {
#[fentry(function = "__x64_sys_swapon")]
pub fn swapon_fentry / swapon_fentry_2 (_ctx: FEntryContext) -> u32 {
    syscall_event(kind::SWAPON_ENTER, None);
    0
}
}

twin! {
#[fexit(function = "__x64_sys_swapon")]
pub fn swapon_fexit / swapon_fexit_2 (ctx: FExitContext) -> u32 {
    syscall_event(kind::SWAPON_EXIT, Some(ctx.ret::<i64>().unwrap_or(0)));
    0
}
}

#[kprobe]
pub fn swapoff_kprobe(_ctx: ProbeContext) -> u32 {
    syscall_event(kind::SWAPOFF_ENTER, None);
    0
}

#[kretprobe]
pub fn swapoff_kretprobe(ctx: RetProbeContext) -> u32 {
    syscall_event(kind::SWAPOFF_EXIT, Some(ctx.ret::<i64>()));
    0
}

#[kprobe]
pub fn swapon_kprobe(_ctx: ProbeContext) -> u32 {
    syscall_event(kind::SWAPON_ENTER, None);
    0
}

#[kretprobe]
pub fn swapon_kretprobe(ctx: RetProbeContext) -> u32 {
    syscall_event(kind::SWAPON_EXIT, Some(ctx.ret::<i64>()));
    0
}
