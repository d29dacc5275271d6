//! The free family's replay fed a batch of records at a time: one pass,
//! every policy advanced together, each keeping only its own state (the
//! per-task fill of per-device and batch:N), and the recorded side from
//! running counts and a latency histogram. Memory grows with the tasks and
//! devices seen, not with the trace.

use std::collections::HashMap;

use super::{
    Acc, DevSet, FreeCost, FreeError, FreeMetrics, FreePolicy, FreeReplay, LiveFree, ZapAcc,
    MAX_BATCH, POLICIES, SWAPFILE_CLUSTER, SWAP_BATCH,
};
use crate::replay::family::ReplayRequest;
use crate::trace::{Header, Record, StreamEnd, SwapEntry, TraceStream};

/// A task's open batch of `batch:N`: its entries so far and their devices.
#[derive(Default)]
struct Open {
    n: u16,
    devs: DevSet,
}

/// What a policy keeps between free batches.
enum State {
    /// unsorted, sorted, per-cluster: each batch alone (a scratch buffer
    /// of (device, cluster) for per-cluster).
    PerBatch(Vec<(u8, u64)>),
    /// per-device: per task, the fill of its buffer of each device
    /// (indexed by device; below [`SWAP_BATCH`]).
    PerDevice(HashMap<u32, Vec<u8>>),
    /// batch:N: N, and per task its open batch.
    Batch(u16, HashMap<u32, Open>),
}

/// One policy replayed a free batch at a time.
pub(super) struct Replayer {
    policy: FreePolicy,
    acc: Acc,
    state: State,
}

impl Replayer {
    pub(super) fn new(policy: FreePolicy) -> Replayer {
        let state = match policy {
            FreePolicy::PerDevice => State::PerDevice(HashMap::new()),
            FreePolicy::Batch(n) => State::Batch(n.clamp(1, MAX_BATCH) as u16, HashMap::new()),
            _ => State::PerBatch(Vec::new()),
        };
        Replayer {
            policy,
            acc: Acc::default(),
            state,
        }
    }

    /// One recorded `swapcache_free_entries()` call of task `tid`.
    pub(super) fn batch(&mut self, tid: u32, entries: &[SwapEntry]) {
        let acc = &mut self.acc;
        let devs = || entries.iter().map(|e| e.dev);
        match (&mut self.state, self.policy) {
            (State::PerBatch(_), FreePolicy::Unsorted) => {
                let n = DevSet::of(devs()).len();
                acc.add(entries.len(), super::runs_unsorted(devs()), n > 1);
            }
            (State::PerBatch(clusters), FreePolicy::PerCluster) => {
                // swap_entries_free()/__swap_cluster_free_entries(): the
                // cluster's lock once per cluster the batch touches.
                clusters.clear();
                clusters.extend(entries.iter().map(|e| (e.dev, e.offset / SWAPFILE_CLUSTER)));
                clusters.sort_unstable();
                clusters.dedup();
                let n = DevSet::of(devs()).len();
                acc.add(entries.len(), clusters.len() as u32, n > 1);
            }
            (State::PerBatch(_), _) => {
                // Sorted: one lock per distinct device.
                let n = DevSet::of(devs()).len();
                acc.add(entries.len(), n, n > 1);
            }
            (State::PerDevice(tasks), _) => {
                // free_swap_slot() with one buffer per (CPU, device); a
                // full buffer is one swapcache_free_entries() on one device.
                let fill = tasks.entry(tid).or_default();
                for d in devs() {
                    let d = d as usize;
                    if fill.len() <= d {
                        fill.resize(d + 1, 0);
                    }
                    fill[d] += 1;
                    if fill[d] as usize == SWAP_BATCH {
                        acc.add(SWAP_BATCH, 1, false);
                        fill[d] = 0;
                    }
                }
            }
            (State::Batch(n, tasks), _) => {
                let n = *n;
                let open = tasks.entry(tid).or_default();
                for d in devs() {
                    open.devs.insert(d);
                    open.n += 1;
                    if open.n == n {
                        let d = open.devs.len();
                        acc.add(n as usize, d, d > 1);
                        *open = Open::default();
                    }
                }
            }
        }
    }

    /// Tasks whose fill state is kept.
    fn held(&self) -> usize {
        match &self.state {
            State::PerBatch(_) => 0,
            State::PerDevice(t) => t.len(),
            State::Batch(_, t) => t.len(),
        }
    }

    /// The metrics, once the buffers left partly filled are flushed.
    pub(super) fn finish(mut self, cost: FreeCost) -> FreeMetrics {
        let acc = &mut self.acc;
        match self.state {
            State::PerBatch(_) => {}
            State::PerDevice(tasks) => {
                for f in tasks.values().flatten().filter(|&&f| f > 0) {
                    acc.add(*f as usize, 1, false);
                }
            }
            State::Batch(_, tasks) => {
                for o in tasks.values().filter(|o| o.n > 0) {
                    let d = o.devs.len();
                    acc.add(o.n as usize, d, d > 1);
                }
            }
        }
        self.acc.finish(self.policy, cost)
    }
}

