//! Attach-table rows of the exact probes for the swap path of 6.15 and
//! later: the swap-cache hit of `swap_update_readahead()` (6.18+) and the
//! per-cluster frees (`swap_entries_free()` 6.15-6.18,
//! `__swap_cluster_free_entries()` 7.x), and zswap writeback where
//! `zswap_writeback_entry()` is inlined (6.18+); and swapon/swapoff from
//! their system call functions.

use super::table::{p, AttachPoint, Backend, Req};
use super::ProgKind::{Fentry, Fexit, Kprobe, Kretprobe};
use swaptrace_common::konst::K_EV_ZSWPWB;

/// `swap_update_readahead(folio, vma, addr)`: `swap_cache_get_folio(entry)`
/// became a plain lookup (6.18), and this is called for each hit.
pub const SWAP_CACHE_HIT_618: [AttachPoint; 2] = [
    AttachPoint {
        metric: "swap-cache-hit",
        backend: Backend::Fentry,
        attach: "fentry swap_update_readahead (6.18+)",
        requires: &[
            Req::FuncParams("swap_update_readahead", &["folio", "vma", "addr"]),
            Req::Member("folio", "swap"),
            Req::Member("folio", "flags"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[p("cache_ra_fentry", Fentry, "swap_update_readahead")],
        note: "hits only (misses are not seen); readahead hit = PG_readahead set, as SWAP_RA_HIT",
        seen: Some(("6.18", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "swap-cache-hit",
        backend: Backend::Kprobe,
        attach: "kprobe swap_update_readahead (6.18+)",
        requires: &[
            Req::Kallsyms("swap_update_readahead"),
            Req::FuncParams("swap_update_readahead", &["folio", "vma", "addr"]),
            Req::Member("folio", "swap"),
            Req::Member("folio", "flags"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[p("cache_ra_kprobe", Kprobe, "swap_update_readahead")],
        note: "hits only (misses are not seen); readahead hit = PG_readahead set, as SWAP_RA_HIT",
        seen: Some(("6.18", "7.3")),
        silences: &[],
    },
];

/// `shrink_folio_list(folio_list, ...)`: the folios reclaim isolated. Those
/// read ahead from zswap (dirty, never mapped) it keeps; MGLRU's isolation
/// cleared their PG_readahead where that is PG_reclaim.
pub const RECLAIM_ISOLATE: [AttachPoint; 2] = [
    AttachPoint {
        metric: "reclaim-isolate",
        backend: Backend::Fentry,
        attach: "fentry shrink_folio_list",
        requires: &[
            Req::FuncParams("shrink_folio_list", &["folio_list"]),
            Req::Member("folio", "lru"),
            Req::Member("folio", "mapping"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[p("isolated_fentry", Fentry, "shrink_folio_list")],
        note: "watched swap-cache folios, dirty and never mapped, in the list reclaim isolated; only where reclaim keeps them and MGLRU clears their PG_readahead (else it returns at once)",
        seen: None,
        silences: &[],
    },
    AttachPoint {
        metric: "reclaim-isolate",
        backend: Backend::Kprobe,
        attach: "kprobe shrink_folio_list",
        requires: &[
            Req::Kallsyms("shrink_folio_list"),
            Req::FuncParams("shrink_folio_list", &["folio_list"]),
            Req::Member("folio", "lru"),
            Req::Member("folio", "mapping"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[p("isolated_kprobe", Kprobe, "shrink_folio_list")],
        note: "watched swap-cache folios, dirty and never mapped, in the list reclaim isolated; only where reclaim keeps them and MGLRU clears their PG_readahead (else it returns at once)",
        seen: None,
        silences: &[],
    },
];

/// The last references of one cluster's entries dropped under its lock:
/// each call is one free batch of one cluster (one lock).
pub const FREE_RANGE: [AttachPoint; 4] = [
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Fentry,
        attach: "fentry/fexit swap_entries_free (6.15-6.18)",
        requires: &[
            Req::FuncParams("swap_entries_free", &["si", "ci", "entry"]),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("free_range_fentry", Fentry, "swap_entries_free"),
            p("free_range_fexit", Fexit, "swap_entries_free"),
        ],
        note: "one call per cluster, under its lock: entries entry..entry+nr",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Fentry,
        attach: "fentry/fexit __swap_cluster_free_entries (7.x)",
        requires: &[
            Req::FuncParams(
                "__swap_cluster_free_entries",
                &["si", "ci", "ci_start", "nr_pages"],
            ),
            Req::Member("swap_info_struct", "type"),
            Req::Member("swap_info_struct", "cluster_info"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("free_cluster_fentry", Fentry, "__swap_cluster_free_entries"),
            p("free_cluster_fexit", Fexit, "__swap_cluster_free_entries"),
        ],
        note: "one call per cluster, under its lock: cluster index from ci - si->cluster_info",
        seen: Some(("7.3", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe swap_entries_free (6.15-6.18)",
        requires: &[
            Req::Kallsyms("swap_entries_free"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("free_range_kprobe", Kprobe, "swap_entries_free"),
            p("free_range_kretprobe", Kretprobe, "swap_entries_free"),
        ],
        note: "one call per cluster, under its lock: entries entry..entry+nr",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
    AttachPoint {
        metric: "free-latency",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe __swap_cluster_free_entries (7.x)",
        requires: &[
            Req::Kallsyms("__swap_cluster_free_entries"),
            Req::FuncParams(
                "__swap_cluster_free_entries",
                &["si", "ci", "ci_start", "nr_pages"],
            ),
            Req::Member("swap_info_struct", "type"),
            Req::Member("swap_info_struct", "cluster_info"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("free_cluster_kprobe", Kprobe, "__swap_cluster_free_entries"),
            p(
                "free_range_kretprobe",
                Kretprobe,
                "__swap_cluster_free_entries",
            ),
        ],
        note: "one call per cluster, under its lock: cluster index from ci - si->cluster_info",
        seen: Some(("7.3", "7.3")),
        silences: &[],
    },
];

/// `shrink_memcg_cb()`, the zswap LRU walk's callback: 6.18 inlines
/// `zswap_writeback_entry()` into it. Without these, fentry kernels count
/// writebacks with `memcg:count_memcg_events`, a program on every fault.
pub const ZSWAP_WB_CB: [AttachPoint; 2] = [
    AttachPoint {
        metric: "zswap-writeback",
        backend: Backend::Fentry,
        attach: "fentry/fexit shrink_memcg_cb",
        requires: &[
            Req::BtfFunc("shrink_memcg_cb"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("zswap_wb_cb_fentry", Fentry, "shrink_memcg_cb"),
            p("zswap_wb_cb_fexit", Fexit, "shrink_memcg_cb"),
        ],
        note: "LRU_REMOVED_RETRY returned: one page written back (zswap_writeback_entry() inlined); the entry read at the call",
        seen: Some(("6.18", "7.3")),
        silences: &[K_EV_ZSWPWB],
    },
    AttachPoint {
        metric: "zswap-writeback",
        backend: Backend::Kprobe,
        attach: "kretprobe shrink_memcg_cb",
        requires: &[
            Req::Kallsyms("shrink_memcg_cb"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[p("zswap_wb_cb_kretprobe", Kretprobe, "shrink_memcg_cb")],
        note: "LRU_REMOVED_RETRY returned: one page written back (zswap_writeback_entry() inlined)",
        seen: None,
        silences: &[K_EV_ZSWPWB],
    },
];

/// `__x64_sys_swap{on,off}` entry and return: swapon/swapoff brackets
/// without a syscall tracepoint (any one of them puts every system call of
/// the host on the tracing slow path).
pub const SWAPOFF_EXACT: [AttachPoint; 2] = [
    AttachPoint {
        metric: "swapoff",
        backend: Backend::Fentry,
        attach: "fentry/fexit __x64_sys_swap{on,off}",
        requires: &[
            Req::BtfFunc("__x64_sys_swapoff"),
            Req::BtfFunc("__x64_sys_swapon"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("swapoff_fentry", Fentry, "__x64_sys_swapoff"),
            p("swapoff_fexit", Fexit, "__x64_sys_swapoff"),
            p("swapon_fentry", Fentry, "__x64_sys_swapon"),
            p("swapon_fexit", Fexit, "__x64_sys_swapon"),
        ],
        note: "",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "swapoff",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe __x64_sys_swap{on,off}",
        requires: &[
            Req::Kallsyms("__x64_sys_swapoff"),
            Req::Kallsyms("__x64_sys_swapon"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("swapoff_kprobe", Kprobe, "__x64_sys_swapoff"),
            p("swapoff_kretprobe", Kretprobe, "__x64_sys_swapoff"),
            p("swapon_kprobe", Kprobe, "__x64_sys_swapon"),
            p("swapon_kretprobe", Kretprobe, "__x64_sys_swapon"),
        ],
        note: "attached in every guest; the swapoff scenario itself runs under fentry",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
];

#[cfg(test)]
mod tests {
    use super::super::table::{Req, ATTACH_POINTS};

    fn version(v: &str) -> (u32, u32) {
        crate::trace::kernel_version(v)
    }

    #[test]
    fn seen_ranges_are_ordered_and_only_on_built_rows() {
        let mut seen = 0;
        for ap in ATTACH_POINTS {
            let built = !ap.requires.iter().any(|r| matches!(r, Req::Built(false)));
            if let Some((first, last)) = ap.seen {
                seen += 1;
                assert!(built, "{}: seen but not built", ap.attach);
                assert!(version(first) != (0, 0), "{}: {first}", ap.attach);
                assert!(
                    version(first) <= version(last),
                    "{}: {first} > {last}",
                    ap.attach
                );
            }
        }
        assert!(seen > 20, "{seen} rows seen");
    }

    /// The rows kept in their own arrays are all in the table (indexed by
    /// hand there: a row added to an array is easily left out).
    #[test]
    fn every_split_out_row_is_in_the_table() {
        use super::super::table_zswap::{KHUGEPAGED, ZSWAP, ZSWAP_WRITEBACK};
        use super::*;
        let rows = SWAP_CACHE_HIT_618
            .iter()
            .chain(&RECLAIM_ISOLATE)
            .chain(&FREE_RANGE)
            .chain(&SWAPOFF_EXACT)
            .chain(&ZSWAP)
            .chain(&ZSWAP_WRITEBACK)
            .chain(&KHUGEPAGED);
        for row in rows {
            assert!(
                ATTACH_POINTS
                    .iter()
                    .any(|a| a.metric == row.metric && a.attach == row.attach),
                "{} {} is not in ATTACH_POINTS",
                row.metric,
                row.attach
            );
        }
    }
}
