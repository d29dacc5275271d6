//! Records shared by the eBPF programs and userspace. `#[repr(C)]`, no padding.
#![no_std]

/// Kinds of [`RawEvent`]; also the index into the per-CPU lost-event counters.
pub mod kind {
    /// A folio written out to swap (`mm_vmscan_write_folio`).
    pub const SWAP_OUT: u8 = 1;
    /// A user fault that swapped a page in (`page_fault_*` … `rss_stat` MM_SWAPENTS).
    pub const SWAP_FAULT: u8 = 2;
    /// Pages read from swap outside a fault (swapoff, GUP, madvise WILLNEED).
    pub const SWAP_READ: u8 = 3;
    pub const RECLAIM_BEGIN: u8 = 4;
    pub const RECLAIM_END: u8 = 5;
    /// `mm_collapse_huge_page_swapin`.
    pub const KHUGEPAGED_SWAPIN: u8 = 6;
    pub const SWAPOFF_ENTER: u8 = 7;
    pub const SWAPOFF_EXIT: u8 = 8;
    pub const SWAPON_ENTER: u8 = 9;
    pub const SWAPON_EXIT: u8 = 10;
    /// Pages written back from zswap to the swap device (ZSWPWB).
    pub const ZSWAP_WRITEBACK: u8 = 11;
    /// A cluster readahead window (`swap_cluster_readahead` return).
    pub const RA_WINDOW: u8 = 12;
    /// A swap-cache lookup at swap-in (`swap_cache_get_folio` return).
    pub const CACHE_LOOKUP: u8 = 13;
    /// A batch of freed swap entries (`swapcache_free_entries`), a [`FreeBatchEvent`].
    pub const FREE_BATCH: u8 = 14;
    /// A zswap store or load (`zswap_store`/`zswap_load` return).
    pub const ZSWAP_OP: u8 = 15;
    /// MM_SWAPENTS changed outside faults and reclaim: page tables zapped
    /// (`zap_pte_range()`, at exit or munmap/MADV_DONTNEED) freed swap entries.
    pub const ZAP: u8 = 16;
    /// khugepaged scanned a PMD (`mm_khugepaged_scan_pmd`).
    pub const KHUGEPAGED_SCAN: u8 = 17;
    /// A collapse attempt ended (`mm_collapse_huge_page`).
    pub const COLLAPSE: u8 = 18;
    /// One past the largest kind.
    pub const COUNT: usize = 19;
}

/// Counters next to the per-kind lost events: swap-outs the tracepoint
/// fired for but could not describe.
pub mod unseen {
    /// The folio had no swap entry left when read (freed or reused after
    /// the write: a synchronous zswap store unlocks it before the tracepoint).
    pub const SWAP_OUT_GONE: u32 = super::kind::COUNT as u32;
    /// Size of the counter array.
    pub const SLOTS: u32 = super::kind::COUNT as u32 + 1;
}

/// Flags of [`RawEvent::flags`].
pub mod flag {
    /// SWAP_FAULT: the page was not in the swap cache (PGMAJFAULT counted).
    pub const MAJOR: u8 = 1 << 0;
    /// SWAP_OUT: no I/O, the folio was zero-filled (SWPOUT_ZERO).
    pub const OUT_ZERO: u8 = 1 << 1;
    /// SWAP_OUT: stored in zswap (ZSWPOUT).
    pub const OUT_ZSWAP: u8 = 1 << 2;
    /// SWAP_OUT: written by block I/O (PSWPOUT).
    pub const OUT_IO: u8 = 1 << 3;
    /// SWAP_OUT: the owning VMA (and so `mm`, `addr`) could not be resolved.
    pub const NO_VMA: u8 = 1 << 4;
    /// RECLAIM_*: memcg limit reclaim rather than direct (global) reclaim.
    pub const MEMCG: u8 = 1 << 5;
    /// ZAP: in an exiting task (`exit_mmap()`).
    pub const EXITING: u8 = 1 << 6;
}

