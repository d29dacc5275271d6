//! `replay --family free` streamed (issues 18 and 19): on a trace of many
//! chunks with tasks interleaved, one pass gives what the whole-trace
//! reference (each task's entries grouped over the whole trace) gives, and
//! memory does not grow with the batches.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use swaptrace::replay::free::{
    run, run_stream, zap_spans, FreeCost, FreeInput, FreeMetrics, FreePolicy, FreeReplay,
    FreeStream, LiveFree, SWAPFILE_CLUSTER, SWAP_BATCH,
};
use swaptrace::replay::ReplayRequest;
use swaptrace::synth::{SynthPattern, SynthSpec};
use swaptrace::trace::{
    read_trace, Footer, Record, SwapEntry, TraceStream, TraceWriter, CHUNK_RECORDS_MAX,
};

/// The tests run one at a time: the memory test measures this process's RSS.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const POLICIES: &str = "unsorted,sorted,per-device,per-cluster,batch:64,batch:7,batch:1,batch:4096";

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// This test's turn, a directory and a trace path in it.
fn scratch(name: &str) -> (MutexGuard<'static, ()>, tempfile::TempDir, PathBuf) {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{name}.swt"));
    (one, dir, path)
}

fn writer(path: &Path) -> TraceWriter {
    let spec = SynthSpec {
        pattern: SynthPattern::Multi(1),
        pages: 1024,
        faults: 0,
        seed: 1,
        memory_pages: 256,
    };
    TraceWriter::create(path, &swaptrace::synth::header(&spec)).expect("create")
}

/// `n` free batches of 0 to 99 entries on devices 0..4 from five tasks
/// interleaved, with zaps between them, a chunk every `per_chunk` records.
fn free_trace(path: &Path, n: u64, per_chunk: u64) {
    let mut w = writer(path);
    let mut x = 7u64;
    for i in 0..n {
        let v = next(&mut x);
        let len = (v % 100) as usize;
        let tid = 100 + (v >> 8) as u32 % 5;
        let entries = (0..len)
            .map(|_| {
                let e = next(&mut x);
                SwapEntry {
                    dev: (e % 4) as u8,
                    offset: (e >> 8) % 40_000,
                }
            })
            .collect();
        w.push(&Record::FreeBatch {
            ts: 1_000 + i * 1_000,
            tid,
            lat_ns: (v >> 20) as u32 % 50_000,
            entries,
        })
        .expect("push");
        if i % 3 == 0 {
            w.push(&Record::Zap {
                ts: 1_000 + i * 1_000 + 1,
                tid,
                mm: tid,
                swap_ents: Some(i as i64),
                exiting: false,
            })
            .expect("push");
        }
        if (i + 1) % per_chunk == 0 {
            w.flush_chunk().expect("flush");
        }
    }
    w.finish(&Footer::default()).expect("finish");
}

/// Locks, batches, entries, mixed batches and runs per batch of one policy.
type Counts = (u64, u64, u64, u64, BTreeMap<u32, u64>);

/// The whole-trace reference: each task's devices over the whole trace.
fn reference(input: &FreeInput, policy: FreePolicy) -> Counts {
    let mut c: Counts = Default::default();
    let mut add = |entries: usize, locks: u32, mixed: bool| {
        c.0 += locks as u64;
        c.1 += 1;
        c.2 += entries as u64;
        c.3 += mixed as u64;
        *c.4.entry(locks).or_default() += 1;
    };
    let distinct = |d: &[u8]| {
        let mut v = d.to_vec();
        v.sort_unstable();
        v.dedup();
        v.len() as u32
    };
    let mut tasks: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    for b in &input.batches {
        let tasks = tasks.entry(b.tid).or_default();
        tasks.extend(b.entries.iter().map(|e| e.dev));
    }
    for b in &input.batches {
        let devs: Vec<u8> = b.entries.iter().map(|e| e.dev).collect();
        let n = distinct(&devs);
        match policy {
            FreePolicy::Unsorted => {
                let runs = 1 + devs.windows(2).filter(|w| w[0] != w[1]).count() as u32;
                add(devs.len(), if devs.is_empty() { 0 } else { runs }, n > 1);
            }
            FreePolicy::Sorted => add(devs.len(), n, n > 1),
            FreePolicy::PerCluster => {
                let mut cl: Vec<_> = b
                    .entries
                    .iter()
                    .map(|e| (e.dev, e.offset / SWAPFILE_CLUSTER))
                    .collect();
                cl.sort_unstable();
                cl.dedup();
                add(devs.len(), cl.len() as u32, n > 1);
            }
            _ => {}
        }
    }
    for devs in tasks.values() {
        match policy {
            FreePolicy::PerDevice => {
                let mut fill = [0usize; 256];
                for &d in devs {
                    fill[d as usize] += 1;
                    if fill[d as usize] == SWAP_BATCH {
                        add(SWAP_BATCH, 1, false);
                        fill[d as usize] = 0;
                    }
                }
                fill.iter()
                    .filter(|&&f| f > 0)
                    .for_each(|&f| add(f, 1, false));
            }
            FreePolicy::Batch(n) => {
                for chunk in devs.chunks(n as usize) {
                    let d = distinct(chunk);
                    add(chunk.len(), d, d > 1);
                }
            }
            _ => {}
        }
    }
    c
}

fn counts(m: &FreeMetrics) -> Counts {
    (
        m.locks,
        m.batches,
        m.entries,
        m.mixed_batches,
        m.runs_per_batch.clone(),
    )
}

