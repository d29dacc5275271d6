//! The kernel's swap cache, as the replay needs it: which swap-cache folios
//! exist (written to the device or stored, swapped in, read ahead) and
//! when each is freed (`kmem:mm_page_free`): an `OUT_FREED` event with its
//! entry.

use crate::twin::twin;
use aya_ebpf::{
    helpers::bpf_ktime_get_ns,
    macros::{fentry, kprobe, map, raw_tracepoint},
    maps::{Array, LruHashMap, PerCpuArray},
    programs::{FEntryContext, ProbeContext, RawTracePointContext},
};
use swaptrace_common::{kind, MAX_FOLIO_ORDER};

use crate::konst::*;
use crate::swap::{emit, event, g, read_u64, selected, traced_fault_start};

/// Swap-cache folios by address, with their swap entry: written to the
/// device (they stay in the swap cache until reclaim frees them), swapped
/// in or read ahead (a clean one may be freed with its slot kept).
#[map]
static LEAVING: LruHashMap<u64, Written> = LruHashMap::with_max_entries(1 << 17, 0);

/// A bit per struct page (64 bytes) of the watched folios, modulo 2^23
/// pages (32 GiB): a page free tests one bit, not a hash lookup.
const WATCH_BITS: u64 = 1 << 23;
#[map]
static WATCH: Array<u64> = Array::with_max_entries((WATCH_BITS / 64) as u32, 0);

/// The word of `WATCH` and the bit of the page at `page`.
#[inline(always)]
fn watch_bit(page: u64) -> (u32, u64) {
    let i = (page >> 6) & (WATCH_BITS - 1);
    ((i >> 6) as u32, 1u64 << (i & 63))
}

/// Watches the swap-cache folio at `folio`, of swap entry `entry`, until
/// it is freed.
#[inline(always)]
pub(crate) fn watch(folio: u64, entry: u64, ts: u64) {
    let _ = LEAVING.insert(folio, Written { entry, ts }, 0);
    let (word, bit) = watch_bit(folio);
    if let Some(w) = WATCH.get_ptr_mut(word) {
        // SAFETY: an array slot; a lost race costs one lookup or one free.
        unsafe { *w |= bit };
    }
}

/// Whether `folio`'s bit of `WATCH` is set (a watched folio's is).
#[inline(always)]
fn watch_bit_set(folio: u64) -> bool {
    let (word, bit) = watch_bit(folio);
    WATCH.get(word).is_some_and(|w| w & bit != 0)
}

/// Whether the folio at `folio` is watched.
#[inline(always)]
pub(crate) fn watched(folio: u64) -> bool {
    // SAFETY: only tested for presence.
    unsafe { LEAVING.get(folio) }.is_some()
}

