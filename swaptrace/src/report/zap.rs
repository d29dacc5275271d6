//! Swap entries freed by zapping page tables (`Record::Zap`): what a host
//! without a probe on the free path can show of the "memory freeing time"
//! of the sorted swap-entry freeing thread, per address space.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::replay::free::ZapSpan;

pub fn zap_text(spans: &[ZapSpan]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<6} {:>8} {:>8} {:>10} {:>10} {:>8} {:>10} {:>10}",
        "MM", "BATCHES", "AT_EXIT", "FREED", "LEFT", "SPAN_MS", "P50_US", "MAX_US"
    );
    for s in spans {
        let mut iv = s.intervals_us.clone();
        iv.sort_unstable();
        let p50 = iv.get(iv.len() / 2).copied();
        let show = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        let _ = writeln!(
            o,
            "{:<6} {:>8} {:>8} {:>10} {:>10} {:>8.1} {:>10} {:>10}",
            s.mm,
            s.batches,
            s.exiting,
            show(s.freed()),
            show(s.last_left),
            s.span_ns as f64 / 1e6,
            show(p50.map(|v| v as i64)),
            show(iv.last().map(|&v| v as i64)),
        );
    }
    o
}

/// The footprint table of the khugepaged allocstall-gating thread from samples: per process, its first and
/// last sample (Anonymous, AnonHugePages, Swap, huge fraction).
pub fn footprint_text(samples: &[crate::trace::Footprint]) -> String {
    let mut by_pid: BTreeMap<u32, Vec<&crate::trace::Footprint>> = BTreeMap::new();
    for s in samples {
        by_pid.entry(s.pid).or_default().push(s);
    }
    // The processes that held the most memory.
    let mut pids: Vec<_> = by_pid
        .iter()
        .map(|(p, v)| {
            (
                v.iter()
                    .map(|s| s.anonymous_kib + s.swap_kib)
                    .max()
                    .unwrap_or(0),
                *p,
            )
        })
        .collect();
    pids.sort_unstable_by(|a, b| b.cmp(a));
    let mut o = String::new();
    if pids.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nfootprint (smaps_rollup), first and last sample:\n{:<8} {:>8} {:>12} {:>14} {:>12} {:>9}",
        "PID", "AT_S", "ANONYMOUS", "ANONHUGEPAGES", "SWAP", "FRACTION"
    );
    let t0 = samples.iter().map(|s| s.ts).min().unwrap_or(0);
    for &(_, pid) in pids.iter().take(3) {
        let v = &by_pid[&pid];
        let pick = [v.first(), v.last()];
        for s in pick.into_iter().flatten() {
            let frac = if s.anonymous_kib > 0 {
                s.anon_huge_kib as f64 * 100.0 / s.anonymous_kib as f64
            } else {
                0.0
            };
            let _ = writeln!(
                o,
                "{:<8} {:>8.1} {:>9} kB {:>11} kB {:>9} kB {:>8.0}%",
                pid,
                s.ts.saturating_sub(t0) as f64 / 1e9,
                s.anonymous_kib,
                s.anon_huge_kib,
                s.swap_kib,
                frac
            );
        }
    }
    o
}
