//! `replay --family zswap`: the recorded counts, a `live` row and a row
//! per policy.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use crate::replay::zswap::{ZswapLive, ZswapMetrics};

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Fixed-width table: a `live` row with the trace's counts, then a row per policy.
pub fn zswap_text(live: &ZswapLive, metrics: &[ZswapMetrics]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "recorded: {} swap-out pages ({} to zswap, {} to disk, {} zero-filled), {} swap faults ({} swap-cache hits, {} without a swap entry), {} reclaim episodes, {:.1} s",
        live.swap_outs,
        live.zswap_stores,
        live.disk_swap_outs,
        live.zero_swap_outs,
        live.swap_faults,
        live.cache_hits,
        live.faults_without_entry,
        live.reclaim_episodes,
        live.duration_s
    );
    let _ = writeln!(
        s,
        "vmstat deltas: zswpout {} zswpin {} zswpwb {} pswpin {} pswpout {}",
        opt(live.zswpout),
        opt(live.zswpin),
        opt(live.zswpwb),
        opt(live.pswpin),
        opt(live.pswpout)
    );
    if live.zswap_ops > 0 {
        let _ = writeln!(
            s,
            "zswap probes: stores {} accepted / {} rejected, loads {} found / {} missed",
            live.store_ok, live.store_rejected, live.load_found, live.load_missed
        );
    }
    if live.lost > 0 {
        let _ = writeln!(
            s,
            "warning: {} events lost by the probes; the replay misses them",
            live.lost
        );
    }
    if let Some(m) = metrics.first() {
        let shrinker = if m.pressure.starts_with("recorded") {
            format!(
                "shrinker at the {}, other policies walking as far times their count",
                m.pressure
            )
        } else {
            format!(
                "shrinker at priority {} on {}",
                m.shrinker_priority, m.pressure
            )
        };
        let _ = writeln!(
            s,
            "model: pool limit {} pages, accept threshold {} pages, compression ratio {:.2}, {shrinker}",
            m.pool_limit_pages, m.accept_threshold_pages, m.compression_ratio
        );
        let _ = writeln!(
            s,
            "not replayed: {} swap-ins of entries swapped out before the trace, {} swap-cache hits",
            m.untracked_swapins, m.cache_hits
        );
        if m.stores_refused_as_recorded > 0 {
            let _ = writeln!(
                s,
                "refused as the recording's zswap refused them (with room in the pool): {} pages",
                m.stores_refused_as_recorded
            );
        }
        let dropped = m.resident_pages.map_or_else(
            || "only where the trace records its folio freed (out_freed)".to_string(),
            |r| format!("after {r} more pages come in"),
        );
        let _ = writeln!(
            s,
            "a page read from disk keeps its slot, dropped clean {dropped} \
             (REREAD: disk reads of such pages)",
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>11}",
        "POLICY",
        "STORED",
        "REJECTED",
        "ZSWAP_HITS",
        "DISK_IN",
        "REREAD",
        "WRITEBACK",
        "PEAK_POOL",
        "MEAN_POOL"
    );
    // The exact probes see each store and load; the counters only those
    // that succeeded. A store is a folio's: its pages are the swap-outs'
    // kinds where every one is known.
    let kinds = live.unknown_swap_outs == 0 && live.zswap_stores + live.disk_swap_outs > 0;
    let (stored, rejected, hits, disk) = if live.zswap_ops > 0 {
        let disk = live.pswpin.unwrap_or(live.load_missed);
        let (stored, rejected) = if kinds {
            (live.zswap_stores, live.disk_swap_outs)
        } else {
            (live.store_ok, live.store_rejected)
        };
        (stored, rejected, live.load_found, disk)
    } else {
        let disk = live.pswpin.unwrap_or(live.disk_pages_read);
        (
            live.zswap_stores,
            live.disk_swap_outs,
            live.zswap_loads,
            disk,
        )
    };
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>11}",
        "live", stored, rejected, hits, disk, "-", live.writebacks, "-", "-"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<24} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>11.1}",
            m.policy,
            m.stores_accepted,
            m.stores_rejected,
            m.zswap_hits,
            m.disk_swapins,
            m.disk_swapins_reread,
            m.writebacks,
            m.peak_pool_pages,
            m.mean_pool_pages
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<24} {:>12} {:>12} {:>12} {:>12} {:>10}   (faulting page: recorded -> model)",
        "POLICY", "ZSWAP>ZSWAP", "ZSWAP>DISK", "DISK>ZSWAP", "DISK>DISK", "NO_ENTRY"
    );
    for m in metrics {
        let a = &m.agreement;
        let _ = writeln!(
            s,
            "{:<24} {:>12} {:>12} {:>12} {:>12} {:>10}",
            m.policy, a.zswap_zswap, a.zswap_disk, a.disk_zswap, a.disk_disk, a.other
        );
    }
    s
}

