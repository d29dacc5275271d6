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
    /// A process forked a new address space (`sched_process_fork`): `mm`
    /// the child's, `entry` the parent's. No record of its own: it joins
    /// the child's swap-ins to the parent's swap-outs of the pages they share.
    pub const FORK: u8 = 19;
    /// A swap-cache folio (one written to the device, swapped in or read
    /// ahead) was freed (`mm_page_free`): out of memory, slot kept or not.
    pub const OUT_FREED: u8 = 20;
    /// `vm_unmapped_area()` found `[addr, addr + entry)` free in `mm` for a
    /// new mapping, or (`nr` [`UNMAPPED_CLEARED`](crate::UNMAPPED_CLEARED))
    /// the range was cleared from `mm`'s maple tree (munmap): whatever that
    /// range held before is gone.
    pub const UNMAPPED: u8 = 21;
    /// Reclaim isolated a watched swap-cache folio that is dirty and was
    /// never mapped (read ahead from zswap), and will keep it
    /// (`shrink_folio_list()`): MGLRU's isolation cleared its PG_readahead.
    pub const ISOLATED: u8 = 22;
    /// `mremap()` moved `[entry, entry + nr pages)` of `mm` to `addr`: sent
    /// with the UNMAPPED event of the range it found (`MREMAP_MAYMOVE`).
    pub const MOVED: u8 = 23;
    /// A block request that wrote `nr` pages of watched swap-cache folios
    /// from `entry` on completed (`block_rq_complete`): their writeback
    /// ended, and with it their PG_reclaim (the bit of PG_readahead).
    pub const WRITE_END: u8 = 24;
    /// Sent just before a SWAP_OUT of the same `mm` and `entry` whose page
    /// offset another VMA on the folio's anon_vma covers too (two VMAs
    /// moved by `mremap()` keep overlapping offsets): `addr` is the page's
    /// address in that VMA. Which one maps it is in the page table.
    pub const OUT_ALT: u8 = 25;
    /// One past the largest kind.
    pub const COUNT: usize = 26;

    /// The trace record an event of kind `k` becomes ([`super::names`]),
    /// "unknown" for none.
    pub const fn name(k: u8) -> &'static str {
        use super::names;
        match k {
            SWAP_OUT => names::SWAP_OUT,
            SWAP_FAULT => names::SWAP_FAULT,
            SWAP_READ => names::SWAP_READ,
            RECLAIM_BEGIN | RECLAIM_END => names::RECLAIM,
            KHUGEPAGED_SWAPIN => names::KHUGEPAGED_SWAPIN,
            SWAPOFF_ENTER | SWAPOFF_EXIT | SWAPON_ENTER | SWAPON_EXIT => names::SYSCALL,
            ZSWAP_WRITEBACK => names::ZSWAP_WRITEBACK,
            RA_WINDOW => names::RA_WINDOW,
            CACHE_LOOKUP => names::CACHE_LOOKUP,
            FREE_BATCH => names::FREE_BATCH,
            ZSWAP_OP => names::ZSWAP_OP,
            ZAP => names::ZAP,
            KHUGEPAGED_SCAN => names::KHUGEPAGED_SCAN,
            COLLAPSE => names::COLLAPSE,
            // A lost fork leaves swap-ins unjoined.
            FORK => names::SWAP_FAULT,
            OUT_FREED => names::OUT_FREED,
            UNMAPPED => names::UNMAPPED,
            ISOLATED => names::ISOLATED,
            MOVED => names::MOVED,
            WRITE_END => names::WRITE_END,
            // A lost one leaves its swap-out at the first VMA's address.
            OUT_ALT => names::SWAP_OUT,
            _ => "unknown",
        }
    }
}

