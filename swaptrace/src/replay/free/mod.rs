//! Replaying the trace's swap-entry frees (`swapcache_free_entries()`
//! batches) through models of how the kernel batches them and takes the
//! swap devices' locks.
//!
//! Ported from mm/swapfile.c (4.12 up to 6.9) and mm/swap_slots.c:
//! `free_swap_slot()` collects freed entries in a per-CPU buffer of
//! `SWAP_SLOTS_CACHE_SIZE` (= `SWAP_BATCH`, 64) and hands a full buffer to
//! `swapcache_free_entries()`, which frees each entry under its device's
//! `swap_info_struct->lock`, switching locks in `swap_info_get_cont()`
//! whenever the device changes. Since 4.12 the buffer is first sorted by
//! device (`swp_entry_cmp`), so each device's lock is taken once per batch.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::json;

use crate::report::CountTable;
use crate::trace::{Loaded, Record, SwapEntry};
use crate::workload::SplitMix64;

/// `SWAP_BATCH` / `SWAP_SLOTS_CACHE_SIZE`: entries per per-CPU free buffer.
pub const SWAP_BATCH: usize = 64;
/// Largest N accepted by `batch:N`.
pub const MAX_BATCH: u32 = 4096;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FreeError {
    #[error(
        "the trace has no free batches (swapcache_free_entries); they are recorded \
         only by the exact probes, see `swaptrace doctor`"
    )]
    NoBatches,
    #[error("unknown free policy `{0}` (known: {names})", names = FREE_POLICY_NAMES.join(", "))]
    UnknownPolicy(String),
    #[error("bad batch size in `{0}`: N must be an integer from 1 to {MAX_BATCH}")]
    BadBatchSize(String),
    #[error("bad free cost model: {0}")]
    BadCost(String),
}

/// One recorded `swapcache_free_entries()` call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FreeBatch {
    pub ts: u64,
    pub tid: u32,
    pub lat_ns: u32,
    /// In the order the kernel got them (before its sort).
    pub entries: Vec<SwapEntry>,
}

/// The free batches of a trace, in trace order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FreeInput {
    pub batches: Vec<FreeBatch>,
}

impl FreeInput {
    pub fn from_records(records: &[Record]) -> Result<FreeInput, FreeError> {
        let batches: Vec<FreeBatch> = records
            .iter()
            .filter_map(|r| match r {
                Record::FreeBatch {
                    ts,
                    tid,
                    lat_ns,
                    entries,
                } => Some(FreeBatch {
                    ts: *ts,
                    tid: *tid,
                    lat_ns: *lat_ns,
                    entries: entries.clone(),
                }),
                _ => None,
            })
            .collect();
        if batches.is_empty() {
            return Err(FreeError::NoBatches);
        }
        Ok(FreeInput { batches })
    }

    pub fn from_loaded(t: &Loaded) -> Result<FreeInput, FreeError> {
        FreeInput::from_records(&t.records)
    }

    pub fn entries(&self) -> u64 {
        self.batches.iter().map(|b| b.entries.len() as u64).sum()
    }

    /// The devices of each task's freed entries, in trace order.
    fn dev_streams(&self) -> BTreeMap<u32, Vec<u8>> {
        let mut s: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        for b in &self.batches {
            s.entry(b.tid)
                .or_default()
                .extend(b.entries.iter().map(|e| e.dev));
        }
        s
    }
}

const FREE_POLICY_NAMES: [&str; 4] = ["unsorted", "sorted", "per-device", "batch:N"];