pub fn zswap_json(live: &ZswapLive, metrics: &[ZswapMetrics]) -> serde_json::Value {
    let vmstat: BTreeMap<&str, Option<u64>> = [
        ("zswpout", live.zswpout),
        ("zswpin", live.zswpin),
        ("zswpwb", live.zswpwb),
        ("pswpin", live.pswpin),
        ("pswpout", live.pswpout),
    ]
    .into_iter()
    .collect();
    json!({
        "live": live,
        "vmstat": vmstat,
        "policies": metrics,
    })
}

/// What the zswap table needs said first: whether zswap was on when the
/// trace was recorded (the header's zswap parameters) and what the
/// modelled pool limit is sized from.
pub fn zswap_context(t: &crate::trace::Loaded, metrics: &[ZswapMetrics]) -> String {
    let h = &t.header;
    let mut s = String::new();
    let on = h
        .zswap
        .get("enabled")
        .map(|v| matches!(v.trim(), "Y" | "y" | "1"));
    match on {
        Some(true) => {}
        Some(false) => {
            let _ = writeln!(
                s,
                "zswap was off when this trace was recorded (zswap.enabled = {}): the live \
                 row's REJECTED are the pages that went to disk instead; the policies model \
                 zswap as if it had been on",
                h.zswap.get("enabled").map_or("", |v| v.trim())
            );
        }
        None => {
            let _ = writeln!(
                s,
                "the trace did not record zswap's parameters (zswap off, or an older trace): \
                 the live row's REJECTED are the pages written to disk; the policies model \
                 zswap as if it had been on"
            );
        }
    }
    if let Some(m) = metrics.first() {
        let host_pages = h.mem_total_kib * 1024 / h.page_size.max(1);
        let pct = crate::replay::zswap::ZswapParams::from_trace(t).max_pool_percent as u64;
        if m.pool_limit_pages == host_pages * pct / 100 {
            let _ = write!(
                s,
                "pool limit {} pages: max_pool_percent {pct}% of the host's {} MiB, as \
                 zswap_max_pages() sizes it (totalram_pages(), not a cgroup's limit)",
                m.pool_limit_pages,
                h.mem_total_kib / 1024
            );
            match h.memory_limit_bytes {
                Some(b) => {
                    let cg = b / h.page_size.max(1) * pct / 100;
                    let _ = writeln!(
                        s,
                        "; for a pool sized from the traced cgroup's {} MiB: --param pool-pages={cg}",
                        b >> 20
                    );
                }
                None => {
                    let _ = writeln!(s);
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::zswap::{
        replay_policies, synth_zswap, ZswapInput, ZswapParams, ZswapPolicy,
    };

    #[test]
    fn zswap_reports() {
        let recs = synth_zswap(1000, 500, 3, 128, 3);
        let input = ZswapInput::from_records(&recs, 4096).expect("input");
        let mut p = ZswapParams::default();
        for s in ["pool-pages=200", "buckets=20"] {
            p.set(s).expect("param");
        }
        let a = replay_policies(&input, &ZswapPolicy::all(), &p).expect("replay");
        let t = zswap_text(&input.live, &a);
        assert!(t.contains("POLICY"));
        assert!(t.contains("DISK_IN"));
        assert!(t.lines().any(|l| l.starts_with("live ")));
        assert!(t.lines().any(|l| l.starts_with("disk-swapin-tracking ")));
        let j = zswap_json(&input.live, &a);
        assert_eq!(j["live"]["zswap_stores"], 2500);
        assert_eq!(j["policies"].as_array().map(|v| v.len()), Some(4));
        assert_eq!(j["policies"][1]["policy"], "shrinker");
        assert_eq!(j["policies"][0]["series"][0][0], 0.0);
        assert!(j["vmstat"]["zswpin"].is_null());
    }

    #[test]
    fn vmstat_deltas_or_dashes() {
        let live = ZswapLive {
            zswpin: Some(100),
            pswpin: Some(0),
            ..ZswapLive::default()
        };
        let t = zswap_text(&live, &[]);
        assert!(t.contains("zswpin 100") && t.contains("zswpwb -"));
    }
}
