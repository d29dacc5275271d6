//! What `record` does with each event in userspace, on one core: turn the
//! ring's raw events into records (`Recorder::ingest`: a fault joined to
//! its swap-out) and write them (`TraceWriter` at `record`'s zstd level).
//! Issue 17 asks for no lost events at 1 M events/s: the eBPF side only
//! reserves and commits in the ring, so this is the rate the reader must
//! hold. EVENTS (default 10 M) events over PAGES (default 1 M) pages: each
//! page swapped out in shuffled 16-page blocks, then faulted in address
//! order, as the swap job does. Prints events/s (these regular events
//! compress far better than real ones: bytes per event are record_jobs').

use std::time::Instant;
use swaptrace::record::Recorder;
use swaptrace::trace::{Header, Record, TraceWriter, RECORD_ZSTD_LEVEL};
use swaptrace_common::{flag, kind, RawEvent};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn raw(k: u8, ts: u64, page: u64) -> RawEvent {
    RawEvent {
        ts_ns: ts,
        mm: 0xffff_8880_1234_5000,
        addr: 0x7f00_0000_0000 + (page << 12),
        entry: 0,
        tid: 4242,
        pid: 4242,
        nr: 0,
        aux: 0,
        kind: k,
        flags: 0,
        zero: 0,
        zswap: 0,
        flags2: 0,
        _pad: 0,
        comm: *b"job\0\0\0\0\0\0\0\0\0\0\0\0\0",
    }
}

/// The events: every page out (offsets in shuffled-block order), then
/// faults over the pages in address order, a major fault reading 8 pages
/// every 8th one.
fn events(n: u64, pages: u64) -> Vec<RawEvent> {
    let mut v = Vec::with_capacity(n as usize);
    let mut ts = 1_000_000_000u64;
    let blocks = pages / 16;
    for b in 0..blocks {
        // A fixed odd multiplier permutes the blocks.
        let block = (b.wrapping_mul(0x9e37_79b9_7f4a_7c15 | 1)) % blocks.max(1);
        for i in 0..16 {
            ts += 700;
            let mut e = raw(kind::SWAP_OUT, ts, block * 16 + i);
            e.entry = 1 + b * 16 + i;
            e.nr = 1;
            e.flags = flag::OUT_IO;
            v.push(e);
        }
    }
    let mut page = 0;
    while (v.len() as u64) < n {
        ts += 1_100;
        let mut e = raw(kind::SWAP_FAULT, ts, page % pages);
        if page % 8 == 0 {
            e.flags = flag::MAJOR;
            e.nr = 8;
            e.aux = 90_000;
        } else {
            e.aux = 1_500;
        }
        v.push(e);
        page += 1;
    }
    v
}

fn main() {
    let n = env("EVENTS", 10_000_000);
    let pages = env("PAGES", 1 << 20).max(16);
    let evs = events(n, pages);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ingest.swt");
    let header: Header = serde_json::from_value(serde_json::json!({
        "format_version": 2,
        "tool_version": "bench",
        "kernel_release": "bench",
        "page_size": 4096,
        "monotonic_start_ns": 0,
        "realtime_start_ns": 0,
        "mem_total_kib": 0,
        "swap_devices": [],
        "readahead": {},
        "metrics": [],
        "vmstat_start": {},
        "target": "ingest bench",
    }))
    .expect("header");
    let mut rec = Recorder::new(4096);
    let mut out: Vec<Record> = Vec::with_capacity(4096);
    let t = Instant::now();
    for ev in &evs {
        rec.ingest(ev, &mut out);
        out.clear();
    }
    let ingest = t.elapsed().as_secs_f64();
    let mut rec = Recorder::new(4096);
    let mut w = TraceWriter::create(&path, &header).expect("writer");
    w.set_level(RECORD_ZSTD_LEVEL);
    let t = Instant::now();
    for ev in &evs {
        rec.ingest(ev, &mut out);
        for r in out.drain(..) {
            w.push(&r).expect("push");
        }
    }
    w.finish(&Default::default()).expect("finish");
    let both = t.elapsed().as_secs_f64();
    let rate = |s: f64| n as f64 / s / 1e6;
    println!("{n} events over {pages} pages, one core:");
    println!("  ingest only            {:>6.2} M events/s", rate(ingest));
    println!(
        "  ingest + write (zstd {RECORD_ZSTD_LEVEL}) {:>6.2} M events/s",
        rate(both)
    );
    println!(
        "  target: 1 M events/s without loss: {}",
        if rate(both) >= 1.0 { "met" } else { "not met" }
    );
}