/// Policy names as accepted by [`FreePolicy::from_name`] (`N` stands for a number).
pub fn free_policy_names() -> &'static [&'static str] {
    &FREE_POLICY_NAMES
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreePolicy {
    /// Before 4.12: a lock at each change of device within a batch.
    Unsorted,
    /// Seed 001 (4.12): batch sorted by device, one lock per distinct device.
    Sorted,
    /// Per-CPU-per-device buffers of [`SWAP_BATCH`]: one lock per flush.
    ///
    /// The trace has the task, not the CPU: each task's stream of freed
    /// entries stands in for a CPU's.
    PerDevice,
    /// Each task's stream re-batched into N entries, sorted as the kernel does.
    Batch(u32),
}

impl FreePolicy {
    pub fn from_name(name: &str) -> Result<FreePolicy, FreeError> {
        let s = name.trim();
        match s {
            "unsorted" => return Ok(FreePolicy::Unsorted),
            "sorted" => return Ok(FreePolicy::Sorted),
            "per-device" => return Ok(FreePolicy::PerDevice),
            _ => {}
        }
        let Some(n) = s.strip_prefix("batch:") else {
            return Err(FreeError::UnknownPolicy(name.to_string()));
        };
        super::parse_in(n, 1, MAX_BATCH.into())
            .map(|n| FreePolicy::Batch(n as u32))
            .ok_or_else(|| FreeError::BadBatchSize(name.to_string()))
    }

    pub fn name(&self) -> String {
        match self {
            FreePolicy::Unsorted => "unsorted".into(),
            FreePolicy::Sorted => "sorted".into(),
            FreePolicy::PerDevice => "per-device".into(),
            FreePolicy::Batch(n) => format!("batch:{n}"),
        }
    }

    /// unsorted, sorted, per-device and batch:64.
    pub fn defaults() -> Vec<FreePolicy> {
        vec![
            FreePolicy::Unsorted,
            FreePolicy::Sorted,
            FreePolicy::PerDevice,
            FreePolicy::Batch(SWAP_BATCH as u32),
        ]
    }
}

impl std::str::FromStr for FreePolicy {
    type Err = FreeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FreePolicy::from_name(s)
    }
}

impl std::fmt::Display for FreePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Modelled cost of a free: `locks * lock_ns + entries * entry_ns`.
///
/// The defaults are model presets (an uncontended spin lock round trip and
/// `swap_entry_free()` per entry), not measurements; override them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FreeCost {
    pub lock_ns: f64,
    pub entry_ns: f64,
}

impl Default for FreeCost {
    fn default() -> Self {
        FreeCost {
            lock_ns: 150.0,
            entry_ns: 60.0,
        }
    }
}

impl FreeCost {
    /// Both costs finite and not negative.
    pub fn new(lock_ns: f64, entry_ns: f64) -> Result<FreeCost, FreeError> {
        for (what, v) in [("lock_ns", lock_ns), ("entry_ns", entry_ns)] {
            if !v.is_finite() || v < 0.0 {
                return Err(FreeError::BadCost(format!(
                    "{what} must be a finite number >= 0, got {v}"
                )));
            }
        }
        Ok(FreeCost { lock_ns, entry_ns })
    }

    pub fn ns(&self, locks: u64, entries: u64) -> f64 {
        locks as f64 * self.lock_ns + entries as f64 * self.entry_ns
    }
}

/// One policy's replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FreeMetrics {
    pub policy: String,
    pub batches: u64,
    pub entries: u64,
    /// `swap_info_struct->lock` acquisitions.
    pub locks: u64,
    pub locks_per_batch: f64,
    pub locks_per_1k_entries: f64,
    pub model_ns: f64,
    pub model_ns_per_batch: f64,
    /// Lock acquisitions (runs of one device) per batch → batches.
    pub runs_per_batch: BTreeMap<u32, u64>,
    /// Batches holding entries of more than one device.
    pub mixed_batches: u64,
    pub cost: FreeCost,
}

/// Lock acquisitions by `swapcache_free_entries()` on one unsorted batch:
/// `swap_info_get_cont()` switches locks when the device changes.
fn runs_unsorted(devs: impl IntoIterator<Item = u8>) -> u32 {
    let mut prev = None;
    let mut runs = 0;
    for d in devs {
        if prev != Some(d) {
            runs += 1;
            prev = Some(d);
        }
    }
    runs
}