/// [`LiveFree`] from running counts and a latency histogram.
pub(super) struct LiveAcc {
    batches: u64,
    entries: u64,
    devs: DevSet,
    mixed: u64,
    lat: Option<hdrhistogram::Histogram<u64>>,
}

impl LiveAcc {
    pub(super) fn new() -> LiveAcc {
        LiveAcc {
            batches: 0,
            entries: 0,
            devs: DevSet::default(),
            mixed: 0,
            lat: hdrhistogram::Histogram::new_with_bounds(1, u32::MAX as u64, 3).ok(),
        }
    }

    pub(super) fn batch(&mut self, lat_ns: u32, entries: &[SwapEntry]) {
        self.batches += 1;
        self.entries += entries.len() as u64;
        let d = DevSet::of(entries.iter().map(|e| e.dev));
        self.devs.union(&d);
        self.mixed += (d.len() > 1) as u64;
        if let Some(h) = &mut self.lat {
            h.saturating_record(lat_ns as u64);
        }
    }

    pub(super) fn finish(self) -> LiveFree {
        let mut live = LiveFree {
            batches: self.batches,
            entries: self.entries,
            devices: self.devs.iter().collect(),
            mixed_batches: self.mixed,
            ..LiveFree::default()
        };
        if let Some(h) = self.lat.filter(|h| !h.is_empty()) {
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

/// `replay --family free` fed records a batch at a time: what [`run`](super::run)
/// gives on the same records, in memory that does not grow with them.
pub struct FreeStream {
    cost: FreeCost,
    replayers: Vec<Replayer>,
    live: LiveAcc,
    /// The zap spans, shown only when the trace has no free batch: kept
    /// until the first batch.
    zaps: ZapAcc,
}

impl FreeStream {
    /// The cost model from `--param` and the policies asked for (default:
    /// [`POLICIES`] marked default, and per-cluster for a trace recorded on
    /// 6.15+).
    pub fn new(header: &Header, req: &ReplayRequest) -> Result<FreeStream, FreeError> {
        let cost = FreeCost::from_params(req.params)?;
        let mut names = req.names(POLICIES);
        if matches!(req.policies.map(str::trim), None | Some("all"))
            && super::recorded_per_cluster(&header.kernel_release)
        {
            names.push("per-cluster".into());
        }
        let policies = names
            .iter()
            .map(|n| FreePolicy::from_name(n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FreeStream::of(&policies, cost))
    }

    pub(super) fn of(policies: &[FreePolicy], cost: FreeCost) -> FreeStream {
        FreeStream {
            cost,
            replayers: policies.iter().map(|&p| Replayer::new(p)).collect(),
            live: LiveAcc::new(),
            zaps: ZapAcc::default(),
        }
    }

    /// The next records, in trace order.
    pub fn add(&mut self, records: &[Record]) {
        for r in records {
            match r {
                Record::FreeBatch {
                    tid,
                    lat_ns,
                    entries,
                    ..
                } => self.batch(*tid, *lat_ns, entries),
                Record::Zap { .. } if self.live.batches == 0 => self.zaps.add(r),
                _ => {}
            }
        }
    }

    /// Free batches replayed so far.
    pub fn batches(&self) -> u64 {
        self.live.batches
    }

    /// The per-task fill states kept, over every policy: what grows with
    /// the trace's tasks (never with its batches).
    pub fn held(&self) -> usize {
        self.replayers.iter().map(Replayer::held).sum()
    }

    pub(super) fn batch(&mut self, tid: u32, lat_ns: u32, entries: &[SwapEntry]) {
        if self.live.batches == 0 {
            self.zaps = ZapAcc::default();
        }
        self.live.batch(lat_ns, entries);
        for r in &mut self.replayers {
            r.batch(tid, entries);
        }
    }

    pub(super) fn metrics(self) -> (LiveAcc, Vec<FreeMetrics>) {
        let cost = self.cost;
        let m = self.replayers.into_iter().map(|r| r.finish(cost)).collect();
        (self.live, m)
    }

    pub fn finish(self) -> FreeReplay {
        if self.live.batches == 0 {
            return FreeReplay::NoBatches {
                zaps: self.zaps.finish(),
            };
        }
        let (live, metrics) = self.metrics();
        FreeReplay::Replayed {
            live: live.finish(),
            metrics,
        }
    }
}

/// `replay --family free` over a stream, in one pass: its header, what it
/// found besides records (footer, problems) and the replay. `each` sees the
/// stream after every batch (progress).
pub fn run_stream(
    mut s: TraceStream,
    req: &ReplayRequest,
    mut each: impl FnMut(&TraceStream),
) -> (Header, StreamEnd, Result<FreeReplay, FreeError>) {
    let header = s.header().clone();
    let mut free = match FreeStream::new(&header, req) {
        Ok(f) => f,
        Err(e) => return (header, s.finish(), Err(e)),
    };
    while let Some(batch) = s.next_batch() {
        free.add(&batch);
        s.recycle(batch);
        each(&s);
    }
    (header, s.finish(), Ok(free.finish()))
}
