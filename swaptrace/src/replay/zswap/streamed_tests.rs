//! The streamed replay (issue 19) against the whole-trace one: the same
//! events in the same order, the same replay for every policy, in
//! bounded batches.

use std::collections::BTreeMap;

use super::input::EventBuilder;
use super::stream::{events, EVENTS_BATCH};
use super::*;
use crate::trace::{
    read_trace, Footer, Header, OutKind, PoolSample, SwapEntry, TraceStream, TraceWriter,
    CHUNK_RECORDS_MAX, MAX_FOLIO_PAGES,
};
use std::path::Path;

/// Records per chunk written: boundaries fall inside reclaim episodes and
/// between a readahead window and its fault.
const PER_CHUNK: usize = 997;

/// [`synth_zswap`] with every record kind the family reads mixed in:
/// recorded windows before faults, cache hits, faults without an entry,
/// zero and multi-page swap-outs, writebacks, zswap ops, lost records,
/// and one swap-out of a whole large folio. `reclaim`: keep the reclaim
/// records (else pressure comes every N swap-outs).
fn mixed(seed: u64, reclaim: bool) -> Vec<Record> {
    let mut v = Vec::new();
    let mut x = seed | 1;
    for (i, r) in synth_zswap(20_000, 30_000, 4, 128, seed)
        .into_iter()
        .enumerate()
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match r {
            Record::Reclaim { .. } if !reclaim => {}
            Record::SwapFault {
                ts,
                entry: Some(entry),
                ..
            } => {
                if i % 5 == 0 {
                    v.push(Record::RaWindow {
                        ts,
                        tid: 1,
                        entry,
                        window: 1 << (x % 4),
                        hits: 0,
                        source: crate::trace::RaSource::FexitLastReadaheadPages,
                    });
                }
                if i % 13 == 0 {
                    v.push(Record::major_fault(ts, 1, 0));
                }
                let minor = i % 11 == 0;
                v.push(Record::SwapFault {
                    ts,
                    dur_ns: 1_000,
                    tid: 1,
                    mm: 1,
                    addr: 0,
                    entry: Some(entry),
                    major: !minor,
                    pages_read: (!minor && i % 3 == 0) as u32,
                    zero_reads: 0,
                    zswap_loads: (!minor && i % 3 != 0) as u32,
                    write: false,
                });
            }
            Record::SwapOut {
                ts,
                tid,
                mm,
                vaddr,
                entry,
                ..
            } => {
                let how = match i % 37 {
                    0 => OutKind::Zero,
                    1 => OutKind::Io,
                    _ => OutKind::Zswap,
                };
                let nr = if i % 41 == 0 { 4 } else { 1 };
                v.push(Record::SwapOut {
                    ts,
                    tid,
                    mm,
                    vaddr,
                    entry,
                    nr,
                    how,
                });
                if i % 29 == 0 {
                    v.push(Record::ZswapWriteback {
                        ts,
                        tid,
                        nr: 3,
                        entry: None,
                    });
                }
                if i % 31 == 0 {
                    let (load, ok) = (x.is_multiple_of(2), !x.is_multiple_of(3));
                    v.push(Record::ZswapOp { ts, tid, load, ok });
                }
                if i == 70_000 {
                    v.push(Record::SwapOut {
                        ts,
                        tid,
                        mm,
                        vaddr,
                        entry: SwapEntry {
                            dev: 1,
                            offset: 1 << 20,
                        },
                        nr: MAX_FOLIO_PAGES,
                        how: OutKind::Zswap,
                    });
                    v.push(Record::Lost {
                        ts,
                        what: "swap_out".into(),
                        count: 7,
                    });
                }
            }
            r => v.push(r),
        }
    }
    v
}

/// `recs` as a trace of many chunks; `mem_kib` 0: no memory figure.
fn write(path: &Path, recs: &[Record], mem_kib: u64) {
    write_from(path, recs, mem_kib, "")
}

/// [`write`], recorded on `kernel` (a release; with zswap's shrinker on).
fn write_from(path: &Path, recs: &[Record], mem_kib: u64, kernel: &str) {
    let mut zswap: BTreeMap<String, String> =
        [("max_pool_percent".to_string(), "5".to_string())].into();
    if !kernel.is_empty() {
        zswap.insert("enabled".into(), "Y".into());
        zswap.insert("shrinker_enabled".into(), "Y".into());
    }
    let h = Header {
        format_version: crate::trace::FORMAT_VERSION,
        page_size: 4096,
        mem_total_kib: mem_kib,
        kernel_release: kernel.to_string(),
        vmstat_start: [("zswpwb".to_string(), 10)].into(),
        zswap,
        ..Header::default()
    };
    let mut w = TraceWriter::create(path, &h).unwrap();
    for (i, r) in recs.iter().enumerate() {
        w.push(r).unwrap();
        if (i + 1) % PER_CHUNK == 0 {
            w.flush_chunk().unwrap();
        }
    }
    let f = Footer {
        vmstat_end: [("zswpwb".to_string(), 500)].into(),
        zswap_pool: vec![PoolSample {
            ts: 1,
            pool_kib: 100,
            stored_kib: 250,
        }],
        ..Footer::default()
    };
    w.finish(&f).unwrap();
}

