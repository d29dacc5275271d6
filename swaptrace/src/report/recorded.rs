//! What `record` and `demo` print about the events they captured.

use crate::trace::Summary;
use std::fmt::Write;

/// Events and lost events per metric, then the fault totals.
pub fn recorded_text(s: &Summary) -> String {
    let lost = |k: &str| s.lost.get(k).copied().unwrap_or(0);
    let mut o = String::new();
    let _ = writeln!(o, "{:<26} {:>10} {:>8}", "METRIC", "EVENTS", "LOST");
    for (m, n, k) in [
        ("swap-out", s.swap_outs, "swap_out"),
        ("swap-fault", s.faults, "swap_fault"),
        (
            "swap-read (outside faults)",
            s.other_reads_io + s.other_reads_zero + s.other_reads_zswap,
            "swap_read",
        ),
        ("reclaim", s.reclaim_direct + s.reclaim_memcg, "reclaim"),
        (
            "khugepaged-swapin",
            s.khugepaged_swapins,
            "khugepaged_swapin",
        ),
        ("zswap-writeback", s.zswap_writebacks, "zswap_writeback"),
        ("swapoff", s.swapoff_calls, "syscall"),
        ("ra-window", s.ra_windows, "ra_window"),
        ("swap-cache-lookup", s.cache_lookups, "cache_lookup"),
        ("free-batch", s.free_batches, "free_batch"),
        ("zswap-op", s.zswap_stores + s.zswap_loads, "zswap_op"),
    ] {
        let _ = writeln!(o, "{m:<26} {n:>10} {:>8}", lost(k));
    }
    let _ = writeln!(
        o,
        "faults: {} major, {} minor, {} joined to their swap-out entry; pages read {}",
        s.faults_major,
        s.faults - s.faults_major,
        s.faults_joined,
        s.pswpin()
    );
    o
}