/// Flags of RA_WINDOW, CACHE_LOOKUP and ZSWAP_OP events.
pub mod exact {
    /// RA_WINDOW: read from `last_readahead_pages` at the return of `swap_cluster_readahead`.
    pub const RA_LAST_READAHEAD_PAGES: u8 = 1 << 0;
    /// Captured by fentry/fexit (else kprobe/kretprobe).
    pub const FENTRY: u8 = 1 << 1;
    /// CACHE_LOOKUP: the folio was in the swap cache.
    pub const HIT: u8 = 1 << 2;
    /// CACHE_LOOKUP: and it was a readahead page (`swapin_readahead_hits` grew).
    pub const RA_HIT: u8 = 1 << 3;
    /// ZSWAP_OP: a load (else a store).
    pub const LOAD: u8 = 1 << 4;
    /// ZSWAP_OP: it succeeded (stored, or found in zswap).
    pub const OK: u8 = 1 << 5;
    /// SWAP_FAULT from `do_swap_page`: `entry` is the swap entry of the PTE,
    /// `nr` the swap reads made inside it.
    pub const ENTRY: u8 = 1 << 6;
}

/// Largest batch of `swapcache_free_entries` (SWAP_BATCH).
pub const FREE_BATCH_MAX: usize = 64;

/// A FREE_BATCH event: the common head (`nr` entries, `aux` latency in ns,
/// `ts_ns` start) and the entries (`swp_entry_t.val`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FreeBatchEvent {
    pub head: RawEvent,
    pub entries: [u64; FREE_BATCH_MAX],
}

pub const FREE_BATCH_EVENT_SIZE: usize = core::mem::size_of::<FreeBatchEvent>();

/// SWAP_READ sub-kinds, in [`RawEvent::aux`].
pub mod read_kind {
    pub const IO: u32 = 0;
    pub const ZERO: u32 = 1;
    pub const ZSWAP: u32 = 2;
}

/// One event from the eBPF side, 64 bytes.
///
/// Field use by kind:
/// - SWAP_OUT: `mm`, `addr` (virtual page address), `entry` (`swp_entry_t.val`), `nr` pages.
/// - SWAP_FAULT: `ts_ns` fault start, `aux` duration in ns (saturating), `mm`, `addr`,
///   `nr` pages read by I/O, `entry` = zero-page reads << 32 | zswap loads.
/// - SWAP_READ: `nr` pages, `aux` = [`read_kind`]. ZSWAP_WRITEBACK: `nr` pages.
/// - RECLAIM_END: `entry` = pages reclaimed. KHUGEPAGED_SWAPIN: `mm`, `nr` swapped in,
///   `entry` referenced, `aux` ret. SWAP*_EXIT: `entry` = return value as i64.
/// - KHUGEPAGED_SCAN: `mm`, `nr` referenced, `aux` unmapped (swap PTEs),
///   `entry` = none_or_zero << 32 | status as u32.
/// - COLLAPSE: `mm`, `flags` bit 0 isolated, `entry` = status as u32.
/// - ZAP: `mm`, `entry` = MM_SWAPENTS left (the percpu counter's global
///   count, as i64: approximate by up to its batch per CPU; `u64::MAX` unread).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEvent {
    pub ts_ns: u64,
    pub mm: u64,
    pub addr: u64,
    pub entry: u64,
    pub tid: u32,
    pub pid: u32,
    pub nr: u32,
    pub aux: u32,
    pub kind: u8,
    pub flags: u8,
    pub _pad: [u8; 6],
    pub comm: [u8; 16],
}

pub const RAW_EVENT_SIZE: usize = core::mem::size_of::<RawEvent>();
const _: () = assert!(RAW_EVENT_SIZE == 72);

#[cfg(feature = "user")]
unsafe impl aya::Pod for RawEvent {}
#[cfg(feature = "user")]
unsafe impl aya::Pod for FreeBatchEvent {}
