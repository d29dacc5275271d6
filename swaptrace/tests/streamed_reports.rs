//! `hist`, `compare` and `plot` read a trace a chunk at a time (issue 19):
//! on a trace of many chunks, with swapoff spans, zap runs and time bins
//! crossing chunk boundaries, their output equals the whole-trace path's,
//! and no batch holds more than a chunk's records.

use std::path::Path;
use std::process::Command;
use swaptrace::report::{self, During, HistBuilder, HistMetric, Swapoffs, Timeline};
use swaptrace::synth::{SynthPattern, SynthSpec};
use swaptrace::trace::{
    read_trace, Footer, RaSource, Record, SwapEntry, Syscall, TraceStream, TraceWriter,
    CHUNK_RECORDS_MAX,
};

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");
/// Records per chunk written: the trace has dozens of chunks.
const PER_CHUNK: u64 = 3_000;
/// Nanoseconds between records: 2 ms, so 300k records span 600 s, past
/// the 4096 bins of 100 ms that plot's time charts hold.
const STEP_NS: u64 = 2_000_000;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(EXE)
        .args(args)
        .output()
        .expect("run swaptrace");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A cheap deterministic generator (xorshift).
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// `n` records of every kind the three commands read, a chunk every
/// [`PER_CHUNK`] records; a swapoff (tid 7) runs across chunk boundaries.
fn mixed_trace(path: &Path, n: u64, seed: u64) {
    let spec = SynthSpec {
        pattern: SynthPattern::Multi(1),
        pages: 1024,
        faults: 0,
        seed,
        memory_pages: 256,
    };
    let mut h = swaptrace::synth::header(&spec);
    let t0 = 1_000_000_000;
    h.monotonic_start_ns = t0;
    h.vmstat_start = [("pswpin".to_string(), 100), ("pgmajfault".to_string(), 5)].into();
    let mut w = TraceWriter::create(path, &h).expect("create");
    let mut x = seed.max(1);
    for i in 0..n {
        let ts = t0 + i * STEP_NS;
        let v = next(&mut x);
        let tid = if v.is_multiple_of(5) {
            7
        } else {
            10 + (v % 3) as u32
        };
        let entry = SwapEntry {
            dev: 0,
            offset: (v >> 8) % 50_000,
        };
        let r = match i % 10 {
            _ if i % 40_000 == 1_000 => Record::Syscall {
                ts,
                tid: 7,
                call: Syscall::Swapoff,
                ret: None,
            },
            _ if i % 40_000 == 9_000 => Record::Syscall {
                ts,
                tid: 7,
                call: Syscall::Swapoff,
                ret: Some(0),
            },
            0..=3 => Record::SwapFault {
                ts,
                dur_ns: ((v >> 20) % 2_000_000) as u32,
                tid,
                mm: 1,
                addr: v << 12,
                entry: (!v.is_multiple_of(7)).then_some(entry),
                major: !v.is_multiple_of(3),
                pages_read: (v % 9) as u32,
                zero_reads: 0,
                zswap_loads: 0,
                write: false,
            },
            4 => Record::RaWindow {
                ts,
                tid,
                entry,
                window: 1 << (v % 4),
                hits: 0,
                source: RaSource::FexitLastReadaheadPages,
            },
            5 => Record::SwapRead {
                ts,
                tid,
                how: swaptrace::trace::ReadKind::Io,
                nr: (v % 4) as u32,
            },
            6 => Record::Zap {
                ts,
                tid,
                mm: (v % 5) as u32,
                swap_ents: Some((v % 100) as i64),
                exiting: v.is_multiple_of(2),
            },
            7 => Record::FreeBatch {
                ts,
                tid,
                lat_ns: ((v >> 12) % 500_000) as u32,
                entries: vec![entry],
            },
            8 => Record::KhugepagedSwapin {
                ts,
                tid,
                mm: 1,
                swapped_in: (v % 8) as u32,
                referenced: 0,
                ret: 0,
            },
            _ => Record::SwapOut {
                ts,
                tid,
                mm: 1,
                vaddr: v << 12,
                entry,
                nr: 1,
                how: swaptrace::trace::OutKind::Io,
            },
        };
        w.push(&r).expect("push");
        if (i + 1) % PER_CHUNK == 0 {
            w.flush_chunk().expect("flush");
        }
    }
    let mut f = Footer {
        monotonic_end_ns: t0 + n * STEP_NS + 5_000_000,
        records: w.records(),
        ..Footer::default()
    };
    f.vmstat_end = [
        ("pswpin".to_string(), 100 + n / 3 + seed),
        ("pgmajfault".to_string(), 5 + n / 4),
    ]
    .into();
    w.finish(&f).expect("finish");
}