/// Names of the trace's record kinds: the `kind` tag of a record (JSONL)
/// and the key of lost-event counts. The trace's `Record` serde tags must
/// equal these (a test in swaptrace checks it).
pub mod names {
    /// First sight of a task (made by userspace, not an event).
    pub const TASK: &str = "task";
    /// First sight of an address space (made by userspace, not an event).
    pub const ADDRESS_SPACE: &str = "address_space";
    pub const SWAP_OUT: &str = "swap_out";
    pub const SWAP_FAULT: &str = "swap_fault";
    pub const SWAP_READ: &str = "swap_read";
    pub const RECLAIM: &str = "reclaim";
    pub const KHUGEPAGED_SWAPIN: &str = "khugepaged_swapin";
    /// swapon/swapoff entry and exit.
    pub const SYSCALL: &str = "syscall";
    pub const ZSWAP_WRITEBACK: &str = "zswap_writeback";
    pub const RA_WINDOW: &str = "ra_window";
    pub const CACHE_LOOKUP: &str = "cache_lookup";
    pub const FREE_BATCH: &str = "free_batch";
    pub const ZSWAP_OP: &str = "zswap_op";
    pub const ZAP: &str = "zap";
    pub const OUT_FREED: &str = "out_freed";
    pub const UNMAPPED: &str = "unmapped";
    pub const ISOLATED: &str = "isolated";
    pub const MOVED: &str = "moved";
    pub const WRITE_END: &str = "write_end";
    pub const KHUGEPAGED_SCAN: &str = "khugepaged_scan";
    pub const COLLAPSE: &str = "collapse";
    /// A VMA's bounds, first seen or changed (made by userspace).
    pub const VMA: &str = "vma";
    /// A range whose swap entries `madvise()` freed (made by userspace).
    pub const ZAPPED: &str = "zapped";
    /// Swap reads of `madvise(MADV_WILLNEED)` (made by userspace).
    pub const WILLNEED: &str = "will_need";
    /// Events the probe could not deliver (made by userspace).
    pub const LOST: &str = "lost";
}

