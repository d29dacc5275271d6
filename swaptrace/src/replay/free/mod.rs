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
//! device (`swp_entry_cmp`), so each device's lock is taken once per batch:
//! sorted swap-entry freeing (4.12).
//!
//! From 6.15 (the slots cache gone) the last references of a cluster's
//! entries are dropped under that cluster's lock, one call per cluster
//! (`swap_entries_free()` to 6.18, `__swap_cluster_free_entries()` in 7.x):
//! the `per-cluster` policy.
//!
//! A trace without free batches (no exact probes) still shows the frees
//! done by zapping page tables: [`zap_spans`].

mod stream;
mod zap;

use std::collections::BTreeMap;

use serde::Serialize;

use super::family::{known, ParamInfo, PolicyInfo, ReplayRequest, Uses};
use crate::trace::{Loaded, Record, SwapEntry};
use crate::workload::SplitMix64;

pub use stream::{run_stream, FreeStream};
pub use zap::{zap_spans, ZapAcc, ZapSpan};

/// `SWAP_BATCH` / `SWAP_SLOTS_CACHE_SIZE`: entries per per-CPU free buffer.
pub const SWAP_BATCH: usize = 64;
/// `SWAPFILE_CLUSTER` (HPAGE_PMD_NR with THP_SWAP on x86_64): entries per cluster.
pub const SWAPFILE_CLUSTER: u64 = 512;
/// The first kernel that frees per cluster (`swap_entries_free()`).
pub const PER_CLUSTER_SINCE: (u32, u32) = (6, 15);
/// Largest N accepted by `batch:N`.
pub const MAX_BATCH: u32 = 4096;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FreeError {
    #[error(
        "the trace has no free batches (swapcache_free_entries); they are recorded \
         only by the exact probes, see `swaptrace doctor`"
    )]
    NoBatches,
    #[error("unknown free policy `{0}` (known: {names})", names = known(POLICIES, |p| p.name))]
    UnknownPolicy(String),
    #[error("bad batch size in `{0}`: N must be an integer from 1 to {MAX_BATCH}")]
    BadBatchSize(String),
    #[error("bad free cost model: {0}")]
    BadCost(String),
    #[error("--param {0}: a cost in ns")]
    BadCostValue(String, #[source] std::num::ParseFloatError),
    #[error("--param {0}: known parameters of --family free: {known}", known = known(PARAMS, |p| p.name))]
    UnknownParam(String),
}

/// The policies of `--family free`; the default set is the first four, and
/// `per-cluster` too for a trace recorded on 6.15 or later.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "unsorted",
        help: "a lock at each change of device within a batch: kernels before \
               sorted swap-entry freeing (before 4.12)",
        default: true,
    },
    PolicyInfo {
        name: "sorted",
        help: "each batch sorted by device, one lock per distinct device: \
               sorted swap-entry freeing (4.12 up to 6.9)",
        default: true,
    },
    PolicyInfo {
        name: "per-device",
        help: "per-CPU buffers of 64 entries kept per device, one lock per flush \
               (a model; each task stands for a CPU)",
        default: true,
    },
    PolicyInfo {
        name: "batch:64",
        help: "batch:N at the kernel's SWAP_BATCH of 64",
        default: true,
    },
    PolicyInfo {
        name: "per-cluster",
        help: "one lock per distinct swap cluster (offset / 512) of a batch: 6.15 and \
               later (swap_entries_free, 7.x __swap_cluster_free_entries); in the \
               default set for traces recorded on 6.15+",
        default: false,
    },
    PolicyInfo {
        name: "batch:N",
        help: "each task's freed entries re-batched into N (1 to 4096), sorted as \
               4.12 does",
        default: false,
    },
];

/// The `--param`s of `--family free`.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "lock-ns=F",
        help: "modelled ns per swap_info_struct->lock acquisition (preset 150)",
    },
    ParamInfo {
        name: "entry-ns=F",
        help: "modelled ns per freed entry (preset 60)",
    },
];