/// Distinct devices: the lock acquisitions once sorted by `swp_entry_cmp`.
fn distinct(devs: impl IntoIterator<Item = u8>) -> u32 {
    let mut seen = [0u64; 4];
    for d in devs {
        seen[(d >> 6) as usize] |= 1 << (d & 63);
    }
    seen.iter().map(|w| w.count_ones()).sum()
}

#[derive(Default)]
struct Acc {
    batches: u64,
    entries: u64,
    locks: u64,
    mixed: u64,
    runs: BTreeMap<u32, u64>,
}

impl Acc {
    fn add(&mut self, entries: usize, runs: u32, mixed: bool) {
        self.batches += 1;
        self.entries += entries as u64;
        self.locks += runs as u64;
        self.mixed += mixed as u64;
        *self.runs.entry(runs).or_default() += 1;
    }

    fn finish(self, policy: FreePolicy, cost: FreeCost) -> FreeMetrics {
        let per = |x: f64, d: u64| if d == 0 { 0.0 } else { x / d as f64 };
        let model_ns = cost.ns(self.locks, self.entries);
        FreeMetrics {
            policy: policy.name(),
            batches: self.batches,
            entries: self.entries,
            locks: self.locks,
            locks_per_batch: per(self.locks as f64, self.batches),
            locks_per_1k_entries: per(self.locks as f64 * 1000.0, self.entries),
            model_ns,
            model_ns_per_batch: per(model_ns, self.batches),
            runs_per_batch: self.runs,
            mixed_batches: self.mixed,
            cost,
        }
    }
}

fn replay_one(input: &FreeInput, policy: FreePolicy, cost: FreeCost) -> FreeMetrics {
    let mut acc = Acc::default();
    match policy {
        FreePolicy::Unsorted | FreePolicy::Sorted => {
            for b in &input.batches {
                let devs = || b.entries.iter().map(|e| e.dev);
                let n = distinct(devs());
                let runs = if policy == FreePolicy::Sorted {
                    n
                } else {
                    runs_unsorted(devs())
                };
                acc.add(b.entries.len(), runs, n > 1);
            }
        }
        FreePolicy::PerDevice => {
            // free_swap_slot() with one buffer per (CPU, device); a full
            // buffer is one swapcache_free_entries() call on one device.
            for devs in input.dev_streams().values() {
                let mut fill = [0usize; 256];
                for &d in devs {
                    let f = &mut fill[d as usize];
                    *f += 1;
                    if *f == SWAP_BATCH {
                        acc.add(SWAP_BATCH, 1, false);
                        *f = 0;
                    }
                }
                for &f in fill.iter().filter(|&&f| f > 0) {
                    acc.add(f, 1, false);
                }
            }
        }
        FreePolicy::Batch(n) => {
            let n = n.clamp(1, MAX_BATCH) as usize;
            for devs in input.dev_streams().values() {
                for chunk in devs.chunks(n) {
                    let d = distinct(chunk.iter().copied());
                    acc.add(chunk.len(), d, d > 1);
                }
            }
        }
    }
    acc.finish(policy, cost)
}

/// Replays every policy over the same input.
pub fn replay_free(input: &FreeInput, policies: &[FreePolicy], cost: FreeCost) -> Vec<FreeMetrics> {
    policies
        .iter()
        .map(|&p| replay_one(input, p, cost))
        .collect()
}

/// The recorded side: what the tracing kernel did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveFree {
    pub batches: u64,
    pub entries: u64,
    pub devices: Vec<u8>,
    pub mixed_batches: u64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p90_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_p999_ns: u64,
    pub lat_max_ns: u64,
}