/// The kernel constants userspace sets in the eBPF object before load:
/// the `K_*` globals (struct offsets and enum values from BTF, addresses
/// from kallsyms, filters), each with its default. The one list of their
/// names: it calls `$m!` with `NAME = default` entries; the eBPF crate
/// declares its globals from it, [`konst`] names them for userspace.
/// A default of `u64::MAX` means unknown.
#[macro_export]
macro_rules! kernel_constants {
    ($m:ident) => {
        $m! {
            /// `task_struct.mm`.
            K_TASK_MM = u64::MAX,
            /// `folio.flags`.
            K_FOLIO_FLAGS = u64::MAX,
            /// `folio._flags_1` (the head page's second flags word).
            K_FOLIO_FLAGS1 = u64::MAX,
            /// `folio.mapping`.
            K_FOLIO_MAPPING = u64::MAX,
            /// `folio.index`.
            K_FOLIO_INDEX = u64::MAX,
            /// `folio.swap` (6.6+), else `folio.private`.
            K_FOLIO_SWAP = u64::MAX,
            /// `PG_head` of `enum pageflags`.
            K_PG_HEAD = u64::MAX,
            /// `PG_swapcache` of `enum pageflags`.
            K_PG_SWAPCACHE = u64::MAX,
            /// `PG_swapbacked` of `enum pageflags`.
            K_PG_SWAPBACKED = u64::MAX,
            /// `anon_vma.rb_root.rb_root.rb_node`.
            K_ANON_VMA_ROOT = u64::MAX,
            /// `anon_vma_chain.rb`.
            K_AVC_RB = u64::MAX,
            /// `anon_vma_chain.vma`.
            K_AVC_VMA = u64::MAX,
            /// `anon_vma_chain.rb_subtree_last`: the interval tree's
            /// augmentation (the last page of the subtree's VMAs).
            K_AVC_LAST = u64::MAX,
            /// `vm_area_struct.vm_mm`.
            K_VMA_MM = u64::MAX,
            /// `vm_area_struct.vm_start`.
            K_VMA_START = u64::MAX,
            /// `vm_area_struct.vm_pgoff`.
            K_VMA_PGOFF = u64::MAX,
            /// `vm_area_struct.vm_end`.
            K_VMA_END = u64::MAX,
            /// `vm_unmapped_area_info.length`.
            K_VMUA_LENGTH = u64::MAX,
            /// `ma_state.tree`, `.index`, `.last`; `mm_struct.mm_mt`.
            /// Unknown: no UNMAPPED events of cleared ranges.
            K_MAS_TREE = u64::MAX,
            K_MAS_INDEX = u64::MAX,
            K_MAS_LAST = u64::MAX,
            K_MM_MT = u64::MAX,
            /// The syscall's saved registers (`struct pt_regs`): its number
            /// and first two arguments; and `__NR_mremap`. Unknown: no
            /// MOVED events.
            K_REGS_NR = u64::MAX,
            K_REGS_ARG0 = u64::MAX,
            K_REGS_ARG1 = u64::MAX,
            K_NR_MREMAP = u64::MAX,
            /// The third and fourth arguments, and the calls whose zaps
            /// name their range ([`zap_range`](crate::zap_range)).
            /// Unknown: zaps carry no range.
            K_REGS_ARG2 = u64::MAX,
            K_REGS_ARG3 = u64::MAX,
            K_NR_MUNMAP = u64::MAX,
            K_NR_MMAP = u64::MAX,
            K_NR_MADVISE = u64::MAX,
            /// The calls that fault pages in without a user fault (GUP):
            /// `mlock()`, `mlock2()`, `mlockall()` (and `madvise()`'s
            /// MADV_POPULATE_*). Unknown: their swap-ins pass for zaps.
            K_NR_MLOCK = u64::MAX,
            K_NR_MLOCK2 = u64::MAX,
            K_NR_MLOCKALL = u64::MAX,
            /// `read()`, `pread64()`, `write()`, `pwrite64()`: direct I/O
            /// pins the buffer (GUP).
            K_NR_READ = u64::MAX,
            K_NR_PREAD64 = u64::MAX,
            K_NR_WRITE = u64::MAX,
            K_NR_PWRITE64 = u64::MAX,
            /// `enum vm_event_item` values, as seen by `count_memcg_events`.
            K_EV_PSWPIN = u64::MAX,
            K_EV_PSWPOUT = u64::MAX,
            K_EV_PGMAJFAULT = u64::MAX,
            K_EV_PGFAULT = u64::MAX,
            K_EV_SWPIN_ZERO = u64::MAX,
            K_EV_SWPOUT_ZERO = u64::MAX,
            K_EV_ZSWPIN = u64::MAX,
            K_EV_ZSWPOUT = u64::MAX,
            /// Left unknown when an exact probe counts zswap writebacks.
            K_EV_ZSWPWB = u64::MAX,
            /// `MM_SWAPENTS`, the `rss_stat` member of swap entries.
            K_MM_SWAPENTS = u64::MAX,
            /// Offset in `mm_struct` of MM_SWAPENTS's count.
            K_MM_SWAPENTS_COUNT = u64::MAX,
            /// `task_struct.flags`.
            K_TASK_FLAGS = u64::MAX,
            /// `mm_struct.owner` (CONFIG_MEMCG), `task_struct.tgid`; with
            /// both, K_TGID_FILTER is 1: only faults of processes that may
            /// hold swap entries are traced (tracepoint backend).
            K_MM_OWNER = u64::MAX,
            K_TASK_TGID = u64::MAX,
            K_TGID_FILTER = 0,
            /// `count_memcg_events` items the tracepoint backend reads, a
            /// bit each (items 0-63, 64-127); the others return at once.
            K_EV_MASK0 = 0,
            K_EV_MASK1 = 0,
            /// The memory cgroup of a task: `task_struct.cgroups`,
            /// `css_set.subsys[memory_cgrp_id]`, `cgroup_subsys_state.cgroup`
            /// and `.parent`, `cgroup.kn`, `kernfs_node.id`.
            K_TASK_CGROUPS = u64::MAX,
            K_CSS_SET_MEMCG = u64::MAX,
            K_CSS_CGROUP = u64::MAX,
            K_CSS_PARENT = u64::MAX,
            K_CGROUP_KN = u64::MAX,
            K_KN_ID = u64::MAX,
            /// Field offsets of `huge_memory:mm_khugepaged_scan_pmd`.
            K_SCAN_MM = u64::MAX,
            K_SCAN_REFERENCED = u64::MAX,
            K_SCAN_NONE = u64::MAX,
            K_SCAN_STATUS = u64::MAX,
            K_SCAN_UNMAPPED = u64::MAX,
            /// Places of `mm_khugepaged_scan_pmd`'s raw tracepoint arguments
            /// (they moved: 6.1 has `writable`, 6.18 not).
            K_SCANA_FOLIO = u64::MAX,
            K_SCANA_REFERENCED = u64::MAX,
            K_SCANA_NONE = u64::MAX,
            K_SCANA_STATUS = u64::MAX,
            K_SCANA_UNMAPPED = u64::MAX,
            /// Field offsets of `huge_memory:mm_collapse_huge_page`.
            K_COLL_MM = u64::MAX,
            K_COLL_ISOLATED = u64::MAX,
            K_COLL_STATUS = u64::MAX,
            /// `--pid` filter (a tgid); 0 = none.
            K_FILTER_TGID = 0,
            /// `--cgroup` filter (a kernfs inode); 0 = none.
            K_FILTER_CGROUP = 0,
            K_PAGE_SHIFT = 12,
            /// 1: programs of [`twin::HOOKS`] may be attached twice (those
            /// whose twin is, in the `TWIN_ON` map) and record a call once
            /// ([`twin`]).
            K_TWINS = 0,
            /// `last_readahead_pages.N`, the static where `swapin_nr_pages()`
            /// leaves its result.
            K_LAST_RA_ADDR = u64::MAX,
            /// `swapin_readahead_hits`.
            K_RA_HITS_ADDR = u64::MAX,
            /// Which zswap functions return int 0 on success (else bool true):
            /// bit 0 the load (frontswap <= 6.5, zswap_load 6.15+), bit 1 the
            /// store (frontswap only).
            K_ZSWAP_RET_INT = 0,
            /// 1: `zswap_load()` is asked for every swap read (5.19+ without
            /// frontswap), so its misses are the fault's disk reads; 0:
            /// frontswap asks zswap only for the pages it holds.
            K_ZSWAP_LOAD_ALL = 0,
            /// `vm_fault` members: `address`, `orig_pte`, `vma`.
            K_VMF_ADDRESS = u64::MAX,
            K_VMF_ORIG_PTE = u64::MAX,
            K_VMF_VMA = u64::MAX,
            /// `vm_fault.flags` (`FAULT_FLAG_WRITE` is bit 0).
            K_VMF_FLAGS = u64::MAX,
            /// `folio.lru` and `PG_dirty` of `enum pageflags`: the folios
            /// `shrink_folio_list()` is given, and which are dirty.
            K_FOLIO_LRU = u64::MAX,
            K_PG_DIRTY = u64::MAX,
            /// 1: those folios matter (reclaim keeps them, and MGLRU's
            /// isolation clears their PG_readahead); 0: the program returns.
            K_ISOLATED_ON = 0,
            /// `PG_readahead` of `enum pageflags` (the bit
            /// `swap_update_readahead()` tests and clears, 6.18+).
            K_PG_READAHEAD = u64::MAX,
            /// `swap_info_struct.type` and `.cluster_info`, and the size of
            /// `struct swap_cluster_info`: a cluster's entries from its
            /// pointer (`__swap_cluster_free_entries`, 7.x).
            K_SI_TYPE = u64::MAX,
            K_SI_CLUSTER_INFO = u64::MAX,
            K_CI_SIZE = u64::MAX,
            /// `SWAPFILE_CLUSTER`: pages per swap cluster (HPAGE_PMD_NR with THP_SWAP).
            K_SWAPFILE_CLUSTER = 512,
            /// 1: an exact `zswap_store()` probe gives each swap-out its kind
            /// (stored: zswap; refused: I/O; entered without a return seen:
            /// unknown; not called: a zero-filled folio where the kernel has
            /// SWPOUT_ZERO, else I/O).
            K_STORES_EXACT = 0,
            /// `LRU_REMOVED_RETRY` of `enum lru_status`: what
            /// `shrink_memcg_cb()` returns for an entry written back.
            K_LRU_REMOVED_RETRY = 1,
            /// `struct zswap_entry` members `lru` and `swpentry`: the entry
            /// `shrink_memcg_cb()` writes back, from its list item.
            K_ZE_LRU = u64::MAX,
            K_ZE_SWPENTRY = u64::MAX,
            /// 1: `zswap_writeback_entry()` takes the swap entry as its
            /// second argument (`swpentry`, 6.8+; 6.1 has a zpool handle).
            K_WB_SWPENTRY_ARG = 0,
            /// `request.cmd_flags` and `.bio`, `bio.bi_next` and
            /// `.bi_io_vec`, `bio_vec.bv_page` and `.bv_len`: the folios a
            /// completed write request held. Unknown: no WRITE_END events.
            K_RQ_CMD_FLAGS = u64::MAX,
            K_RQ_BIO = u64::MAX,
            K_BIO_NEXT = u64::MAX,
            K_BIO_IO_VEC = u64::MAX,
            K_BVEC_PAGE = u64::MAX,
            K_BVEC_LEN = u64::MAX,
            /// `REQ_OP_WRITE` of `enum req_op`.
            K_REQ_OP_WRITE = u64::MAX,
            /// 1: the exact swap-read probe reports reads outside a fault
            /// (kind unknown); count_memcg_events only gives kinds inside one.
            K_READS_OUTSIDE = 0,
        }
    };
}

