//! The readahead family streamed from a trace file in bounded memory.
//!
//! A replay needs three things of the whole trace before its first event:
//! each device's largest offset (cluster readahead stops there), which
//! device each swapoff removed (the one with entries before it and none
//! after), and the time order of events (faults are recorded at their end).
//! A first pass learns them, and the earliest event time of every later
//! chunk; a second pass decodes the trace again, orders its events with a
//! buffer that holds only those a later chunk could still precede, and
//! fans batches of them out to one thread per policy over bounded channels.
//! What grows is each policy's model state, and the oracle's look-ahead
//! ([`Policy::lookahead`]: the next `4 × (2^page-cluster − 1)` faults).
//! The events and their order are those of [`ReplayInput::from_trace`].

use super::engine::{join_all, replay_batches};
use super::error::ReplayError;
use super::fit::FaultCosts;
use super::input::{Event, InputBuilder, ReplayInput, SwapoffMode};
use super::metrics::Metrics;
use super::policy::Policy;
use super::run::{prepare, ReadaheadReplay};
use super::space::SlotTable;
use crate::replay::family::ReplayRequest;
use crate::trace::{
    Header, ReadCoverage, Record, ReplayMemory, StreamEnd, Summary, TraceError, TraceStream,
};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

/// Batches queued to each policy thread beyond the one it replays.
const CHANNEL_BATCHES: usize = 4;

/// What the first pass learned.
pub(super) struct Plan {
    builder: InputBuilder,
    /// Resolved swapoffs, in the order they join the sorted events.
    swapoffs: Vec<Event>,
    unknown_swapoffs: u64,
    /// For each batch, the earliest event time in the batches after it.
    min_after: Vec<u64>,
    /// The major faults' durations, for the I/O cost fit.
    costs: FaultCosts,
    /// The records counted, for what of the kernel's reads they hold.
    summary: Summary,
}

fn plan(mut s: TraceStream, progress: &mut dyn FnMut(&TraceStream)) -> (Plan, StreamEnd) {
    let h = s.header();
    let mut builder = InputBuilder::for_header(h);
    let mut scratch = Vec::new();
    let mut mins = Vec::new();
    let mut costs = FaultCosts::default();
    let mut summary = Summary::default();
    while let Some(batch) = s.next_batch() {
        for r in &batch {
            builder.convert(r, &mut scratch);
            costs.add(r);
            summary.add(r);
        }
        mins.push(scratch.iter().map(Event::ts).min().unwrap_or(u64::MAX));
        scratch.clear();
        s.recycle(batch);
        progress(&s);
    }
    let mut min_after = vec![u64::MAX; mins.len()];
    for i in (0..mins.len().saturating_sub(1)).rev() {
        min_after[i] = min_after[i + 1].min(mins[i + 1]);
    }
    let (mut swapoffs, unknown_swapoffs) = builder.resolve_swapoffs();
    swapoffs.sort_by_key(Event::ts);
    let end = s.finish();
    let plan = Plan {
        builder,
        swapoffs,
        unknown_swapoffs,
        min_after,
        costs,
        summary,
    };
    (plan, end)
}

#[cfg(test)]
pub(super) fn plan_for_tests(s: TraceStream) -> Plan {
    plan(s, &mut |_| {}).0
}

/// Puts a stream's events in time order (stable: records in trace order,
/// a swapoff after the records of its time), as the whole-trace sort does.
pub(super) struct Sorter<'a> {
    builder: InputBuilder,
    /// Events that a later batch could still precede, in order.
    pending: Vec<Event>,
    swapoffs: &'a [Event],
    next_swapoff: usize,
    min_after: &'a [u64],
    batch: usize,
    /// The most events `pending` has held (the bound, for tests).
    pub(super) held: usize,
}