fn live_reference(input: &FreeInput) -> LiveFree {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, u32::MAX as u64, 3).unwrap();
    let mut devs = std::collections::BTreeSet::new();
    let mut mixed = 0;
    for b in &input.batches {
        h.saturating_record(b.lat_ns as u64);
        let d: std::collections::BTreeSet<u8> = b.entries.iter().map(|e| e.dev).collect();
        mixed += (d.len() > 1) as u64;
        devs.extend(d);
    }
    LiveFree {
        batches: input.batches.len() as u64,
        entries: input.entries(),
        devices: devs.into_iter().collect(),
        mixed_batches: mixed,
        lat_mean_ns: h.mean(),
        lat_p50_ns: h.value_at_quantile(0.5),
        lat_p90_ns: h.value_at_quantile(0.9),
        lat_p99_ns: h.value_at_quantile(0.99),
        lat_p999_ns: h.value_at_quantile(0.999),
        lat_max_ns: h.max(),
    }
}

fn req(policies: &str) -> ReplayRequest<'_> {
    ReplayRequest {
        policies: Some(policies),
        ..ReplayRequest::default()
    }
}

#[test]
fn a_streamed_free_replay_equals_the_whole_trace_reference() {
    let (_one, _dir, path) = scratch("free");
    free_trace(&path, 20_000, 777);
    let req = req(POLICIES);

    let mut max_batch = 0;
    let (_, end, streamed) = run_stream(TraceStream::open(&path).expect("open"), &req, |s| {
        max_batch = s.max_batch()
    });
    assert!(end.chunks > 20, "only {} chunks", end.chunks);
    assert!(end.problems.is_empty(), "{:?}", end.problems);
    assert!(max_batch > 0 && max_batch <= CHUNK_RECORDS_MAX as usize);

    let whole = read_trace(&path).expect("read");
    let input = FreeInput::from_loaded(&whole).expect("batches");
    let Ok(FreeReplay::Replayed { live, metrics }) = streamed.clone() else {
        panic!("no replay: {streamed:?}");
    };
    assert_eq!(live, live_reference(&input));
    assert_eq!(metrics.len(), 8);
    let cost = FreeCost::default();
    for m in &metrics {
        let p = FreePolicy::from_name(&m.policy).expect("policy");
        assert_eq!(counts(m), reference(&input, p), "{}", m.policy);
        assert_eq!(m.model_ns, cost.ns(m.locks, m.entries));
    }
    // Buffers kept across batches and chunks: some flushed only at the end.
    let per_device = &metrics[2];
    assert!(per_device.runs_per_batch.len() == 1 && per_device.batches > 1000);
    // The library's whole-trace entry point runs the same one pass.
    assert_eq!(run(&whole, &req).expect("run"), streamed.expect("streamed"));
}

#[test]
fn a_trace_without_free_batches_streams_its_zap_spans() {
    let (_one, _dir, path) = scratch("zap");
    let mut w = writer(&path);
    for i in 0..30_000u64 {
        w.push(&Record::Zap {
            ts: 1_000 + i * 7_000,
            tid: 1,
            mm: (i % 3) as u32,
            swap_ents: Some(100_000 - i as i64),
            exiting: i > 20_000,
        })
        .expect("push");
        if i % 1_000 == 999 {
            w.flush_chunk().expect("flush");
        }
    }
    w.finish(&Footer::default()).expect("finish");
    let (_, end, r) = run_stream(TraceStream::open(&path).expect("open"), &req("all"), |_| {});
    assert!(end.chunks > 20);
    let whole = read_trace(&path).expect("read");
    let zaps = zap_spans(&whole.records);
    assert_eq!(zaps.len(), 3);
    assert_eq!(r.expect("replay"), FreeReplay::NoBatches { zaps });
}

/// Resident memory of this process, bytes.
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("rss");
    pages * 4096
}

#[test]
fn a_free_trace_of_many_chunks_replays_without_holding_its_batches() {
    const N: u64 = 1_000_000;
    const TASKS: u32 = 4;
    let (_one, _dir, path) = scratch("big");
    let mut w = writer(&path);
    for i in 0..N {
        w.push(&Record::FreeBatch {
            ts: 1_000 + i,
            tid: 1 + (i % TASKS as u64) as u32,
            lat_ns: 100,
            entries: vec![SwapEntry {
                dev: (i % 3) as u8,
                offset: i % 1000,
            }],
        })
        .expect("push");
    }
    w.finish(&Footer::default()).expect("finish");
    // Held as the whole-trace path did, the batches would take at least this.
    let held_whole = N * (std::mem::size_of::<Record>() + std::mem::size_of::<SwapEntry>()) as u64;

    let mut s = TraceStream::open(&path).expect("open");
    let req = req(POLICIES);
    let mut free = FreeStream::new(s.header(), &req).expect("policies");
    let (before, mut peak, mut held) = (rss(), 0, 0);
    while let Some(batch) = s.next_batch() {
        free.add(&batch);
        drop(batch);
        held = held.max(free.held());
        peak = peak.max(rss());
    }
    assert_eq!(free.batches(), N);
    assert!(s.max_batch() <= CHUNK_RECORDS_MAX as usize);
    let chunks = s.finish().chunks;
    assert!(chunks > 20, "{chunks} chunks");
    // Fill state per task for per-device and the four batch:N, no more.
    assert!(held <= 5 * TASKS as usize, "{held} task states held");
    let grown = peak.saturating_sub(before);
    eprintln!("{N} batches in {chunks} chunks: RSS grew by {grown} bytes");
    assert!(
        grown < 32 << 20 && grown * 2 < held_whole,
        "RSS grew by {grown} bytes (the whole trace's batches: {held_whole})"
    );
    let FreeReplay::Replayed { metrics, .. } = free.finish() else {
        panic!("no batches");
    };
    // Each task frees on every device, 64 at a time.
    assert!(metrics.iter().all(|m| m.entries == N));
}