/// The names of the [`kernel_constants`], for `EbpfLoader::override_global`.
pub mod konst {
    macro_rules! names {
        ($($(#[$doc:meta])* $name:ident = $default:expr),* $(,)?) => {
            $($(#[$doc])* pub const $name: &str = stringify!($name);)*
        };
    }
    crate::kernel_constants!(names);
}

/// Counters next to the per-kind lost events: swap-outs the tracepoint
/// fired for but could not describe.
pub mod unseen {
    /// The folio had no swap entry left when read (freed or reused after
    /// the write: a synchronous zswap store unlocks it before the tracepoint).
    pub const SWAP_OUT_GONE: u32 = super::kind::COUNT as u32;
    /// A swap-in fault of a process not yet known to hold swap entries
    /// (the tracepoint backend traces only faults of those that do).
    pub const FAULT_UNTRACED: u32 = super::kind::COUNT as u32 + 1;
    /// Size of the counter array.
    pub const SLOTS: u32 = super::kind::COUNT as u32 + 2;
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
    /// SWAP_FAULT: a write fault (`FAULT_FLAG_WRITE`).
    pub const WRITE: u8 = 1 << 7;
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
    /// `nr` the swap reads made inside it. ZSWAP_WRITEBACK: `entry` is the
    /// entry written back.
    pub const ENTRY: u8 = 1 << 6;
    /// FREE_BATCH of one call freeing a range (`swap_entries_free`,
    /// `__swap_cluster_free_entries`, 6.15+): `entry` is the first entry,
    /// `nr` the count, no entry array.
    pub const RANGE: u8 = 1 << 7;
}

/// Flags in [`RawEvent::flags2`].
pub mod exact2 {
    /// Exact SWAP_FAULT: `memcg:count_memcg_events` split the fault's reads
    /// by kind (`nr` I/O pages, `zero`, `zswap`).
    pub const KINDS: u8 = 1 << 0;
    /// SWAP_OUT: the owning VMA's bounds, in pages around `addr`: `aux`
    /// from `vm_start` to `addr`, `zero | zswap << 16` from `addr` to
    /// `vm_end` (both saturated at u32::MAX).
    pub const BOUNDS: u8 = 1 << 1;
    /// Tracepoint SWAP_FAULT in a system call that faults pages in without
    /// a user fault (GUP: MADV_POPULATE_*, mlock): the page is unknown;
    /// `addr` is the call's range start, `zero | zswap << 16` its length
    /// in pages (saturated). GUP faults its range in ascending order.
    pub const GUP: u8 = 1 << 2;
    /// SWAP_READ inside `madvise(MADV_WILLNEED)`: `mm` the task's, `addr`
    /// the call's range start, `entry` its length in bytes.
    pub const WILLNEED: u8 = 1 << 3;
}

/// The event ring's size unless `record --ring-size` sets it.
pub const RING_BYTES: u32 = 16 << 20;

/// The largest folio order the kernel swaps out whole: a PMD folio of
/// 64 KiB pages (arm64), 2^13 pages.
pub const MAX_FOLIO_ORDER: u32 = 13;
/// The most pages a swap-out or free may hold: beyond it a record cannot
/// come from a kernel.
pub const MAX_FOLIO_PAGES: u32 = 1 << MAX_FOLIO_ORDER;

/// Largest batch of `swapcache_free_entries` (SWAP_BATCH); ranges ([`exact::RANGE`]) are not bounded by it.
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
    /// Seen by `swap_read_folio()` alone, before 6.13: any of the above.
    pub const UNKNOWN: u32 = 3;
}

/// An UNMAPPED event's `nr`: the range was cleared from the address
/// space's maple tree (`munmap()`), not found free for a new mapping.
pub const UNMAPPED_CLEARED: u32 = 1;

/// A ZAP event's `nr`: which system call freed the swap entries, read from
/// its saved registers; `addr` and `aux` (pages, saturated) are its range.
pub mod zap_range {
    /// None known (exit, another call, or no registers): no range.
    pub const NONE: u32 = 0;
    /// `munmap()`, or `mmap(MAP_FIXED)` over a mapping: VMAs gone too.
    pub const UNMAP: u32 = 1;
    /// `madvise(MADV_DONTNEED, _FREE, _REMOVE, _DONTNEED_LOCKED)`: the
    /// VMAs stay.
    pub const MADVISE: u32 = 2;
}

/// One event from the eBPF side, 64 bytes.
///
/// Field use by kind:
/// - SWAP_OUT: `mm`, `addr` (virtual page address), `entry` (`swp_entry_t.val`), `nr` pages.
/// - SWAP_FAULT: `ts_ns` fault start, `aux` duration in ns (saturating), `mm`, `addr`,
///   `nr` pages read by I/O, `entry` = zero-page reads << 32 | zswap loads.
///   Exact (`exact::ENTRY`): `entry` is the PTE's swap entry; `nr` counts every
///   swap read inside the fault, or with [`exact2::KINDS`] the I/O pages only,
///   and `zero`/`zswap` the others.
/// - SWAP_READ: `nr` pages, `aux` = [`read_kind`]. ZSWAP_WRITEBACK: `nr` pages.
/// - RECLAIM_END: `entry` = pages reclaimed. KHUGEPAGED_SWAPIN: `mm`, `nr` swapped in,
///   `entry` referenced, `aux` ret. SWAP*_EXIT: `entry` = return value as i64.
/// - KHUGEPAGED_SCAN: `mm`, `nr` referenced, `aux` unmapped (swap PTEs),
///   `entry` = none_or_zero << 32 | status as u32.
/// - COLLAPSE: `mm`, `flags` bit 0 isolated, `entry` = status as u32.
/// - ZAP: `mm`, `entry` = MM_SWAPENTS left (the percpu counter's global
///   count, as i64: approximate by up to its batch per CPU; `u64::MAX` unread);
///   `nr` a [`zap_range`], `addr` its start, `aux` its pages.
/// - UNMAPPED: `mm`, `addr` start, `entry` length in bytes, `nr`
///   [`UNMAPPED_CLEARED`] for a range cleared (else found free). MOVED: `mm`,
///   `addr` the new start, `entry` the old one, `nr` pages moved (saturated).
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
    /// Exact SWAP_FAULT with [`exact2::KINDS`]: zero-page reads.
    pub zero: u16,
    /// Exact SWAP_FAULT with [`exact2::KINDS`]: zswap loads.
    pub zswap: u16,
    /// [`exact2`] flags.
    pub flags2: u8,
    pub _pad: u8,
    pub comm: [u8; 16],
}

pub const RAW_EVENT_SIZE: usize = core::mem::size_of::<RawEvent>();
const _: () = assert!(RAW_EVENT_SIZE == 72);

#[cfg(feature = "user")]
unsafe impl aya::Pod for RawEvent {}
#[cfg(feature = "user")]
unsafe impl aya::Pod for FreeBatchEvent {}

/// Programs attached twice where the kernel may preempt them. fentry/fexit
/// programs (and raw tracepoint programs on 7.x) run with migration disabled
/// only: a task preempted inside one leaves it active on its CPU, and the
/// kernel's recursion guard (`__bpf_prog_enter_recur()`) skips the program for
/// any other task there. Its twin (`<name>_2`, the same code) is a program of
/// its own with its own guard. Of the two runs of one call, the first records
/// and leaves a token (the task, the hook, the call's first argument); the
/// second finds the token, takes it, and records nothing. A call is lost only
/// when both were skipped.
pub mod twin {
    /// The programs with a twin; a hook's index is its place here.
    pub const HOOKS: &[&str] = &[
        "ra_fentry",
        "ra_fexit",
        "cache_fentry",
        "cache_fexit",
        "cache_ra_fentry",
        "free_fentry",
        "free_fexit",
        "free_range_fentry",
        "free_cluster_fentry",
        "free_range_fexit",
        "free_cluster_fexit",
        "zswap_store_fentry",
        "zswap_store_fexit",
        "zswap_load_fexit",
        "zswap_wb_fexit",
        "zswap_wb_cb_fexit",
        "zswap_wb_cb_fentry",
        "fault_fentry",
        "fault_fexit",
        "read_fentry",
        "swapoff_fentry",
        "swapoff_fexit",
        "swapon_fentry",
        "swapon_fexit",
        "page_fault_user",
        "page_fault_kernel",
        "count_memcg_events",
        "rss_stat",
        "mm_vmscan_write_folio",
        "direct_reclaim_begin",
        "direct_reclaim_end",
        "memcg_reclaim_begin",
        "memcg_reclaim_end",
        "collapse_huge_page_swapin",
        "mm_lru_insertion",
        "mm_page_free",
        "vm_unmapped_area",
        "process_fork",
    ];

    /// Per hook, two counters in `TWIN_COUNTS`: calls recorded (at
    /// `2 * index`) and runs that found the other's token (`2 * index + 1`).
    pub const COUNTERS: u32 = 2 * HOOKS.len() as u32;

    /// The twin program's name suffix.
    pub const SUFFIX: &str = "_2";

    /// String equality in a const context.
    pub const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// The index of hook `name` (evaluated at compile time by the eBPF side:
    /// a name missing here fails the build).
    pub const fn index(name: &str) -> u32 {
        let mut i = 0;
        while i < HOOKS.len() {
            if same(HOOKS[i], name) {
                return i as u32;
            }
            i += 1;
        }
        panic!("not a twin hook")
    }

    /// Events lost by a hook, from its two programs' skipped runs (`misses`)
    /// and its counters: a call with one run skipped is recorded once and
    /// finds no token (recorded - taken), so the rest of the misses are
    /// calls where both were skipped, two misses each.
    pub const fn lost(misses: u64, recorded: u64, taken: u64) -> u64 {
        misses.saturating_sub(recorded.saturating_sub(taken)) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::twin;

    #[test]
    fn every_twin_hook_has_its_own_index() {
        for (i, h) in twin::HOOKS.iter().enumerate() {
            assert_eq!(twin::index(h) as usize, i, "{h}");
        }
        assert!(twin::same("fault_fentry", "fault_fentry"));
        assert!(!twin::same("fault_fentry", "fault_fexit"));
        assert!(!twin::same("fault", "fault_fentry"));
    }

    #[test]
    fn lost_calls_are_those_both_twins_skipped() {
        // 1000 calls, none skipped: each recorded once and its token taken once.
        assert_eq!(twin::lost(0, 1000, 1000), 0);
        // 30 calls with one run skipped (recorded, token left), 5 with both.
        // recorded = 1000 - 5, taken = 1000 - 30 - 5, misses = 30 + 2 * 5.
        assert_eq!(twin::lost(40, 995, 965), 5);
        // Counters lost to a preempted increment never make it negative.
        assert_eq!(twin::lost(3, 10, 0), 0);
    }
}
