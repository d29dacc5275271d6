//! The kernel's swap cache, as the replay needs it: which swap-cache folios
//! exist (written to the device or stored, swapped in, read ahead) and
//! when each is freed (`kmem:mm_page_free`): an `OUT_FREED` event with its
//! entry.

use crate::twin::twin;
use aya_ebpf::{
    helpers::bpf_ktime_get_ns,
    macros::{fentry, kprobe, map, raw_tracepoint},
    maps::{Array, LruHashMap},
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