impl LiveFree {
    pub fn from_input(input: &FreeInput) -> LiveFree {
        let mut live = LiveFree {
            batches: input.batches.len() as u64,
            entries: input.entries(),
            ..LiveFree::default()
        };
        let mut seen = [false; 256];
        for b in &input.batches {
            for e in &b.entries {
                seen[e.dev as usize] = true;
            }
            live.mixed_batches += (distinct(b.entries.iter().map(|e| e.dev)) > 1) as u64;
        }
        live.devices = (0..=u8::MAX).filter(|&d| seen[d as usize]).collect();
        let Ok(mut h) = hdrhistogram::Histogram::<u64>::new_with_bounds(1, u32::MAX as u64, 3)
        else {
            return live;
        };
        for b in &input.batches {
            h.saturating_record(b.lat_ns as u64);
        }
        if !h.is_empty() {
            live.lat_mean_ns = h.mean();
            live.lat_p50_ns = h.value_at_quantile(0.5);
            live.lat_p90_ns = h.value_at_quantile(0.9);
            live.lat_p99_ns = h.value_at_quantile(0.99);
            live.lat_p999_ns = h.value_at_quantile(0.999);
            live.lat_max_ns = h.max();
        }
        live
    }
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
        "live swapcache_free_entries latency (ns): mean {:.0} p50 {} p90 {} p99 {} p99.9 {} max {}",
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

/// Synthetic free batches from one task: entry `i` is on device
/// `(i / interleave) % devices`, cut into batches of `batch` entries.
/// Zero arguments are taken as 1.
pub fn synth_free(
    devices: u8,
    entries: usize,
    batch: usize,
    interleave: usize,
    seed: u64,
) -> Vec<Record> {
    let (devices, batch, interleave) = (devices.max(1), batch.max(1), interleave.max(1));
    let mut rng = SplitMix64::new(seed);
    let tid = 1000;
    let devs: Vec<u8> = (0..entries)
        .map(|i| ((i / interleave) % devices as usize) as u8)
        .collect();
    let mut out = vec![Record::Task {
        tid,
        pid: tid,
        comm: "synth-free".into(),
    }];
    let cost = FreeCost::default();
    for (k, chunk) in devs.chunks(batch).enumerate() {
        let entries: Vec<SwapEntry> = chunk
            .iter()
            .map(|&dev| SwapEntry {
                dev,
                offset: 1 + rng.below(1 << 20),
            })
            .collect();
        let lat = cost.ns(
            runs_unsorted(chunk.iter().copied()) as u64,
            chunk.len() as u64,
        ) + rng.below(200) as f64;
        out.push(Record::FreeBatch {
            ts: 1_000_000 + k as u64 * 50_000,
            tid,
            lat_ns: lat.min(u32::MAX as f64) as u32,
            entries,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(tid: u32, devs: &[u8]) -> Record {
        Record::FreeBatch {
            ts: 0,
            tid,
            lat_ns: 1000,
            entries: devs
                .iter()
                .enumerate()
                .map(|(i, &dev)| SwapEntry {
                    dev,
                    offset: i as u64,
                })
                .collect(),
        }
    }

    fn run(records: &[Record], p: &[FreePolicy]) -> Vec<FreeMetrics> {
        let input = FreeInput::from_records(records).expect("batches");
        replay_free(&input, p, FreeCost::default())
    }

    #[test]
    fn hand_worked_batch() {
        let m = run(
            &[batch(1, &[0, 1, 0, 1, 1, 0])],
            &[FreePolicy::Unsorted, FreePolicy::Sorted],
        );
        assert_eq!(m[0].locks, 5);
        assert_eq!(m[1].locks, 2);
        assert_eq!(m[0].runs_per_batch, BTreeMap::from([(5, 1)]));
        assert_eq!(m[1].runs_per_batch, BTreeMap::from([(2, 1)]));
        assert_eq!((m[0].mixed_batches, m[1].mixed_batches), (1, 1));
        assert_eq!((m[0].entries, m[0].batches), (6, 1));
    }

    #[test]
    fn interleaved_two_devices() {
        let recs = synth_free(2, 64 * 100, 64, 8, 7);
        let m = run(
            &recs,
            &[
                FreePolicy::Unsorted,
                FreePolicy::Sorted,
                FreePolicy::PerDevice,
            ],
        );
        let (u, s, d) = (&m[0], &m[1], &m[2]);
        assert_eq!(u.batches, 100);
        assert_eq!(u.mixed_batches, 100);
        assert_eq!(u.locks, 100 * 8);
        assert!(s.locks < u.locks);
        assert_eq!(s.locks, 2 * s.mixed_batches);
        assert_eq!(s.runs_per_batch, BTreeMap::from([(2, 100)]));
        // 3200 entries per device: 50 full buffers each.
        assert_eq!(d.entries, 6400);
        assert_eq!(d.locks, 6400 / 64);
        assert_eq!(d.mixed_batches, 0);
        assert!(d.locks < s.locks);
    }

    #[test]
    fn per_device_flushes_partial_buffers() {
        // 100 entries on dev 0 and 30 on dev 1 for tid 1; 5 on dev 0 for tid 2.
        let mut devs = vec![0u8; 100];
        devs.extend([1u8; 30]);
        let m = run(
            &[
                batch(1, &devs[..70]),
                batch(2, &[0; 5]),
                batch(1, &devs[70..]),
            ],
            &[FreePolicy::PerDevice],
        );
        // tid 1: dev 0 → 64 + 36, dev 1 → 30; tid 2: 5.
        assert_eq!(m[0].locks, 4);
        assert_eq!(m[0].batches, 4);
        assert_eq!(m[0].entries, 135);
        assert_eq!(m[0].runs_per_batch, BTreeMap::from([(1, 4)]));
    }

    #[test]
    fn one_device_one_lock_per_batch() {
        let recs = synth_free(1, 1000, 64, 8, 1);
        let m = run(&recs, &[FreePolicy::Unsorted, FreePolicy::Sorted]);
        assert_eq!(m[0].batches, 16);
        assert_eq!(m[0].locks, 16);
        assert_eq!(
            m[0],
            FreeMetrics {
                policy: "unsorted".into(),
                ..m[1].clone()
            }
        );
        assert_eq!(m[0].mixed_batches, 0);
        assert_eq!(m[0].runs_per_batch, BTreeMap::from([(1, 16)]));
    }

    #[test]
    fn rebatching_per_task() {
        // Two tasks, each 10 entries alternating devices; batch:4 → 3 batches each.
        let d: Vec<u8> = (0..10).map(|i| (i % 2) as u8).collect();
        let m = run(
            &[batch(1, &d[..6]), batch(2, &d), batch(1, &d[6..])],
            &[FreePolicy::Batch(4), FreePolicy::Batch(1)],
        );
        assert_eq!(m[0].batches, 6);
        assert_eq!(m[0].entries, 20);
        // Chunks of 4 and 4 and 2, all mixing both devices.
        assert_eq!(m[0].locks, 12);
        assert_eq!(m[0].mixed_batches, 6);
        assert_eq!(m[1].batches, 20);
        assert_eq!(m[1].locks, 20);
        assert_eq!(m[1].mixed_batches, 0);
    }

    #[test]
    fn policy_names() {
        assert_eq!(FreePolicy::from_name("unsorted"), Ok(FreePolicy::Unsorted));
        assert_eq!(FreePolicy::from_name("sorted"), Ok(FreePolicy::Sorted));
        assert_eq!(
            FreePolicy::from_name("per-device"),
            Ok(FreePolicy::PerDevice)
        );
        assert_eq!(FreePolicy::from_name("batch:1"), Ok(FreePolicy::Batch(1)));
        assert_eq!(
            FreePolicy::from_name("batch:4096"),
            Ok(FreePolicy::Batch(4096))
        );
        for bad in [
            "batch:0",
            "batch:4097",
            "batch:",
            "batch:x",
            "batch:-1",
            "batch:+5",
            "batch:1e3",
            "batch:99999999999999",
        ] {
            assert_eq!(
                FreePolicy::from_name(bad),
                Err(FreeError::BadBatchSize(bad.into())),
                "{bad}"
            );
        }
        assert!(matches!(
            FreePolicy::from_name("fifo"),
            Err(FreeError::UnknownPolicy(_))
        ));
        assert!(matches!(
            FreePolicy::from_name(""),
            Err(FreeError::UnknownPolicy(_))
        ));
        for p in FreePolicy::defaults() {
            assert_eq!(p.name().parse::<FreePolicy>(), Ok(p));
        }
        assert_eq!(free_policy_names().len(), 4);
    }

    #[test]
    fn no_batches_is_an_error() {
        let recs = vec![Record::Task {
            tid: 1,
            pid: 1,
            comm: "x".into(),
        }];
        let e = FreeInput::from_records(&recs).unwrap_err();
        assert_eq!(e, FreeError::NoBatches);
        assert!(e.to_string().contains("swaptrace doctor"));
        assert_eq!(FreeInput::from_records(&[]), Err(FreeError::NoBatches));
    }

    #[test]
    fn cost_arithmetic() {
        let c = FreeCost::default();
        assert_eq!(c.ns(3, 6), 3.0 * 150.0 + 6.0 * 60.0);
        let m = replay_free(
            &FreeInput::from_records(&[batch(1, &[0, 1, 0, 1, 1, 0]), batch(1, &[2, 2])])
                .expect("batches"),
            &[FreePolicy::Unsorted, FreePolicy::Sorted],
            FreeCost::new(100.0, 10.0).expect("cost"),
        );
        // unsorted: 5 + 1 locks, 8 entries.
        assert_eq!(m[0].model_ns, 6.0 * 100.0 + 8.0 * 10.0);
        assert_eq!(m[0].model_ns_per_batch, 340.0);
        assert_eq!(m[0].locks_per_batch, 3.0);
        assert_eq!(m[0].locks_per_1k_entries, 750.0);
        // sorted: 2 + 1 locks.
        assert_eq!(m[1].model_ns, 3.0 * 100.0 + 80.0);
        assert!(FreeCost::new(f64::NAN, 1.0).is_err());
        assert!(FreeCost::new(1.0, -1.0).is_err());
        assert!(FreeCost::new(f64::INFINITY, 1.0).is_err());
    }

    #[test]
    fn empty_batches_and_high_devices() {
        let m = run(
            &[batch(1, &[]), batch(1, &[255, 0, 255])],
            &FreePolicy::defaults(),
        );
        assert_eq!(m[0].batches, 2);
        assert_eq!(m[0].locks, 3);
        assert_eq!(m[0].runs_per_batch, BTreeMap::from([(0, 1), (3, 1)]));
        assert_eq!(m[1].locks, 2);
        assert_eq!(m[2].locks, 2);
        assert_eq!(m[3].locks, 2);
    }

    #[test]
    fn live_summary_and_reports() {
        let mut recs = synth_free(2, 640, 64, 16, 3);
        recs.push(Record::FreeBatch {
            ts: 9,
            tid: 5,
            lat_ns: 1_000_000,
            entries: vec![SwapEntry { dev: 3, offset: 1 }],
        });
        let input = FreeInput::from_records(&recs).expect("batches");
        let live = LiveFree::from_input(&input);
        assert_eq!(live.batches, 11);
        assert_eq!(live.entries, 641);
        assert_eq!(live.devices, vec![0, 1, 3]);
        assert_eq!(live.mixed_batches, 10);
        assert!(live.lat_p50_ns >= 4 * 150 + 64 * 60);
        assert!(live.lat_p50_ns <= live.lat_p90_ns && live.lat_p99_ns <= live.lat_max_ns);
        assert!(live.lat_max_ns >= 999_000);

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
    }

    #[test]
    fn synth_handles_zero_arguments() {
        let recs = synth_free(0, 10, 0, 0, 0);
        let input = FreeInput::from_records(&recs).expect("batches");
        assert_eq!(input.batches.len(), 10);
        assert!(synth_free(3, 0, 64, 1, 0)
            .iter()
            .all(|r| !matches!(r, Record::FreeBatch { .. })));
    }
}
