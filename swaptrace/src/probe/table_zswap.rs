//! Attach-table rows of zswap (stores and loads, writebacks) and of
//! khugepaged (its swap-ins for collapse, its scans).

use super::table::{p, AttachPoint, Backend, Req, FAULT_PROGS};
use super::table_exact::ZSWAP_WB_CB;
use super::ProgKind::{self, Fentry, Fexit, Kprobe, Kretprobe, RawTracepoint};
use swaptrace_common::konst::K_EV_ZSWPWB;

/// `zswap`: stores and loads, and where each went.
pub const ZSWAP: [AttachPoint; 5] = [
    AttachPoint {
        metric: "zswap",
        backend: Backend::Fentry,
        attach: "fentry/fexit zswap_store, fexit zswap_load",
        requires: &[
            Req::BtfFunc("zswap_store"),
            Req::BtfFunc("zswap_load"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("zswap_store_fentry", Fentry, "zswap_store"),
            p("zswap_store_fexit", Fexit, "zswap_store"),
            p("zswap_load_fexit", Fexit, "zswap_load"),
        ],
        note: "",
        seen: Some(("6.12", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "zswap",
        backend: Backend::Fentry,
        attach: "fexit zswap_frontswap_store/load (<= 6.5)",
        requires: &[
            Req::BtfFunc("zswap_frontswap_store"),
            Req::BtfFunc("zswap_frontswap_load"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[
            p("zswap_store_fexit", Fexit, "zswap_frontswap_store"),
            p("zswap_load_fexit", Fexit, "zswap_frontswap_load"),
        ],
        note: "",
        seen: Some(("6.1", "6.1")),
        silences: &[],
    },
    AttachPoint {
        metric: "zswap",
        backend: Backend::Kprobe,
        attach: "kprobe/kretprobe zswap_store, kretprobe zswap_load",
        requires: &[
            Req::Kallsyms("zswap_store"),
            Req::Kallsyms("zswap_load"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("zswap_store_kprobe", Kprobe, "zswap_store"),
            p("zswap_store_kretprobe", Kretprobe, "zswap_store"),
            p("zswap_load_kretprobe", Kretprobe, "zswap_load"),
        ],
        note: "",
        seen: Some(("6.12", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "zswap",
        backend: Backend::Kprobe,
        attach: "kretprobe zswap_frontswap_store/load (<= 6.5)",
        requires: &[
            Req::Kallsyms("zswap_frontswap_store"),
            Req::Kallsyms("zswap_frontswap_load"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[
            p("zswap_store_kretprobe", Kretprobe, "zswap_frontswap_store"),
            p("zswap_load_kretprobe", Kretprobe, "zswap_frontswap_load"),
        ],
        note: "",
        seen: Some(("6.1", "6.1")),
        silences: &[],
    },
    AttachPoint {
        metric: "zswap",
        backend: Backend::Tracepoint,
        attach: "memcg:count_memcg_events(ZSWPOUT, ZSWPIN, ZSWPWB)",
        requires: &[
            Req::Tracepoint("count_memcg_events", &["memcg", "item", "val"]),
            Req::VmEvent("ZSWPOUT"),
            Req::VmEvent("ZSWPIN"),
            Req::VmEvent("ZSWPWB"),
            Req::Built(true),
        ],
        progs: FAULT_PROGS,
        note: "stores that are rejected are not seen",
        seen: Some(("6.18", "6.18")),
        silences: &[],
    },
];

/// `zswap-writeback`: pages the pool wrote back to the swap device.
pub const ZSWAP_WRITEBACK: [AttachPoint; 5] = [
    AttachPoint {
        metric: "zswap-writeback",
        backend: Backend::Fentry,
        attach: "fexit zswap_writeback_entry",
        requires: &[
            Req::BtfFunc("zswap_writeback_entry"),
            Req::FentryAllowed,
            Req::Built(true),
        ],
        progs: &[p("zswap_wb_fexit", Fexit, "zswap_writeback_entry")],
        note: "0 returned: one page written back",
        seen: Some(("6.1", "6.12")),
        silences: &[K_EV_ZSWPWB],
    },
    ZSWAP_WB_CB[0],
    AttachPoint {
        metric: "zswap-writeback",
        backend: Backend::Kprobe,
        attach: "kretprobe zswap_writeback_entry",
        requires: &[
            Req::Kallsyms("zswap_writeback_entry"),
            Req::KprobesBuilt,
            Req::Built(true),
        ],
        progs: &[p("zswap_wb_kretprobe", Kretprobe, "zswap_writeback_entry")],
        note: "0 returned: one page written back",
        seen: Some(("6.1", "6.12")),
        silences: &[K_EV_ZSWPWB],
    },
    ZSWAP_WB_CB[1],
    AttachPoint {
        metric: "zswap-writeback",
        backend: Backend::Tracepoint,
        attach: "memcg:count_memcg_events(ZSWPWB)",
        requires: &[
            Req::Tracepoint("count_memcg_events", &["memcg", "item", "val"]),
            Req::VmEvent("ZSWPWB"),
            Req::Built(true),
        ],
        progs: &[p("count_memcg_events", RawTracepoint, "count_memcg_events")],
        note: "",
        seen: Some(("6.18", "7.3")),
        silences: &[],
    },
];

/// `khugepaged-swapin` and `khugepaged-scan`.
/// The arguments `khugepaged_scan_pmd_raw` reads, in the order of its
/// `K_SCANA_*` places (`a|b`: either name).
pub const SCAN_PMD_ARGS: [&str; 5] = [
    "folio|page",
    "referenced",
    "none_or_zero",
    "status",
    "unmapped",
];

pub const KHUGEPAGED: [AttachPoint; 3] = [
    AttachPoint {
        metric: "khugepaged-swapin",
        backend: Backend::Tracepoint,
        attach: "huge_memory:mm_collapse_huge_page_swapin",
        requires: &[
            Req::Tracepoint(
                "mm_collapse_huge_page_swapin",
                &["mm", "swapped_in", "referenced", "ret"],
            ),
            Req::Built(true),
        ],
        progs: &[p(
            "collapse_huge_page_swapin",
            RawTracepoint,
            "mm_collapse_huge_page_swapin",
        )],
        note: "",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
    AttachPoint {
        metric: "khugepaged-scan",
        backend: Backend::Tracepoint,
        attach: "huge_memory:mm_khugepaged_scan_pmd + mm_collapse_huge_page_isolate (raw, with the PMD) + mm_collapse_huge_page",
        requires: &[
            Req::Tracepoint("mm_khugepaged_scan_pmd", &["mm"]),
            Req::Tracepoint("mm_collapse_huge_page_isolate", &["folio|page"]),
            Req::TracepointHas("mm_khugepaged_scan_pmd", &SCAN_PMD_ARGS),
            Req::TraceFormat(
                "huge_memory/mm_collapse_huge_page",
                &["mm", "isolated", "status"],
            ),
            Req::Built(true),
        ],
        progs: &[
            p(
                "khugepaged_scan_pmd_raw",
                RawTracepoint,
                "mm_khugepaged_scan_pmd",
            ),
            p(
                "collapse_isolate",
                RawTracepoint,
                "mm_collapse_huge_page_isolate",
            ),
            p(
                "collapse_huge_page",
                ProgKind::Tracepoint("huge_memory"),
                "mm_collapse_huge_page",
            ),
        ],
        note: "the PMD from the isolated or the scan's last folio (its index); \
               7.x passes the scan a pfn, not the folio: the next row",
        seen: Some(("6.1", "6.18")),
        silences: &[],
    },
    AttachPoint {
        metric: "khugepaged-scan",
        backend: Backend::Tracepoint,
        attach: "huge_memory:mm_khugepaged_scan_pmd + mm_collapse_huge_page",
        requires: &[
            Req::TraceFormat(
                "huge_memory/mm_khugepaged_scan_pmd",
                &["mm", "referenced", "none_or_zero", "status", "unmapped"],
            ),
            Req::TraceFormat(
                "huge_memory/mm_collapse_huge_page",
                &["mm", "isolated", "status"],
            ),
            Req::Built(true),
        ],
        progs: &[
            p(
                "khugepaged_scan_pmd",
                ProgKind::Tracepoint("huge_memory"),
                "mm_khugepaged_scan_pmd",
            ),
            p(
                "collapse_huge_page",
                ProgKind::Tracepoint("huge_memory"),
                "mm_collapse_huge_page",
            ),
        ],
        note: "fields at the offsets of the tracepoints' format files",
        seen: Some(("6.1", "7.3")),
        silences: &[],
    },
];