/// Watches a swap-cache folio added to an LRU (a swap-in or a readahead
/// page), in a task the recording selects.
#[inline(always)]
fn watch_read(folio: u64) {
    if !selected() {
        return;
    }
    if let Some(swap) = read_u64(folio, g(&K_FOLIO_SWAP)).filter(|&s| s != 0) {
        watch(folio, swap, unsafe { bpf_ktime_get_ns() });
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Written {
    entry: u64,
    ts: u64,
}

twin! {
/// Args: (folio). A folio added to an LRU list: one in the swap cache (a
/// swap-in or a readahead page) is watched until freed, as a written one.
#[raw_tracepoint(tracepoint = "mm_lru_insertion")]
pub fn mm_lru_insertion / mm_lru_insertion_2 (ctx: RawTracePointContext) -> i32 {
    // Not the process's bit: whichever task fills a CPU's LRU batch adds
    // the folios of all (lru_add_drain()), a swap-in's among them.
    let (cache, backed) = (g(&K_PG_SWAPCACHE), g(&K_PG_SWAPBACKED));
    if cache >= 64 || backed >= 64 {
        return 0;
    }
    // folio_test_swapcache(): PG_swapcache is PG_checked in a file folio.
    let want = (1u64 << cache) | (1u64 << backed);
    let folio = ctx.arg::<u64>(0);
    let flags = read_u64(folio, g(&K_FOLIO_FLAGS)).unwrap_or(0);
    if flags & want != want {
        return 0;
    }
    watch_read(folio);
    0
}
}

twin! {
/// Args: (page, order). Every page freed; only the watched swap-cache
/// folios (a bit, then a lookup) send an event.
#[raw_tracepoint(tracepoint = "mm_page_free")]
pub fn mm_page_free / mm_page_free_2 (ctx: RawTracePointContext) -> i32 {
    let page = ctx.arg::<u64>(0);
    let (word, bit) = watch_bit(page);
    let Some(bits) = WATCH.get_ptr_mut(word) else {
        return 0;
    };
    // SAFETY: an array slot.
    if unsafe { *bits } & bit == 0 {
        return 0;
    }
    // SAFETY: the value is copied out at once.
    let Some(&w) = (unsafe { LEAVING.get(page) }) else {
        return 0;
    };
    let _ = LEAVING.remove(page);
    // SAFETY: as above; a folio 32 GiB of pages apart may share the bit.
    unsafe { *bits &= !bit };
    // Freed by a fault's own reclaim (its readahead's allocations): stamped
    // with the fault's start, so that it precedes the fault's reads (not
    // its own write, made in the same reclaim).
    let ts = traced_fault_start()
        .or_else(crate::exact::fault_start)
        .unwrap_or_else(|| unsafe { bpf_ktime_get_ns() })
        .max(w.ts);
    let mut ev = event(kind::OUT_FREED, ts);
    ev.entry = w.entry;
    // A large folio freed whole: its pages' entries follow the head's.
    let order = ctx.arg::<u64>(1) & 0xffff_ffff;
    ev.nr = if order <= MAX_FOLIO_ORDER as u64 {
        1 << order
    } else {
        1
    };
    emit(ev);
    0
}
}

/// Folios `shrink_folio_list()` is given per call, at most: MGLRU isolates
/// up to MAX_LRU_BATCH (64), the classic LRU SWAP_CLUSTER_MAX (32).
const ISOLATED_MAX: u32 = 128;

/// The folios reclaim isolated (`folio_list`, linked through `folio.lru`):
/// each watched one that is in the swap cache, dirty and never mapped (read
/// ahead from zswap: `pageout()` keeps it where only anon and shmem folios
/// are written) is an `ISOLATED` event with its entry.
#[inline(always)]
fn isolated(head: u64) {
    let (lru, dirty, cache) = (g(&K_FOLIO_LRU), g(&K_PG_DIRTY), g(&K_PG_SWAPCACHE));
    if g(&K_ISOLATED_ON) != 1 || lru > 4096 || dirty >= 64 || cache >= 64 {
        return;
    }
    let want = (1u64 << dirty) | (1u64 << cache);
    let Some(mut node) = read_u64(head, 0) else {
        return;
    };
    for _ in 0..ISOLATED_MAX {
        if node == head || node == 0 {
            return;
        }
        let folio = node.wrapping_sub(lru);
        // The flags first: most folios reclaim takes are not dirty in the
        // swap cache; then the watch bit, before the map.
        if read_u64(folio, g(&K_FOLIO_FLAGS)).unwrap_or(0) & want == want
            && read_u64(folio, g(&K_FOLIO_MAPPING)) == Some(0)
            && watch_bit_set(folio)
            && watched(folio)
        {
            let mut ev = event(kind::ISOLATED, unsafe { bpf_ktime_get_ns() });
            ev.entry = read_u64(folio, g(&K_FOLIO_SWAP)).unwrap_or(0);
            emit(ev);
        }
        match read_u64(node, 0) {
            Some(next) => node = next,
            None => return,
        }
    }
}

/// Args: (folio_list, pgdat, sc, stat, ignore_references, memcg).
#[fentry(function = "shrink_folio_list")]
pub fn isolated_fentry(ctx: FEntryContext) -> u32 {
    isolated(ctx.arg::<u64>(0));
    0
}

#[kprobe]
pub fn isolated_kprobe(ctx: ProbeContext) -> u32 {
    isolated(ctx.arg::<u64>(0).unwrap_or(0));
    0
}

/// Bios of a completed request looked at, at most (a swap write request
/// merges one bio per folio).
const RQ_BIOS_MAX: u32 = 256;

/// A run of consecutive entries a request wrote: from `first`, `nr` pages.
#[repr(C)]
#[derive(Clone, Copy)]
struct Run {
    first: u64,
    nr: u64,
}

#[map]
static RUN: PerCpuArray<Run> = PerCpuArray::with_max_entries(1, 0);

/// Sends the WRITE_END event of `nr` pages from entry `first`.
#[inline(always)]
fn write_end(ts: u64, first: u64, nr: u64) {
    if nr == 0 {
        return;
    }
    let mut ev = event(kind::WRITE_END, ts);
    ev.entry = first;
    ev.nr = nr as u32;
    emit(ev);
}

/// Args: (rq, error, nr_bytes). A block request completed; if it wrote,
/// its bios whose folio is a watched swap-cache folio (written by reclaim)
/// end their writeback now (`folio_end_writeback()` clears PG_reclaim, the
/// bit of PG_readahead, which a fault before it takes for a readahead
/// hit): a WRITE_END event per run of consecutive entries.
#[raw_tracepoint(tracepoint = "block_rq_complete")]
pub fn block_rq_complete(ctx: RawTracePointContext) -> i32 {
    let (bio_off, next_off, vec_off) = (g(&K_RQ_BIO), g(&K_BIO_NEXT), g(&K_BIO_IO_VEC));
    let (page_off, len_off, write) = (g(&K_BVEC_PAGE), g(&K_BVEC_LEN), g(&K_REQ_OP_WRITE));
    let shift = g(&K_PAGE_SHIFT);
    if write > 0xff || shift >= 32 {
        return 0;
    }
    let rq = ctx.arg::<u64>(0);
    // `req_op()`: the low REQ_OP_BITS (8) of cmd_flags.
    let Some(flags) = read_u64(rq, g(&K_RQ_CMD_FLAGS)) else {
        return 0;
    };
    if flags & 0xff != write {
        return 0;
    }
    // The run being gathered, in a map: in registers its values would give
    // the verifier a state per iteration to walk.
    let Some(run) = RUN.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's slot; a program runs on one CPU at a time.
    let run = unsafe { &mut *run };
    run.nr = 0;
    let ts = unsafe { bpf_ktime_get_ns() };
    let mut bio = read_u64(rq, bio_off).unwrap_or(0);
    for _ in 0..RQ_BIOS_MAX {
        if bio == 0 {
            break;
        }
        // The folio's head page is the bio's first vector (bio_add_folio()).
        let vec = read_u64(bio, vec_off).unwrap_or(0);
        let page = read_u64(vec, page_off).unwrap_or(0);
        if page != 0 && watch_bit_set(page) {
            // SAFETY: the value is copied out at once.
            if let Some(&w) = unsafe { LEAVING.get(page) } {
                let len = read_u64(vec, len_off).unwrap_or(0) & 0xffff_ffff;
                let pages = (len >> shift).max(1);
                if run.nr > 0 && w.entry == run.first.wrapping_add(run.nr) {
                    run.nr += pages;
                } else {
                    write_end(ts, run.first, run.nr);
                    (run.first, run.nr) = (w.entry, pages);
                }
            }
        }
        bio = read_u64(bio, next_off).unwrap_or(0);
    }
    write_end(ts, run.first, run.nr);
    0
}