impl<'a> Sorter<'a> {
    pub(super) fn new(header: &Header, plan: &'a Plan) -> Sorter<'a> {
        Sorter {
            builder: InputBuilder::for_header(header),
            pending: Vec::new(),
            swapoffs: &plan.swapoffs,
            next_swapoff: 0,
            min_after: &plan.min_after,
            batch: 0,
            held: 0,
        }
    }

    /// A batch of records in; the events no later batch can precede out.
    pub(super) fn push(&mut self, records: &[Record]) -> Vec<Event> {
        for r in records {
            self.builder.convert(r, &mut self.pending);
        }
        self.held = self.held.max(self.pending.len());
        let bound = self.min_after.get(self.batch).copied().unwrap_or(u64::MAX);
        self.batch += 1;
        self.release(Some(bound))
    }

    pub(super) fn finish(&mut self) -> Vec<Event> {
        self.release(None)
    }

    /// Releases the events up to `bound` (None: all). Records at `bound`
    /// go (a later one at that time follows them), a swapoff at it waits.
    fn release(&mut self, bound: Option<u64>) -> Vec<Event> {
        // Stable, and nearly sorted already: the unreleased run, then the batch.
        self.pending.sort_by_key(Event::ts);
        let n = match bound {
            Some(b) => self.pending.partition_point(|e| e.ts() <= b),
            None => self.pending.len(),
        };
        let mut out = Vec::with_capacity(n);
        for e in self.pending.drain(..n) {
            while let Some(so) = self.swapoffs.get(self.next_swapoff) {
                if so.ts() >= e.ts() {
                    break;
                }
                out.push(*so);
                self.next_swapoff += 1;
            }
            out.push(e);
        }
        while let Some(so) = self.swapoffs.get(self.next_swapoff) {
            if bound.is_some_and(|b| so.ts() >= b) {
                break;
            }
            out.push(*so);
            self.next_swapoff += 1;
        }
        out
    }
}

pub use crate::replay::family::Progress;

/// A trace's first pass: its header, what the reader found (footer,
/// problems), and what the replay needs of the whole trace.
pub struct Scanned {
    pub header: Header,
    pub end: StreamEnd,
    plan: Plan,
}

/// The first pass over `s` (see the module doc).
pub fn scan(s: TraceStream, progress: Progress) -> Scanned {
    let header = s.header().clone();
    let (mut plan, end) = plan(s, &mut |s| {
        let (done, total) = s.position();
        progress("scanning", done, total)
    });
    plan.costs.end(&header, end.footer.as_ref());
    Scanned { header, end, plan }
}

impl Scanned {
    /// [`run`](super::run) of the scanned trace, read again from `s`: the
    /// same replay, in bounded memory.
    pub fn replay(
        &self,
        req: &ReplayRequest,
        s: TraceStream,
        progress: Progress,
    ) -> Result<ReadaheadReplay, ReplayError> {
        let (header, plan) = (&self.header, &self.plan);
        let memory = ReplayMemory::of(header, self.end.footer.as_ref(), req.memory_pages);
        let b = &plan.builder;
        b.check_replayable(b.has_faults(), &plan.swapoffs)?;
        let page_cluster = header.readahead.page_cluster.unwrap_or(3);
        let mut input = b.meta(page_cluster, memory.pages, plan.unknown_swapoffs);
        input.swapoff_mode = SwapoffMode::for_release(&header.kernel_release);
        input.keeps_unmapped_dirty = header.keeps_unmapped_dirty();
        input.isolation_clears_readahead = header.isolation_clears_readahead();
        input.synchronous = header.synchronous_types();
        let swapoff = !plan.swapoffs.is_empty();
        let (device, cost, policies) =
            prepare(&mut input, header, &plan.costs, req, Some(swapoff))?;
        Ok(ReadaheadReplay {
            results: fan_out(plan, &input, policies, s, progress)?,
            unknown_faults: input.unknown_faults,
            unknown_swapoffs: input.unknown_swapoffs,
            bad_records: input.bad_records,
            device,
            cost,
            memory,
            coverage: ReadCoverage::of(&plan.summary, |c| {
                header.vmstat_delta(self.end.footer.as_ref(), c)
            }),
        })
    }
}

/// [`scan`], then [`Scanned::replay`], of the trace `open` opens twice.
pub fn run_streamed(
    open: &dyn Fn() -> Result<TraceStream, TraceError>,
    req: &ReplayRequest,
    progress: Progress,
) -> Result<(Scanned, ReadaheadReplay), ReplayError> {
    let scanned = scan(open()?, progress);
    let r = scanned.replay(req, open()?, progress)?;
    Ok((scanned, r))
}

/// The second pass: events decoded once, in time order, sent in batches to
/// one thread per policy. A policy that panics fails the replay, named.
fn fan_out(
    plan: &Plan,
    input: &ReplayInput,
    policies: Vec<Box<dyn Policy>>,
    mut s: TraceStream,
    progress: Progress,
) -> Result<Vec<Metrics>, ReplayError> {
    let named = plan.builder.named();
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for mut p in policies {
            let name = p.name();
            let (tx, rx) = sync_channel::<Arc<[Event]>>(CHANNEL_BATCHES);
            senders.push(tx);
            let slots = SlotTable::for_counts(named, &input.dev_max);
            let h = scope.spawn(move || replay_batches(input, slots, p.as_mut(), rx.into_iter()));
            handles.push((name, h));
        }
        let mut sorter = Sorter::new(s.header(), plan);
        let send = |events: Vec<Event>| {
            if events.is_empty() {
                return;
            }
            let batch: Arc<[Event]> = events.into();
            for tx in &senders {
                // A thread that is gone panicked: its join says so.
                let _ = tx.send(batch.clone());
            }
        };
        while let Some(batch) = s.next_batch() {
            send(sorter.push(&batch));
            s.recycle(batch);
            let (done, total) = s.position();
            progress("replaying", done, total);
        }
        send(sorter.finish());
        drop(senders);
        join_all(handles)
    })
}
