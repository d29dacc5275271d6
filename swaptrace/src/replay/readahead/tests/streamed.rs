//! The streamed replay (issue 19) against the whole-trace one: the same
//! events in the same order, the same metrics for every policy, in a
//! bounded buffer.

use super::super::stream::{plan_for_tests, Sorter};
use super::super::{run, run_streamed};
use crate::replay::family::ReplayRequest;
use crate::trace::{
    read_trace, Footer, Header, Loaded, OutKind, Record, SwapEntry, Syscall, TraceStream,
    TraceWriter,
};
use std::path::{Path, PathBuf};

/// Two devices; faults recorded late (some far behind their chunk, across
/// chunk boundaries), equal timestamps, a failed swapoff and a successful
/// one of device 1, whose entries all come before it; the folios of a
/// third of the swap-outs and of some faults freed (`OutFreed`).
fn records() -> Vec<Record> {
    let mut v = vec![
        Record::AddressSpace { mm: 1, pid: 1 },
        Record::Reclaim {
            ts: 900,
            tid: 5,
            begin: true,
            memcg: true,
            nr_reclaimed: 0,
        },
    ];
    let mut x = 12345u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pages = 30_000u64;
    for i in 0..pages {
        let dev = (i >= pages / 2) as u8;
        v.push(Record::SwapOut {
            ts: 1_000 + i * 10,
            tid: 5,
            mm: 1,
            vaddr: (0x1000 + (i * 7) % pages) << 12,
            entry: SwapEntry {
                dev,
                offset: 1 + i % (pages / 2),
            },
            nr: 1,
            how: OutKind::Io,
        });
        if i % 3 == 0 {
            v.push(Record::OutFreed {
                ts: 1_000 + i * 10 + rnd() % 50_000,
                entry: SwapEntry {
                    dev,
                    offset: 1 + i % (pages / 2),
                },
                nr: 1,
            });
        }
    }
    let t0 = 1_000 + pages * 10;
    let syscall = |ts, ret| Record::Syscall {
        ts,
        tid: 9,
        call: Syscall::Swapoff,
        ret,
    };
    for k in 0..90_000u64 {
        let i = rnd() % (pages / 2);
        let ts = t0 + k * 10;
        let late = match rnd() % 100 {
            0 => 200_000,
            1..=9 => rnd() % 5_000,
            _ => 0,
        };
        v.push(Record::SwapFault {
            ts: ts.saturating_sub(late) / 20 * 20,
            dur_ns: 0,
            tid: 7,
            mm: 1,
            addr: (0x1000 + (i * 7) % pages) << 12,
            entry: Some(SwapEntry {
                dev: 0,
                offset: 1 + i,
            }),
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        });
        if k % 7 == 0 {
            v.push(Record::OutFreed {
                ts: ts + rnd() % 2_000,
                entry: SwapEntry {
                    dev: 0,
                    offset: 1 + i,
                },
                nr: 1,
            });
        }
        if k == 100 {
            v.push(syscall(ts, None));
            v.push(syscall(ts + 5, Some(-16)));
            v.push(syscall(ts + 10, None));
            v.push(syscall(ts + 400, Some(0)));
        }
    }
    v
}

fn write(path: &Path, recs: &[Record]) {
    let h = Header {
        format_version: crate::trace::FORMAT_VERSION,
        page_size: 4096,
        kernel_release: "6.6.0".into(),
        memory_limit_bytes: Some(4096 * 4096),
        metrics: vec![crate::trace::MetricSource {
            metric: "swap-out".into(),
            backend: Some("tracepoint".into()),
            attach: vec![crate::trace::OUT_FREED_ATTACH.into()],
            missing: None,
        }],
        ..Header::default()
    };
    let mut w = TraceWriter::create(path, &h).unwrap();
    for r in recs {
        w.push(r).unwrap();
    }
    w.finish(&Footer::default()).unwrap();
}

/// The trace of [`records`] in a temporary directory, and its whole read.
fn traced() -> (tempfile::TempDir, PathBuf, Loaded) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    write(&path, &records());
    let t = read_trace(&path).unwrap();
    (dir, path, t)
}

#[test]
fn streamed_events_are_the_whole_traces_in_the_same_order() {
    let (_dir, path, t) = traced();
    assert!(t.chunks.len() >= 4, "{} chunks", t.chunks.len());
    let whole = super::super::ReplayInput::from_trace(&t, 4096).unwrap();
    let swapoffs = whole
        .events
        .iter()
        .filter(|e| matches!(e, super::Event::Swapoff { .. }))
        .count();
    assert_eq!((swapoffs, whole.unknown_swapoffs), (1, 0));
    let plan = plan_for_tests(TraceStream::open(&path).unwrap());
    assert!(whole.frees);
    let frees = whole
        .events
        .iter()
        .filter(|e| matches!(e, super::Event::Freed { .. }));
    assert!(frees.count() > 10_000);
    let mut sorter = Sorter::new(&t.header, &plan);
    let mut streamed = Vec::new();
    let mut s = TraceStream::open(&path).unwrap();
    let mut largest = 0;
    while let Some(b) = s.next_batch() {
        largest = largest.max(b.len());
        streamed.extend(sorter.push(&b));
    }
    streamed.extend(sorter.finish());
    let key = |e: &super::Event| format!("{e:?}");
    assert_eq!(streamed.len(), whole.events.len());
    for (i, (a, b)) in streamed.iter().zip(&whole.events).enumerate() {
        assert_eq!(key(a), key(b), "event {i}");
    }
    // The buffer held what a later chunk could precede: less than two
    // chunks' events (a fault 200 µs late reaches back one chunk at most).
    assert!(sorter.held < 2 * largest, "{} of {largest}", sorter.held);
    assert!(sorter.held < whole.events.len() / 2, "{}", sorter.held);
}

#[test]
fn streamed_replay_equals_the_whole_trace_replay_for_every_policy() {
    let (_dir, path, t) = traced();
    let policies =
        "cluster,vma,none,fixed:8,leap,oracle,cluster-no-swapoff-fix,vma-swapoff-nostats";
    for req in [
        ReplayRequest {
            policies: Some(policies),
            memory_pages: Some(2000),
            ..ReplayRequest::default()
        },
        ReplayRequest::default(),
    ] {
        let whole = run(&t, &req).unwrap();
        let open = || TraceStream::open(&path);
        let mut phases = Vec::new();
        let (scanned, r) = run_streamed(&open, &req, &mut |p, _, _| phases.push(p)).unwrap();
        assert!(phases.contains(&"scanning") && phases.contains(&"replaying"));
        assert_eq!(r.results.len(), whole.results.len());
        assert!(whole.results.iter().any(|m| m.pgmajfault > 0));
        for (a, b) in r.results.iter().zip(&whole.results) {
            let (a, b) = (serde_json::to_value(a), serde_json::to_value(b));
            assert_eq!(a.unwrap(), b.unwrap());
        }
        assert_eq!(
            (r.unknown_faults, r.unknown_swapoffs, r.bad_records),
            (
                whole.unknown_faults,
                whole.unknown_swapoffs,
                whole.bad_records
            )
        );
        assert!(scanned.end.footer.is_some() && scanned.end.problems.is_empty());
    }
}