fn traces(dir: &Path, n: u64) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, b) = (dir.join("a.swt"), dir.join("b.swt"));
    mixed_trace(&a, n, 1);
    mixed_trace(&b, n / 2, 2);
    (a, b)
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// Every metric and `--during`: the streamed command prints what the
/// whole trace's histogram gives, or its error; the library's builder fed
/// the stream holds one chunk at a time.
#[test]
fn hist_streamed_equals_the_whole_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = traces(dir.path(), 200_000);
    let whole = read_trace(&a).unwrap();
    let mut checked = 0;
    for m in [
        HistMetric::RaWindow,
        HistMetric::PagesRead,
        HistMetric::FaultLatency,
        HistMetric::FreeLatency,
        HistMetric::ZapInterval,
    ] {
        for (d, dn) in [
            (During::All, "all"),
            (During::Swapoff, "swapoff"),
            (During::NotSwapoff, "not-swapoff"),
        ] {
            let (code, out, err) = run(&[
                "hist",
                a.to_str().unwrap(),
                "--metric",
                m.name(),
                "--during",
                dn,
                "--json",
            ]);
            let want = report::histogram(&whole, m, d).expect("every metric has events");
            assert_eq!(code, 0, "{}: {err}", m.name());
            assert_eq!(json(&out), want.json(), "{} --during {dn}", m.name());
            checked += 1;
        }
    }
    assert_eq!(checked, 15);
    // The swapoff spans cut the counts (they are not all or nothing).
    let n = |d| {
        report::histogram(&whole, HistMetric::FaultLatency, d)
            .ok()
            .and_then(|h| h.log2)
            .map_or(0, |l| l.total())
    };
    assert!(n(During::Swapoff) > 0 && n(During::Swapoff) < n(During::All));

    // The builder on the stream: one chunk's records at a time.
    let mut s = TraceStream::open(&a).unwrap();
    let spans = Swapoffs::of(&whole.records);
    let mut b = HistBuilder::new(HistMetric::ZapInterval, During::All, &spans);
    let mut batches = 0;
    while let Some(batch) = s.next_batch() {
        b.add(&batch);
        batches += 1;
    }
    assert!(batches > 50, "{batches} batches");
    assert!(s.max_batch() as u64 <= PER_CHUNK && s.max_batch() <= CHUNK_RECORDS_MAX as usize);
    let want = report::histogram(&whole, HistMetric::ZapInterval, During::All).unwrap();
    assert_eq!(b.finish().unwrap().json(), want.json());
}

