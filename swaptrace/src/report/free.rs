//! `replay --family free`: the recorded free batches, a row per policy and
//! each policy's lock acquisitions per batch; or, for a trace without free
//! batches, its zap spans.

use std::fmt::Write as _;

use serde_json::json;

use super::zap_text;
use crate::replay::free::{FreeMetrics, FreeReplay, LiveFree, ZapSpan};
use crate::stats::CountTable;

/// The text of a [`FreeReplay`]: [`free_text`], or the zap spans.
pub fn free_replay_text(r: &FreeReplay) -> String {
    match r {
        FreeReplay::Replayed { live, metrics } => free_text(live, metrics),
        FreeReplay::NoBatches { zaps } => zaps_text(zaps),
    }
}

/// The JSON of a [`FreeReplay`]: [`free_json`], or the zap spans.
pub fn free_replay_json(r: &FreeReplay) -> serde_json::Value {
    match r {
        FreeReplay::Replayed { live, metrics } => free_json(live, metrics),
        FreeReplay::NoBatches { zaps } => json!({ "free_batches": 0, "zaps": zaps }),
    }
}

fn zaps_text(zaps: &[ZapSpan]) -> String {
    if zaps.is_empty() {
        return String::new();
    }
    format!(
        "swap entries freed by zapping page tables (exit, munmap):\n{}",
        zap_text(zaps)
    )
}

/// Fixed-width table (one row per policy) and a runs-per-batch table per policy.
pub fn free_text(live: &LiveFree, metrics: &[FreeMetrics]) -> String {
    let mut s = String::new();
    let devs: Vec<String> = live.devices.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(
        s,
        "recorded: {} free batches, {} entries, devices [{}], {} batches mixing devices",
        live.batches,
        live.entries,
        devs.join(", "),
        live.mixed_batches
    );
    let _ = writeln!(
        s,
        "live free-batch latency (ns; swapcache_free_entries, or one cluster per call on 6.15+): mean {:.0} p50 {} p90 {} p99 {} p99.9 {} max {}",
        live.lat_mean_ns,
        live.lat_p50_ns,
        live.lat_p90_ns,
        live.lat_p99_ns,
        live.lat_p999_ns,
        live.lat_max_ns
    );
    if let Some(m) = metrics.first() {
        let _ = writeln!(
            s,
            "model: {} ns per lock + {} ns per entry (presets unless overridden)",
            m.cost.lock_ns, m.cost.entry_ns
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:>10} {:>12} {:>10} {:>11} {:>9} {:>9} {:>12}",
        "POLICY", "BATCHES", "ENTRIES", "LOCKS", "LOCKS/BATCH", "LOCKS/1K", "MIXED", "MODEL_US"
    );
    for m in metrics {
        let _ = writeln!(
            s,
            "{:<12} {:>10} {:>12} {:>10} {:>11.2} {:>9.1} {:>9} {:>12.1}",
            m.policy,
            m.batches,
            m.entries,
            m.locks,
            m.locks_per_batch,
            m.locks_per_1k_entries,
            m.mixed_batches,
            m.model_ns / 1000.0
        );
    }
    for m in metrics {
        let mut c = CountTable::new("runs");
        for (&runs, &n) in &m.runs_per_batch {
            c.add(runs as u64, n);
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "[{}] lock acquisitions (runs) per batch:", m.policy);
        let _ = write!(s, "{c}");
    }
    s
}

pub fn free_json(live: &LiveFree, metrics: &[FreeMetrics]) -> serde_json::Value {
    let policies: Vec<serde_json::Value> = metrics
        .iter()
        .map(|m| {
            let runs: serde_json::Map<String, serde_json::Value> = m
                .runs_per_batch
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({
                "policy": m.policy,
                "batches": m.batches,
                "entries": m.entries,
                "locks": m.locks,
                "locks_per_batch": m.locks_per_batch,
                "locks_per_1k_entries": m.locks_per_1k_entries,
                "mixed_batches": m.mixed_batches,
                "model_ns": m.model_ns,
                "model_ns_per_batch": m.model_ns_per_batch,
                "runs_per_batch": runs,
                "cost": { "lock_ns": m.cost.lock_ns, "entry_ns": m.cost.entry_ns },
            })
        })
        .collect();
    json!({
        "live": {
            "batches": live.batches,
            "entries": live.entries,
            "devices": live.devices,
            "mixed_batches": live.mixed_batches,
            "lat_ns": {
                "mean": live.lat_mean_ns,
                "p50": live.lat_p50_ns,
                "p90": live.lat_p90_ns,
                "p99": live.lat_p99_ns,
                "p99.9": live.lat_p999_ns,
                "max": live.lat_max_ns,
            },
        },
        "policies": policies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::free::{replay_free, synth_free, FreeCost, FreeInput, FreePolicy};
    use crate::trace::{Record, SwapEntry};

    #[test]
    fn free_reports() {
        let mut recs = synth_free(2, 640, 64, 16, 3);
        recs.push(Record::FreeBatch {
            ts: 9,
            tid: 5,
            lat_ns: 1_000_000,
            entries: vec![SwapEntry { dev: 3, offset: 1 }],
        });
        let input = FreeInput::from_records(&recs).expect("batches");
        let live = LiveFree::from_input(&input);
        let m = replay_free(&input, &FreePolicy::defaults(), FreeCost::default());
        let t = free_text(&live, &m);
        assert!(t.contains("LOCKS/BATCH"));
        assert!(t.contains("MODEL_US"));
        assert!(t.contains("[per-device] lock acquisitions"));
        assert!(t.contains("runs = 4"));
        let j = free_json(&live, &m);
        assert_eq!(j["live"]["batches"], 11);
        assert_eq!(j["policies"][0]["policy"], "unsorted");
        assert_eq!(j["policies"][0]["locks"], 10 * 4 + 1);
        assert_eq!(j["policies"][1]["runs_per_batch"]["2"], 10);
        assert_eq!(j["policies"].as_array().map(|a| a.len()), Some(4));
        let r = FreeReplay::Replayed { live, metrics: m };
        assert_eq!(free_replay_text(&r), t);
        assert_eq!(free_replay_json(&r), j);
    }

    #[test]
    fn zap_spans_when_no_batches() {
        let none = FreeReplay::NoBatches { zaps: Vec::new() };
        assert_eq!(free_replay_text(&none), "");
        assert_eq!(
            free_replay_json(&none),
            json!({ "free_batches": 0, "zaps": [] })
        );
        let zaps = vec![ZapSpan {
            mm: 7,
            batches: 2,
            ..ZapSpan::default()
        }];
        let t = free_replay_text(&FreeReplay::NoBatches { zaps: zaps.clone() });
        assert!(t.starts_with("swap entries freed by zapping page tables (exit, munmap):\nMM "));
        assert!(t.ends_with(&zap_text(&zaps)));
        let j = free_replay_json(&FreeReplay::NoBatches { zaps });
        assert_eq!(j["zaps"][0]["mm"], 7);
    }
}