#[test]
fn streamed_events_are_the_whole_inputs_in_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    write(&path, &mixed(1, true), 0);
    let t = read_trace(&path).unwrap();
    assert!(t.chunks.len() > 100, "{} chunks", t.chunks.len());
    let whole = ZswapInput::from_loaded(&t).unwrap();
    let mut s = TraceStream::open(&path).unwrap();
    let mut b = EventBuilder::new(4096, true);
    let mut streamed = Vec::new();
    let mut chunks = 0;
    let held = events(
        &mut s,
        &mut b,
        &mut |batch| streamed.extend_from_slice(batch),
        &mut |_| chunks += 1,
    );
    assert_eq!(streamed, whole.events);
    assert_eq!(
        b.live(),
        ZswapInput::from_records(&t.records, 4096).unwrap().live
    );
    assert_eq!(b.distinct_out_pages(), whole.distinct_out_pages);
    assert_eq!(b.bad_records, whole.bad_records);
    // No batch of all events: at most one batch and a large folio's pages.
    assert!(held <= EVENTS_BATCH + MAX_FOLIO_PAGES as usize, "{held}");
    assert!(
        held * 4 < whole.events.len(),
        "{held} of {}",
        whole.events.len()
    );
    assert!(s.max_batch() <= CHUNK_RECORDS_MAX as usize && s.max_batch() <= PER_CHUNK);
    assert!(chunks > 100);
}

#[test]
fn streamed_replay_equals_the_whole_trace_replay_for_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (name, reclaim, mem_kib, kernel) in [
        ("reclaim.swt", true, 0, ""),
        ("interval.swt", false, 0, ""),
        ("memory.swt", true, 200 * 1024, ""),
        ("paced.swt", true, 200 * 1024, "6.12.0-test"),
    ] {
        let path = dir.path().join(name);
        write_from(&path, &mixed(7, reclaim), mem_kib, kernel);
        let t = read_trace(&path).unwrap();
        let params = ["shrinker-interval=500".to_string()];
        for req in [
            ReplayRequest::default(),
            ReplayRequest {
                policies: Some("shrinker,disk-swapin-tracking"),
                params: &params,
                ..ReplayRequest::default()
            },
        ] {
            let whole = run(&t, &req).unwrap();
            let open = || TraceStream::open(&path).map_err(|_| StreamErr::Open);
            let mut phases = Vec::new();
            let (scanned, r) = run_streamed(&open, &req, &mut |p, _, _| phases.push(p)).unwrap();
            assert!(phases.contains(&"scanning") && phases.contains(&"replaying"));
            assert!(scanned.end.footer.is_some() && scanned.end.problems.is_empty());
            assert!(whole.metrics.iter().any(|m| m.writebacks > 0), "{name}");
            assert!(whole.metrics.iter().all(|m| m.zswap_hits > 0), "{name}");
            assert_eq!(r, whole, "{name}");
            let paced = r.metrics.iter().all(|m| m.pressure.starts_with("recorded"));
            assert_eq!(paced, !kernel.is_empty(), "{name}");
            checked += r.metrics.len();
        }
    }
    assert_eq!(checked, 4 * (4 + 2));
}

#[test]
fn streamed_errors_are_the_whole_traces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.swt");
    let recs: Vec<Record> = mixed(3, true)
        .into_iter()
        .filter(|r| !matches!(r, Record::SwapOut { .. }))
        .collect();
    write(&path, &recs, 0);
    let t = read_trace(&path).unwrap();
    let open = || TraceStream::open(&path).map_err(|_| StreamErr::Open);
    let nothing = run_streamed(&open, &ReplayRequest::default(), &mut |_, _, _| {});
    assert_eq!(
        run(&t, &ReplayRequest::default()),
        Err(ZswapError::NothingToReplay)
    );
    assert!(matches!(
        nothing,
        Err(StreamErr::Zswap(ZswapError::NothingToReplay))
    ));
    let bad = ["ratio=0".to_string()];
    let req = ReplayRequest {
        params: &bad,
        ..ReplayRequest::default()
    };
    let e = run_streamed(&open, &req, &mut |_, _, _| {});
    assert!(matches!(e, Err(StreamErr::Zswap(ZswapError::BadParam(..)))));
}

#[test]
fn a_policy_panicking_mid_stream_is_an_error_naming_it() {
    let ev = ZswapEvent::Reclaim { ts: 1, begin: true };
    let feed = |send: &mut dyn FnMut(&[ZswapEvent])| {
        for _ in 0..100 {
            send(&[ev; 10]);
        }
    };
    let count = |pol: ZswapPolicy, batches: &mut dyn Iterator<Item = Batch>, bad: bool| {
        let mut n = 0;
        for b in batches {
            n += b.len();
            if bad && pol == ZswapPolicy::Shrinker && n > 500 {
                panic!("at event {n}");
            }
        }
        n
    };
    let all = ZswapPolicy::all();
    let r = fan_out(&all, |p, b| count(p, b, true), feed);
    assert_eq!(
        r,
        Err(ZswapError::PolicyPanicked(
            "shrinker".into(),
            "at event 510".into()
        ))
    );
    assert_eq!(
        fan_out(&all, |p, b| count(p, b, false), feed),
        Ok(vec![1000; 4])
    );
}

/// The error of a streamed run in the tests: the trace's or the replay's.
#[derive(Debug)]
enum StreamErr {
    Open,
    Zswap(ZswapError),
}

impl From<ZswapError> for StreamErr {
    fn from(e: ZswapError) -> Self {
        StreamErr::Zswap(e)
    }
}