/// `hist --policy` replays streamed and shows the live column beside them.
#[test]
fn hist_policy_streamed_equals_the_whole_trace() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("s.swt");
    // A real replayable trace (swap-outs, then faults) of several chunks.
    let (code, _, err) = run(&["synth", "-o", a.to_str().unwrap(), "--pages", "300000"]);
    assert_eq!(code, 0, "{err}");
    let whole = read_trace(&a).unwrap();
    assert!(whole.chunks.len() > 2, "{} chunks", whole.chunks.len());
    let (code, out, err) = run(&[
        "hist",
        a.to_str().unwrap(),
        "--metric",
        "ra-window",
        "--policy",
        "cluster,vma",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let r = swaptrace::replay::readahead::run(
        &whole,
        &swaptrace::replay::ReplayRequest {
            policies: Some("cluster,vma"),
            params: &[],
            memory_pages: None,
            device: None,
        },
    )
    .unwrap();
    let mut cols = Vec::new();
    if let Some(c) = report::histogram(&whole, HistMetric::PagesRead, During::All)
        .ok()
        .and_then(|h| h.count)
    {
        cols.push(report::WindowColumn {
            name: "pages-read".into(),
            origin: report::Origin::LiveDerived,
            counts: c.counts,
        });
    }
    for m in &r.results {
        cols.push(report::WindowColumn {
            name: m.policy.clone(),
            origin: report::Origin::Replayed,
            counts: report::replayed_windows(m, During::All),
        });
    }
    assert_eq!(r.results.len(), 2);
    assert_eq!(json(&out), report::window_columns_json(&cols));
}

/// Two traces, and two groups of runs: the streamed `compare` prints what
/// comparing the whole traces gives.
#[test]
fn compare_streamed_equals_the_whole_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = traces(dir.path(), 120_000);
    let (ta, tb) = (read_trace(&a).unwrap(), read_trace(&b).unwrap());
    let labels = ("A".to_string(), "B".to_string());
    let (code, out, err) = run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let want = report::compare(&ta, &tb, labels.clone(), &[]).json();
    assert_eq!(json(&out), want);
    // Every section is there to compare.
    for k in ["metrics", "ra_window", "latencies"] {
        assert!(!want[k].is_null(), "{k} missing: {want}");
    }
    assert_eq!(want["latencies"].as_array().map(Vec::len), Some(4));

    let (code, out, err) = run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
        "--",
        b.to_str().unwrap(),
        a.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (ia, ib) = (report::CompareInput::of(&ta), report::CompareInput::of(&tb));
    let want = report::compare_runs(&[&ia, &ib], &[&ib, &ia], labels, &[]).json();
    assert_eq!(json(&out), want);
}

/// The bins of 100 ms the old whole-trace charts drew, as (bin, count).
fn bins_100ms(records: &[Record], t0: u64, major: bool) -> std::collections::BTreeMap<u64, u64> {
    let mut m = std::collections::BTreeMap::new();
    for r in records {
        if let Record::SwapFault { ts, major: j, .. } = r {
            if *j == major {
                *m.entry(ts.saturating_sub(t0) / 100_000_000).or_default() += 1;
            }
        }
    }
    m
}

/// plot's time series from the stream equal those of the whole trace; a
/// trace longer than 4096 bins of 100 ms gets wider bins holding the same
/// counts, and the heatmap's sample stays bounded.
#[cfg(feature = "plot")]
#[test]
fn plot_streamed_holds_the_whole_traces_counts_in_bounded_bins() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = traces(dir.path(), 300_000);
    let whole = read_trace(&a).unwrap();
    let t0 = whole.header.monotonic_start_ns;

    let mut s = TraceStream::open(&a).unwrap();
    let mut tl = Timeline::new(s.header());
    while let Some(batch) = s.next_batch() {
        tl.add(&batch);
    }
    assert!(s.max_batch() <= CHUNK_RECORDS_MAX as usize);
    let end = s.finish();
    let tl = tl.finish(end.footer.as_ref());
    let mut one = Timeline::new(&whole.header);
    one.add(&whole.records);
    let one = one.finish(whole.footer.as_ref());
    assert_eq!(tl.span_s(), one.span_s());
    assert_eq!(tl.bins.series, one.bins.series);

    // 600 s: past 4096 bins of 100 ms, so 200 ms bins.
    assert!(tl.span_s() > 409.6);
    assert_eq!(tl.bins.width_ns, 200_000_000);
    assert_eq!(tl.bins.width_text(), "200 ms");
    for (i, major) in [(0, true), (1, false)] {
        let old = bins_100ms(&whole.records, t0, major);
        assert!(tl.bins.series[i].len() <= report::BINS_MAX);
        for (k, n) in tl.bins.series[i].iter().enumerate() {
            let k = k as u64;
            let want = old.get(&(2 * k)).unwrap_or(&0) + old.get(&(2 * k + 1)).unwrap_or(&0);
            assert_eq!(*n, want, "bin {k}");
        }
    }
    // The command draws every chart, and compare's charts too.
    let out = dir.path().join("png");
    let (code, stdout, err) = run(&["plot", a.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(stdout.matches("wrote ").count(), 4, "{stdout}");
    let (code, stdout, err) = run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--plot",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("compare-swapins.png"), "{stdout}");
}
