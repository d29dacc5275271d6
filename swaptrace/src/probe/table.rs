//! The attach-point table: for each metric, its attach points in order of
//! preference (fentry/fexit, then kprobe, then tracepoint-derived). Adding an
//! attach point is adding a row.

use serde::Serialize;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Fentry,
    Kprobe,
    Tracepoint,
    /// Userspace reads /proc (no eBPF program).
    Procfs,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Fentry => "fentry",
            Backend::Kprobe => "kprobe",
            Backend::Tracepoint => "tracepoint",
            Backend::Procfs => "procfs",
        })
    }
}

/// What a row needs from the running kernel.
#[derive(Clone, Copy, Debug, Serialize)]
pub enum Req {
    /// A function in BTF (so neither inlined nor static-and-dropped).
    BtfFunc(&'static str),
    /// A text symbol in /proc/kallsyms (kprobe target).
    Kallsyms(&'static str),
    /// A data symbol whose name starts with this, in /proc/kallsyms (needs KALLSYMS_ALL).
    DataSymbol(&'static str),
    /// A tracepoint whose arguments, in order, start with these names
    /// (`a|b`: either).
    Tracepoint(&'static str, &'static [&'static str]),
    /// A tracepoint with these arguments, in any place (`a|b`: either).
    TracepointHas(&'static str, &'static [&'static str]),
    /// A tracefs event ("category/name") whose format file has these fields.
    TraceFormat(&'static str, &'static [&'static str]),
    /// A member of a kernel struct.
    Member(&'static str, &'static str),
    /// An `enum vm_event_item` value.
    VmEvent(&'static str),
    /// fentry/fexit programs load (a trial load).
    FentryAllowed,
    /// The kernel has kprobes (a kprobe PMU).
    KprobesBuilt,
    /// A function whose parameters start with these names (its signature).
    FuncParams(&'static str, &'static [&'static str]),
    /// The program for this row is in this build of swaptrace.
    Built(bool),
}

/// How a program attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ProgKind {
    Fentry,
    Fexit,
    Kprobe,
    Kretprobe,
    RawTracepoint,
    /// A classic tracepoint in this category.
    Tracepoint(&'static str),
}

/// One eBPF program of the object and what it attaches to.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Prog {
    pub name: &'static str,
    pub kind: ProgKind,
    pub target: &'static str,
}

pub(super) const fn p(name: &'static str, kind: ProgKind, target: &'static str) -> Prog {
    Prog { name, kind, target }
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct AttachPoint {
    pub metric: &'static str,
    pub backend: Backend,
    pub attach: &'static str,
    pub requires: &'static [Req],
    /// The programs to attach; empty when this build has none for the row.
    pub progs: &'static [Prog],
    pub note: &'static str,
    /// The kernels this row was seen to work on, first and last
    /// (`cargo xtask guest-test` on Debian guests, the host for tracepoints);
    /// None: not seen yet.
    pub seen: Option<(&'static str, &'static str)>,
    /// `K_*` globals left unknown when this row is chosen: counts of the
    /// tracepoint path that this row takes over (else counted twice).
    pub silences: &'static [&'static str],
}

/// Metrics, as in docs/design.md's table, with what each measures.
pub const METRICS: &[(&str, &str)] = &[
    (
        "swap-out",
        "each folio written to swap: entry, mm, virtual page",
    ),
    (
        "swap-fault",
        "each swap-in fault: address, mm, major/minor, latency",
    ),
    (
        "swap-read",
        "pages read from swap, per fault and outside faults",
    ),
    (
        "ra-window",
        "swap readahead window (swapin_nr_pages return)",
    ),
    ("swap-cache-hit", "swap-cache hits and misses at swap-in"),
    (
        "free-latency",
        "swap entry frees: swapcache_free_entries batches (<= 6.14), one cluster's range per call (6.15+)",
    ),
    (
        "zswap",
        "zswap stores (accepted or rejected) and loads (found or not)",
    ),
    (
        "zswap-writeback",
        "pages written back from zswap to the swap device",
    ),
    ("khugepaged-swapin", "khugepaged swap-ins for collapse"),
    (
        "khugepaged-scan",
        "khugepaged PMD scans (swap PTEs, referenced, verdict) and collapses",
    ),
    ("reclaim", "direct and memcg reclaim begin/end"),
    (
        "reclaim-isolate",
        "folios read ahead from zswap (dirty, never mapped) that reclaim isolated and keeps",
    ),
    ("swapoff", "swapon/swapoff brackets"),
];

const FAULT_TPS: &[Req] = &[
    Req::Tracepoint("page_fault_user", &["address", "regs", "error_code"]),
    Req::Tracepoint("rss_stat", &["mm", "member"]),
    Req::Tracepoint("count_memcg_events", &["memcg", "item", "val"]),
    Req::Tracepoint("sched_process_fork", &["parent", "child"]),
    Req::Member("task_struct", "mm"),
    Req::VmEvent("PGMAJFAULT"),
    Req::VmEvent("PGFAULT"),
    Req::Built(true),
];

use super::table_exact::{FREE_RANGE, RECLAIM_ISOLATE, SWAPOFF_EXACT, SWAP_CACHE_HIT_618};
use super::table_zswap::{KHUGEPAGED, ZSWAP, ZSWAP_WRITEBACK};
use ProgKind::{Fentry, Fexit, Kprobe, Kretprobe, RawTracepoint};

/// The swap-out tracepoint, and the swap cache's folios (written, swapped
/// in or read ahead: added to an LRU) until freed. An LRU insertion, not
/// swap_read_folio(): probes there saw no read folio in a 7.3 guest.
const SWAP_OUT_PROGS: &[Prog] = &[
    p(
        "mm_vmscan_write_folio",
        RawTracepoint,
        "mm_vmscan_write_folio",
    ),
    p("mm_lru_insertion", RawTracepoint, "mm_lru_insertion"),
    p("mm_page_free", RawTracepoint, "mm_page_free"),
    // The range a new mapping takes: what it held before was unmapped.
    p("vm_unmapped_area", RawTracepoint, "vm_unmapped_area"),
    // Ranges cleared from an address space (munmap, brk, mremap); not
    // required: without it, only the ranges a new mapping takes are seen.
    p("ma_write", RawTracepoint, "ma_write"),
    // The end of each write's I/O; optional (`OPTIONAL_PROGS` of live.rs).
    p("block_rq_complete", RawTracepoint, "block_rq_complete"),
];
const SWAP_OUT_NOTE: &str = "folio->mapping -> anon_vma -> first anon_vma_chain -> vma -> mm; swap-cache folios (written, or added to an LRU) until freed (mm_page_free); ranges unmapped (NULL stores in mm->mm_mt: ma_write) and ranges a new mapping takes (vm_unmapped_area)";

/// The tracepoint-derived fault machinery, shared by several metrics.
pub(super) const FAULT_PROGS: &[Prog] = &[
    p("page_fault_user", RawTracepoint, "page_fault_user"),
    p("page_fault_kernel", RawTracepoint, "page_fault_kernel"),
    p("count_memcg_events", RawTracepoint, "count_memcg_events"),
    p("rss_stat", RawTracepoint, "rss_stat"),
    // Forks join a child's swap-ins to its parent's swap-outs.
    p("process_fork", RawTracepoint, "sched_process_fork"),
    // Reclaim brackets keep reclaim inside a fault from looking like a swap-in.
    p(
        "direct_reclaim_begin",
        RawTracepoint,
        "mm_vmscan_direct_reclaim_begin",
    ),
    p(
        "direct_reclaim_end",
        RawTracepoint,
        "mm_vmscan_direct_reclaim_end",
    ),
    p(
        "memcg_reclaim_begin",
        RawTracepoint,
        "mm_vmscan_memcg_reclaim_begin",
    ),
    p(
        "memcg_reclaim_end",
        RawTracepoint,
        "mm_vmscan_memcg_reclaim_end",
    ),
];

impl AttachPoint {
    const fn with_metric(self, metric: &'static str) -> AttachPoint {
        AttachPoint { metric, ..self }
    }
}

/// do_swap_page() and the swap reads inside it: 6.12 reads with
/// swap_read_folio(), 6.1 with swap_readpage().
const EXACT_FAULT: [AttachPoint; 4] = [
    AttachPoint {
        metric: "",
        backend: Backend::Fentry,
        attach: "fentry/fexit do_swap_page + fentry swap_read_folio",
        requires: &[
            Req::BtfFunc("do_swap_page"),
            Req::BtfFunc("swap_read_folio"),
            Req::Member("vm_fault", "orig_pte"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("fault_fentry", Fentry, "do_swap_page"),
            p("fault_fexit", Fexit, "do_swap_page"),
            p("read_fentry", Fentry, "swap_read_folio"),
        ],
        note: "entry from vmf->orig_pte; reads counted inside the fault",
        seen: Some(("6.12", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "",
        backend: Backend::Fentry,
        attach: "fentry/fexit do_swap_page + fentry swap_readpage",
        requires: &[
            Req::BtfFunc("do_swap_page"),
            Req::BtfFunc("swap_readpage"),
            Req::Member("vm_fault", "orig_pte"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("fault_fentry", Fentry, "do_swap_page"),
            p("fault_fexit", Fexit, "do_swap_page"),
            p("read_fentry", Fentry, "swap_readpage"),
        ],
        note: "entry from vmf->orig_pte; reads counted inside the fault",
        seen: Some(("6.1", "6.1")),
        silences: &[],
    },
    AttachPoint {
        metric: "",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe do_swap_page + kprobe swap_read_folio",
        requires: &[
            Req::Kallsyms("do_swap_page"),
            Req::Kallsyms("swap_read_folio"),
            Req::Member("vm_fault", "orig_pte"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("fault_kprobe", Kprobe, "do_swap_page"),
            p("fault_kretprobe", Kretprobe, "do_swap_page"),
            p("read_kprobe", Kprobe, "swap_read_folio"),
        ],
        note: "entry from vmf->orig_pte; reads counted inside the fault",
        seen: Some(("6.12", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe do_swap_page + kprobe swap_readpage",
        requires: &[
            Req::Kallsyms("do_swap_page"),
            Req::Kallsyms("swap_readpage"),
            Req::Member("vm_fault", "orig_pte"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("fault_kprobe", Kprobe, "do_swap_page"),
            p("fault_kretprobe", Kretprobe, "do_swap_page"),
            p("read_kprobe", Kprobe, "swap_readpage"),
        ],
        note: "entry from vmf->orig_pte; reads counted inside the fault",
        seen: Some(("6.1", "6.1")),
        silences: &[],
    },
];

pub const ATTACH_POINTS: &[AttachPoint] = &[
    // swap-out
    AttachPoint {
        metric: "swap-out",
        backend: Backend::Fentry,
        attach: "fentry swap_writeout (6.16+)",
        requires: &[
            Req::BtfFunc("swap_writeout"),
            Req::FentryAllowed,
            Req::Built(false),
        ],
        progs: &[],
        note: "",
        seen: None,
        silences: &[],
    },
    AttachPoint {
        metric: "swap-out",
        backend: Backend::Tracepoint,
        attach: crate::trace::OUT_FREED_ATTACH,
        requires: &[
            Req::Tracepoint("mm_vmscan_write_folio", &["folio"]),
            Req::Tracepoint("mm_lru_insertion", &["folio"]),
            Req::Tracepoint("mm_page_free", &["page", "order"]),
            Req::Tracepoint("vm_unmapped_area", &["addr", "info"]),
            Req::Member("vm_unmapped_area_info", "length"),
            Req::Member("folio", "swap"),
            Req::Member("folio", "mapping"),
            Req::Member("folio", "index"),
            Req::Member("anon_vma", "rb_root"),
            Req::Member("anon_vma_chain", "vma"),
            Req::Member("vm_area_struct", "vm_mm"),
            Req::Built(true),
        ],
        progs: SWAP_OUT_PROGS,
        note: SWAP_OUT_NOTE,
        seen: Some(("6.12", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "swap-out",
        backend: Backend::Tracepoint,
        attach: "vmscan:mm_vmscan_write_folio + pagemap:mm_lru_insertion + kmem:mm_page_free (stored folios too) + mmap:vm_unmapped_area + maple_tree:ma_write (entry in folio->private, < 6.6)",
        requires: &[
            Req::Tracepoint("mm_vmscan_write_folio", &["folio"]),
            Req::Tracepoint("mm_lru_insertion", &["folio"]),
            Req::Tracepoint("mm_page_free", &["page", "order"]),
            Req::Tracepoint("vm_unmapped_area", &["addr", "info"]),
            Req::Member("vm_unmapped_area_info", "length"),
            Req::Member("folio", "private"),
            Req::Member("folio", "mapping"),
            Req::Member("folio", "index"),
            Req::Member("anon_vma", "rb_root"),
            Req::Member("anon_vma_chain", "vma"),
            Req::Member("vm_area_struct", "vm_mm"),
            Req::Built(true),
        ],
        progs: SWAP_OUT_PROGS,
        note: SWAP_OUT_NOTE,
        seen: Some(("6.1", "6.1")),
        silences: &[],
    },
    // swap-fault
    EXACT_FAULT[0].with_metric("swap-fault"),
    EXACT_FAULT[1].with_metric("swap-fault"),
    EXACT_FAULT[2].with_metric("swap-fault"),
    EXACT_FAULT[3].with_metric("swap-fault"),
    AttachPoint {
        metric: "swap-fault",
        backend: Backend::Tracepoint,
        attach:
            "exceptions:page_fault_user + kmem:rss_stat(MM_SWAPENTS) + memcg:count_memcg_events",
        requires: FAULT_TPS,
        progs: FAULT_PROGS,
        note: "entry joined from the swap-out of the same page",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    // swap-read
    EXACT_FAULT[0].with_metric("swap-read"),
    EXACT_FAULT[1].with_metric("swap-read"),
    EXACT_FAULT[2].with_metric("swap-read"),
    EXACT_FAULT[3].with_metric("swap-read"),
    AttachPoint {
        metric: "swap-read",
        backend: Backend::Tracepoint,
        attach: "memcg:count_memcg_events(PSWPIN, SWPIN_ZERO, ZSWPIN) in the faulting task",
        requires: FAULT_TPS,
        progs: FAULT_PROGS,
        note: "",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    // ra-window
    AttachPoint {
        metric: "ra-window",
        backend: Backend::Fentry,
        attach: "fexit swapin_nr_pages",
        requires: &[
            Req::BtfFunc("swapin_nr_pages"),
            Req::FentryAllowed,
            Req::Built(false),
        ],
        progs: &[],
        note: "",
        seen: None,
        silences: &[],
    },
    AttachPoint {
        metric: "ra-window",
        backend: Backend::Fentry,
        attach: "fentry/fexit swap_cluster_readahead + last_readahead_pages",
        requires: &[
            Req::BtfFunc("swap_cluster_readahead"),
            Req::DataSymbol("last_readahead_pages"),
            Req::DataSymbol("swapin_readahead_hits"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("ra_fentry", Fentry, "swap_cluster_readahead"),
            p("ra_fexit", Fexit, "swap_cluster_readahead"),
        ],
        note: "swapin_nr_pages() is inlined: its result is read from its static",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "ra-window",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe swap_cluster_readahead + last_readahead_pages",
        requires: &[
            Req::Kallsyms("swap_cluster_readahead"),
            Req::DataSymbol("last_readahead_pages"),
            Req::DataSymbol("swapin_readahead_hits"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("ra_kprobe", Kprobe, "swap_cluster_readahead"),
            p("ra_kretprobe", Kretprobe, "swap_cluster_readahead"),
        ],
        note: "swapin_nr_pages() is inlined: its result is read from its static",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "ra-window",
        backend: Backend::Tracepoint,
        attach: "pages read per fault (PSWPIN in the faulting task)",
        requires: FAULT_TPS,
        progs: FAULT_PROGS,
        note: "pages actually read: the window less pages already cached",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    // swap-cache-hit
    SWAP_CACHE_HIT_618[0],
    AttachPoint {
        metric: "swap-cache-hit",
        backend: Backend::Fentry,
        attach: "fentry/fexit swap_cache_get_folio (6.1-6.17)",
        requires: &[
            Req::FuncParams("swap_cache_get_folio", &["entry", "vma", "addr"]),
            Req::DataSymbol("swapin_readahead_hits"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("cache_fentry", Fentry, "swap_cache_get_folio"),
            p("cache_fexit", Fexit, "swap_cache_get_folio"),
        ],
        note: "readahead hit when swapin_readahead_hits grew",
        seen: Some(("6.1", "6.12")),
        silences: &[],
    },
    SWAP_CACHE_HIT_618[1],
    AttachPoint {
        metric: "swap-cache-hit",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe swap_cache_get_folio (6.1-6.17)",
        requires: &[
            Req::Kallsyms("swap_cache_get_folio"),
            Req::FuncParams("swap_cache_get_folio", &["entry", "vma", "addr"]),
            Req::DataSymbol("swapin_readahead_hits"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("cache_kprobe", Kprobe, "swap_cache_get_folio"),
            p("cache_kretprobe", Kretprobe, "swap_cache_get_folio"),
        ],
        note: "readahead hit when swapin_readahead_hits grew",
        seen: Some(("6.1", "6.12")),
        silences: &[],
    },
    AttachPoint {
        metric: "swap-cache-hit",
        backend: Backend::Tracepoint,
        attach: "swap fault without PGMAJFAULT = swap-cache hit",
        requires: FAULT_TPS,
        progs: FAULT_PROGS,
        note: "",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    // free-latency
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Fentry,
        attach: "fentry/fexit swapcache_free_entries (<= 6.14)",
        requires: &[
            Req::BtfFunc("swapcache_free_entries"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("free_fentry", Fentry, "swapcache_free_entries"),
            p("free_fexit", Fexit, "swapcache_free_entries"),
        ],
        note: "",
        seen: Some(("6.1", "6.12")),
        silences: &[],
    },
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe swapcache_free_entries (<= 6.14)",
        requires: &[
            Req::Kallsyms("swapcache_free_entries"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("free_kprobe", Kprobe, "swapcache_free_entries"),
            p("free_kretprobe", Kretprobe, "swapcache_free_entries"),
        ],
        note: "",
        seen: Some(("6.1", "6.12")),
        silences: &[],
    },
    FREE_RANGE[0],
    FREE_RANGE[1],
    FREE_RANGE[2],
    FREE_RANGE[3],
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Tracepoint,
        attach: "kmem:rss_stat(MM_SWAPENTS) outside faults: zap batches at exit, munmap, mmap(MAP_FIXED) and madvise (the last three with their range)",
        requires: &[
            Req::Tracepoint("rss_stat", &["mm", "member"]),
            Req::Member("task_struct", "flags"),
            Req::Member("mm_struct", "rss_stat"),
            Req::Built(true),
        ],
        progs: &[p("rss_stat", RawTracepoint, "rss_stat")],
        note: "not swapcache_free_entries: swap entries freed by zap_pte_range(), a PTE table at a time",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    // zswap
    ZSWAP[0],
    ZSWAP[1],
    ZSWAP[2],
    ZSWAP[3],
    ZSWAP[4],
    // zswap-writeback
    ZSWAP_WRITEBACK[0],
    ZSWAP_WRITEBACK[1],
    ZSWAP_WRITEBACK[2],
    ZSWAP_WRITEBACK[3],
    ZSWAP_WRITEBACK[4],
    // khugepaged
    KHUGEPAGED[0],
    KHUGEPAGED[1],
    KHUGEPAGED[2],
    // reclaim
    AttachPoint {
        metric: "reclaim",
        backend: Backend::Tracepoint,
        attach: "vmscan:mm_vmscan_{direct,memcg}_reclaim_{begin,end}",
        requires: &[
            // The programs read no argument of begin (7.x put gfp_flags first).
            Req::Tracepoint("mm_vmscan_direct_reclaim_begin", &[]),
            Req::Tracepoint("mm_vmscan_direct_reclaim_end", &["nr_reclaimed"]),
            Req::Built(true),
        ],
        progs: &[
            p(
                "direct_reclaim_begin",
                RawTracepoint,
                "mm_vmscan_direct_reclaim_begin",
            ),
            p(
                "direct_reclaim_end",
                RawTracepoint,
                "mm_vmscan_direct_reclaim_end",
            ),
            p(
                "memcg_reclaim_begin",
                RawTracepoint,
                "mm_vmscan_memcg_reclaim_begin",
            ),
            p(
                "memcg_reclaim_end",
                RawTracepoint,
                "mm_vmscan_memcg_reclaim_end",
            ),
        ],
        note: "",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
    RECLAIM_ISOLATE[0],
    RECLAIM_ISOLATE[1],
    // swapoff: the syscall functions, never a syscall tracepoint (any one
    // of them puts every system call of the host on the slow path).
    SWAPOFF_EXACT[0],
    SWAPOFF_EXACT[1],
    AttachPoint {
        metric: "swapoff",
        backend: Backend::Procfs,
        attach: "/proc/swaps and sysinfo(2) every 10 ms",
        requires: &[Req::Built(true)],
        progs: &[],
        note: "brackets within 10 ms of the call; the caller from /proc/*/task/*/syscall",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
];