/// `--family free` reads neither `--memory-pages` nor `--device`.
pub const USES: Uses = Uses {
    memory_pages: false,
    device: false,
};

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreePolicy {
    /// Before 4.12: a lock at each change of device within a batch.
    Unsorted,
    /// Sorted swap-entry freeing (4.12): batch sorted by device, one lock
    /// per distinct device.
    Sorted,
    /// Per-CPU-per-device buffers of [`SWAP_BATCH`]: one lock per flush.
    ///
    /// The trace has the task, not the CPU: each task's stream of freed
    /// entries stands in for a CPU's.
    PerDevice,
    /// Each task's stream re-batched into N entries, sorted as the kernel does.
    Batch(u32),
    /// 6.15+: one lock per distinct (device, cluster) of a batch.
    PerCluster,
}

impl FreePolicy {
    pub fn from_name(name: &str) -> Result<FreePolicy, FreeError> {
        let s = name.trim();
        match s {
            "unsorted" => return Ok(FreePolicy::Unsorted),
            "sorted" => return Ok(FreePolicy::Sorted),
            "per-device" => return Ok(FreePolicy::PerDevice),
            "per-cluster" => return Ok(FreePolicy::PerCluster),
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
            FreePolicy::PerCluster => "per-cluster".into(),
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

    /// The presets overridden by `--param lock-ns=F` / `entry-ns=F`, then checked.
    pub fn from_params(params: &[String]) -> Result<FreeCost, FreeError> {
        let mut cost = FreeCost::default();
        for p in params {
            let v = |v: &str| {
                v.parse::<f64>()
                    .map_err(|e| FreeError::BadCostValue(p.clone(), e))
            };
            match p.split_once('=') {
                Some(("lock-ns", x)) => cost.lock_ns = v(x)?,
                Some(("entry-ns", x)) => cost.entry_ns = v(x)?,
                _ => return Err(FreeError::UnknownParam(p.clone())),
            }
        }
        FreeCost::new(cost.lock_ns, cost.entry_ns)
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

/// A set of devices: its size is the lock acquisitions of a batch once
/// sorted by `swp_entry_cmp`.
#[derive(Clone, Copy, Default)]
struct DevSet([u64; 4]);

impl DevSet {
    fn of(devs: impl IntoIterator<Item = u8>) -> DevSet {
        let mut s = DevSet::default();
        devs.into_iter().for_each(|d| s.insert(d));
        s
    }

    fn insert(&mut self, d: u8) {
        self.0[(d >> 6) as usize] |= 1 << (d & 63);
    }

    fn union(&mut self, o: &DevSet) {
        self.0.iter_mut().zip(o.0).for_each(|(a, b)| *a |= b);
    }

    fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=u8::MAX).filter(|&d| self.0[(d >> 6) as usize] & (1 << (d & 63)) != 0)
    }
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

/// Replays every policy over the same input, in one pass.
pub fn replay_free(input: &FreeInput, policies: &[FreePolicy], cost: FreeCost) -> Vec<FreeMetrics> {
    let mut s = FreeStream::of(policies, cost);
    for b in &input.batches {
        s.batch(b.tid, b.lat_ns, &b.entries);
    }
    s.metrics().1
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
        let mut live = stream::LiveAcc::new();
        for b in &input.batches {
            live.batch(b.lat_ns, &b.entries);
        }
        live.finish()
    }
}

/// What `replay --family free` shows.
#[derive(Clone, Debug, PartialEq)]
pub enum FreeReplay {
    Replayed {
        live: LiveFree,
        metrics: Vec<FreeMetrics>,
    },
    /// The trace has no free batches: the frees seen by zapping page
    /// tables instead. The command shows them, then fails with
    /// [`FreeError::NoBatches`].
    NoBatches { zaps: Vec<ZapSpan> },
}

/// The records [`run`] reads: the free batches, and the zaps shown when
/// there are none.
pub fn reads(r: &Record) -> bool {
    matches!(r, Record::FreeBatch { .. } | Record::Zap { .. })
}

/// `replay --family free`: the cost model from `--param`, the policies
/// asked for (default: [`POLICIES`] marked default), replayed on `t`
/// through the same one-pass [`FreeStream`] as [`run_stream`].
pub fn run(t: &Loaded, req: &ReplayRequest) -> Result<FreeReplay, FreeError> {
    let mut s = FreeStream::new(&t.header, req)?;
    s.add(&t.records);
    Ok(s.finish())
}

/// Was the trace recorded on a kernel that frees per cluster (6.15+)?
pub fn recorded_per_cluster(release: &str) -> bool {
    crate::trace::kernel_version(release) >= PER_CLUSTER_SINCE
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
mod tests;
