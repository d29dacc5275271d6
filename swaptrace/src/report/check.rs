//! Recorded counts against the kernel's own /proc/vmstat deltas.

use crate::trace::Summary;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize)]
pub struct CheckRow {
    pub what: &'static str,
    pub recorded: u64,
    pub counter: &'static str,
    pub kernel: i64,
    /// |recorded - kernel| / kernel in %, None when the kernel saw nothing.
    pub error_pct: Option<f64>,
}

fn row(what: &'static str, recorded: u64, counter: &'static str, kernel: i64) -> CheckRow {
    let error_pct =
        (kernel > 0).then(|| (recorded as f64 - kernel as f64).abs() * 100.0 / kernel as f64);
    CheckRow {
        what,
        recorded,
        counter,
        kernel,
        error_pct,
    }
}

/// One row per recorded figure that a vmstat counter also counts.
pub fn vmstat_check(s: &Summary, delta: &BTreeMap<String, i64>) -> Vec<CheckRow> {
    let d = |k: &str| delta.get(k).copied().unwrap_or(0);
    vec![
        row(
            "major swap faults",
            s.faults_major,
            "pgmajfault",
            d("pgmajfault"),
        ),
        row("pages read (I/O)", s.pswpin(), "pswpin", d("pswpin")),
        row(
            "zero pages read",
            s.swpin_zero(),
            "swpin_zero",
            d("swpin_zero"),
        ),
        row(
            "zswap loads",
            s.fault_zswap_loads + s.other_reads_zswap,
            "zswpin",
            d("zswpin"),
        ),
        row(
            "swap-outs (folios)",
            s.swap_outs,
            "nr_vmscan_write",
            d("nr_vmscan_write"),
        ),
        row(
            "swap-out pages, I/O",
            s.swap_out_io,
            "pswpout",
            d("pswpout"),
        ),
        row(
            "swap-out pages, zero",
            s.swap_out_zero,
            "swpout_zero",
            d("swpout_zero"),
        ),
        row(
            "swap-out pages, zswap",
            s.swap_out_zswap,
            "zswpout",
            d("zswpout"),
        ),
        row(
            "zswap writebacks",
            s.zswap_writebacks,
            "zswpwb",
            d("zswpwb"),
        ),
    ]
}

pub fn check_text(rows: &[CheckRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<24} {:>10}   {:<16} {:>10} {:>8}",
        "RECORDED", "COUNT", "VMSTAT", "DELTA", "ERROR"
    );
    for r in rows {
        let err = r
            .error_pct
            .map(|e| format!("{e:.2}%"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:<24} {:>10}   {:<16} {:>10} {:>8}",
            r.what, r.recorded, r.counter, r.kernel, err
        );
    }
    o
}
