//! What `record` and `demo` print about the events they captured.

use crate::trace::Summary;
use std::fmt::Write;

/// The first line `record` prints: what went where, and the size per record
/// (none for an empty trace, whose bytes are its header and footer).
pub fn recorded_line(records: u64, elapsed_s: f64, path: &str, bytes: u64) -> String {
    if records == 0 {
        return format!(
            "recorded no records in {elapsed_s:.1}s to {path} ({bytes} bytes: header and footer only)"
        );
    }
    format!(
        "recorded {records} records in {elapsed_s:.1}s to {path} ({bytes} bytes, {:.1} bytes/record)",
        bytes as f64 / records as f64
    )
}

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
            s.other_reads_io + s.other_reads_zero + s.other_reads_zswap + s.other_reads_unknown,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_recording_has_no_bytes_per_record() {
        let l = recorded_line(0, 1.0, "x.swt", 9652);
        assert!(!l.contains("bytes/record"), "{l}");
        assert!(l.contains("no records") && l.contains("9652 bytes"), "{l}");
        let l = recorded_line(4, 1.0, "x.swt", 100);
        assert!(l.ends_with("(100 bytes, 25.0 bytes/record)"), "{l}");
    }
}
