use std::collections::BTreeMap;

use super::synth::{ST_LACK_REFERENCED, ST_PAGE_LOCKED, ST_SUCCEEDED};
use super::*;
use crate::trace::{Header, Record};

fn input(s: &KhpSynth) -> KhpInput {
    KhpInput::from_records(&synth_khugepaged(s), &s.header()).expect("scans")
}

fn run(input: &KhpInput, names: &[&str], params: &[&str]) -> Vec<KhpMetrics> {
    let pols = KhpPolicy::parse_list(names).expect("policies");
    replay_khugepaged(input, &pols, &KhpParams::parse(params).expect("params"))
}

fn scan(ts: u64, referenced: u32, unmapped: u32, status: i32) -> Record {
    scan_of(0, ts, referenced, unmapped, status)
}

/// A scan of the PMD at `pmd` (0: unnamed).
fn scan_of(pmd: u64, ts: u64, referenced: u32, unmapped: u32, status: i32) -> Record {
    Record::KhugepagedScan {
        ts,
        tid: 5,
        mm: 1,
        referenced,
        none_or_zero: 0,
        unmapped,
        status,
        pmd,
    }
}

fn swapin(ts: u64, pages: u32) -> Record {
    Record::KhugepagedSwapin {
        ts,
        tid: 5,
        mm: 1,
        swapped_in: pages,
        referenced: 400,
        ret: 0,
    }
}

fn stall(ts: u64, memcg: bool) -> Record {
    Record::Reclaim {
        ts,
        tid: 9,
        begin: true,
        memcg,
        nr_reclaimed: 0,
    }
}

const MS: u64 = NS_PER_MS;

#[test]
fn always_swaps_in_everything_under_the_limit() {
    let s = KhpSynth::default();
    let inp = input(&s);
    let m = &run(&inp, &["always"], &[])[0];
    let eligible: Vec<&KhpScan> = inp
        .scans
        .iter()
        .filter(|x| {
            x.unmapped > 0 && x.unmapped <= 64 && x.referenced > 0 && x.class != ScanClass::Other
        })
        .collect();
    assert!(eligible.len() > 20);
    assert_eq!(m.swapins, eligible.len() as u64);
    assert_eq!(
        m.pages_in,
        eligible.iter().map(|x| x.unmapped as u64).sum::<u64>()
    );
    assert_eq!(m.max_ptes_swap, 64);
    assert_eq!(m.refused_pressure, 0);
    assert_eq!(m.truncated_swapins, 0);
    assert_eq!(m.attempts, inp.scans.len() as u64);
    assert_eq!(
        m.swap_attempts,
        inp.scans.iter().filter(|x| x.unmapped > 0).count() as u64
    );
    assert!(m.refused_limit > 0);
    assert_eq!(
        m.swapins + m.refused_limit + m.refused_referenced + m.refused_pressure,
        m.swap_attempts
            - inp
                .scans
                .iter()
                .filter(|x| x.unmapped > 0 && x.class == ScanClass::Other)
                .count() as u64
    );
    assert_eq!(m.huge_bytes, m.collapses * 2 * 1024 * 1024);
    assert!(
        (m.io_ms - (m.pages_in as f64 * 30.0 + m.swapins as f64 * 100.0) / 1000.0).abs() < 1e-9
    );
}

#[test]
fn referenced_half_refuses_few_young_ptes() {
    let recs = [
        scan(10, 255, 10, ST_LACK_REFERENCED),
        scan(20, 256, 10, ST_SUCCEEDED),
        scan(30, 100, 0, ST_SUCCEEDED),
        scan(40, 0, 0, ST_LACK_REFERENCED),
        scan(50, 1, 64, ST_LACK_REFERENCED),
    ];
    let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
    let m = run(&inp, &["referenced-half", "always"], &[]);
    assert_eq!((m[0].swapins, m[0].pages_in), (1, 10));
    assert_eq!(m[0].refused_referenced, 2);
    assert_eq!(m[0].collapses, 2);
    assert_eq!((m[1].swapins, m[1].pages_in), (3, 84));
    assert_eq!(m[1].collapses, 4);

    let inp = input(&KhpSynth::default());
    let m = run(&inp, &["referenced-half", "always"], &[]);
    assert!(m[0].swapins < m[1].swapins);
    // The synthetic kernel is 6.18: referenced-half is what it did.
    assert_eq!(m[0].swapins, inp.kernel.swapins);
    assert_eq!(m[0].pages_in, inp.kernel.swapin_pages);
    assert_eq!(m[0].collapses, inp.kernel.collapses_succeeded);
}

#[test]
fn a_swap_in_whose_collapse_fails_is_a_swap_in_without_a_collapse() {
    let s = KhpSynth {
        locked_one_in: 3,
        phases: 6,
        ..KhpSynth::default()
    };
    let inp = input(&s);
    let failed = inp
        .scans
        .iter()
        .filter(|x| x.class == ScanClass::SwapinFailed)
        .count() as u64;
    let locked_before = inp
        .scans
        .iter()
        .filter(|x| x.status == ST_PAGE_LOCKED && x.swapped_in.is_none())
        .count();
    assert!(failed > 3 && locked_before > 3, "{failed} {locked_before}");
    assert_eq!(inp.kernel.failed_after_swapin, failed);
    let m = run(&inp, &["referenced-half", "max-ptes-swap:0", "always"], &[]);
    // The kernel's own policy: every swap-in, the failed ones too.
    assert_eq!(m[0].swapins, inp.kernel.swapins);
    assert_eq!(m[0].pages_in, inp.kernel.swapin_pages);
    assert_eq!(m[0].collapses, inp.kernel.collapses_succeeded);
    assert_eq!(m[0].failed_after_swapin, failed);
    // No swap-in: nothing fails after one, and no swap PTE collapses.
    assert_eq!((m[1].swapins, m[1].failed_after_swapin), (0, 0));
    assert!(m[1].collapses < m[0].collapses);
    // A looser policy swaps in at least as much and fails as often.
    assert!(m[2].swapins > m[0].swapins);
    assert_eq!(m[2].failed_after_swapin, failed);
    // A scan that failed page_locked before any swap-in reads nothing.
    let recs = [
        scan(10, 300, 10, ST_PAGE_LOCKED),
        Record::KhugepagedSwapin {
            ts: 15,
            tid: 5,
            mm: 1,
            swapped_in: 7,
            referenced: 300,
            ret: 0,
        },
        scan(20, 300, 10, ST_PAGE_LOCKED),
        // Another task's swap-in is not this scan's.
        Record::KhugepagedSwapin {
            ts: 25,
            tid: 6,
            mm: 1,
            swapped_in: 4,
            referenced: 300,
            ret: 0,
        },
        scan(30, 300, 3, ST_SUCCEEDED),
    ];
    let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
    let classes: Vec<_> = inp.scans.iter().map(|x| x.class).collect();
    assert_eq!(
        classes,
        [
            ScanClass::Other,
            ScanClass::SwapinFailed,
            ScanClass::Succeeded
        ]
    );
    let m = &run(&inp, &["referenced-half"], &[])[0];
    assert_eq!((m.swapins, m.pages_in, m.collapses), (2, 10, 1));
}

#[test]
fn per_pmd_swaps_in_more_than_at_sleep_when_stalls_fall_in_sleeps() {
    let s = KhpSynth::default();
    let inp = input(&s);
    assert_eq!(inp.sleeps.len() as u32, s.phases * s.passes_per_phase - 1);
    let m = run(
        &inp,
        &["always", "allocstall-per-pmd", "allocstall-at-sleep"],
        &[],
    );
    let (a, pmd, sleep) = (&m[0], &m[1], &m[2]);
    assert!(pmd.swapins > sleep.swapins, "{pmd:?} {sleep:?}");
    assert!(sleep.refused_pressure > pmd.refused_pressure);
    // Per PMD, only the first scan of a pass can see the stall.
    assert!(pmd.refused_pressure <= (s.phases / 2 * s.passes_per_phase) as u64);
    for x in [pmd, sleep] {
        assert_eq!(x.swapins + x.refused_pressure, a.swapins);
    }
    // No stall at all: both as `always`.
    let calm = input(&KhpSynth {
        stalls_in_sleeps: false,
        ..KhpSynth::default()
    });
    let m = run(
        &calm,
        &["always", "allocstall-per-pmd", "allocstall-at-sleep"],
        &[],
    );
    assert_eq!(m[1].swapins, m[0].swapins);
    assert_eq!(m[2].swapins, m[0].swapins);
    // A gap threshold above the sleeps: no sleep seen, at-sleep refuses all after the first stall.
    let m = run(&inp, &["allocstall-at-sleep"], &["sleep-gap-ms=60000"]);
    assert!(m[0].swapins < sleep.swapins);
}

#[test]
fn dense_stalls_leave_no_swapin_under_pressure() {
    let s = KhpSynth {
        stalls_in_sleeps: false,
        stall_period_us: 2000,
        ..KhpSynth::default()
    };
    let inp = input(&s);
    let m = run(
        &inp,
        &["always", "allocstall-per-pmd", "allocstall-at-sleep"],
        &[],
    );
    assert!(m[0].pages_under_pressure > 0);
    for x in &m[1..] {
        assert_eq!(x.pages_under_pressure, 0, "{}", x.policy);
        assert_eq!(x.swapins_under_pressure, 0, "{}", x.policy);
        assert_eq!(x.swapins + x.refused_pressure, m[0].swapins);
        assert_eq!(x.refused_pressure, m[0].swapins_under_pressure);
    }
    // The same stalls as memcg reclaim: ignored with pressure=direct.
    let inp = input(&KhpSynth { memcg: true, ..s });
    let any = run(&inp, &["always", "allocstall-at-sleep"], &[]);
    let direct = run(
        &inp,
        &["always", "allocstall-at-sleep"],
        &["pressure=direct"],
    );
    assert!(any[1].swapins < any[0].swapins);
    assert_eq!(direct[1].swapins, direct[0].swapins);
    assert_eq!(direct[0].pages_under_pressure, 0);
}

#[test]
fn per_pmd_window_starts_at_previous_scan() {
    let recs = [
        scan(100 * MS, 300, 8, ST_SUCCEEDED),
        stall(101 * MS, false),
        scan(102 * MS, 300, 8, ST_SUCCEEDED),
        scan(104 * MS, 300, 8, ST_SUCCEEDED),
        // A sleep (gap > 5 s), with a stall inside it.
        stall(3000 * MS, false),
        scan(10_104 * MS, 300, 8, ST_SUCCEEDED),
        scan(10_106 * MS, 300, 8, ST_SUCCEEDED),
    ];
    let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
    assert_eq!(inp.sleeps.len(), 1);
    assert_eq!(inp.sleeps[0].start, 104 * MS);
    let m = run(&inp, &["allocstall-per-pmd", "allocstall-at-sleep"], &[]);
    // Per PMD: scans 2 and 4 refused; at sleep: all but the first.
    assert_eq!(m[0].swapins, 3);
    assert_eq!(m[1].swapins, 1);
    let m = run(&inp, &["always"], &["pressure-window-ms=5"]);
    assert_eq!(m[0].swapins_under_pressure, 2);
}

#[test]
fn max_ptes_swap_n() {
    let inp = input(&KhpSynth::default());
    let m = run(
        &inp,
        &["max-ptes-swap:0", "max-ptes-swap:512", "always"],
        &[],
    );
    assert_eq!((m[0].swapins, m[0].pages_in), (0, 0));
    assert_eq!(m[0].max_ptes_swap, 0);
    assert_eq!(m[0].refused_referenced, 0);
    assert!(m[0].refused_limit > 0);
    assert!(m[0].collapses > 0);
    assert!(m[1].swapins > m[2].swapins);
    assert!(m[1].truncated_swapins > 0);
    assert_eq!(m[1].swapins, m[2].swapins + m[1].truncated_swapins);
}

#[test]
fn status_names_come_from_the_header() {
    let h = Header {
        thp_scan_status: BTreeMap::from([
            (0, "failed".to_string()),
            (3, "succeeded".to_string()),
            (9, "exceed_swap_pte".to_string()),
            (4, "no_referenced_page".to_string()),
        ]),
        thp: BTreeMap::from([("khugepaged/max_ptes_swap".to_string(), "100".to_string())]),
        ..Header::default()
    };
    let recs = [
        scan(10, 300, 80, 9),
        scan(20, 300, 0, 3),
        scan(30, 300, 10, 6),
        scan(40, 10, 10, 4),
    ];
    let inp = KhpInput::from_records(&recs, &h).expect("scans");
    assert_eq!(inp.max_ptes_swap, 100);
    assert_eq!(inp.status_name(9), "exceed_swap_pte");
    assert_eq!(inp.status_name(6), "status_6");
    let m = run(&inp, &["always"], &[]);
    // 9 → exceed_swap_pte (80 <= 100), 4 → no_referenced_page, 6 unknown → blocked.
    assert_eq!((m[0].swapins, m[0].pages_in), (2, 90));
    assert_eq!(m[0].blocked, 1);
    assert_eq!(m[0].collapses, 3);
    // Without the map, 6.18's: 9 is pte_uffd_wp, 6 exceed_swap_pte.
    let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
    assert_eq!(inp.max_ptes_swap, 64);
    let m = run(&inp, &["always"], &[]);
    assert_eq!((m[0].swapins, m[0].pages_in), (1, 10));
    assert_eq!(m[0].blocked, 3);
    assert!(inp.notes.iter().any(|n| n.contains("6.18")));
    let live = KhpLive::from_input(&inp, &KhpParams::default());
    assert_eq!(live.scans_by_status.get("pte_uffd_wp"), Some(&1));
    assert_eq!(live.scans_by_status.get("page_pmd_mapped"), Some(&1));
}

#[test]
fn junk_policies_and_params_are_rejected() {
    for bad in ["", "fifo", "Always", "max-ptes-swap", "referenced"] {
        assert!(
            matches!(KhpPolicy::from_name(bad), Err(KhpError::UnknownPolicy(_))),
            "{bad}"
        );
    }
    for bad in [
        "max-ptes-swap:",
        "max-ptes-swap:513",
        "max-ptes-swap:-1",
        "max-ptes-swap:+1",
        "max-ptes-swap:x",
        "max-ptes-swap:99999999999",
    ] {
        assert_eq!(
            KhpPolicy::from_name(bad),
            Err(KhpError::BadPolicyParam(bad.into())),
            "{bad}"
        );
    }
    assert_eq!(
        KhpPolicy::from_name("max-ptes-swap:512"),
        Ok(KhpPolicy::MaxPtesSwap(512))
    );
    for p in KhpPolicy::defaults()
        .into_iter()
        .chain([KhpPolicy::MaxPtesSwap(0)])
    {
        assert_eq!(p.name().parse::<KhpPolicy>(), Ok(p));
    }
    assert_eq!(KhpPolicy::parse_list(&[]), Ok(KhpPolicy::defaults()));
    for bad in [
        "pressure=some",
        "pressure",
        "page-us=-1",
        "page-us=nan",
        "request-us=inf",
        "pressure-window-ms=x",
        "pressure-window-ms=-5",
        "pressure-window-ms=1e3",
        "sleep-gap-ms=soon",
        "max-ptes-swap=513",
        "max-ptes-swap=x",
        "foo=1",
        "",
    ] {
        assert!(
            matches!(KhpParams::parse(&[bad]), Err(KhpError::BadParam(..))),
            "{bad}"
        );
    }
    let p = KhpParams::parse(&[
        "pressure=direct",
        "pressure-window-ms=0",
        "page-us=2.5",
        "request-us=0",
        "sleep-gap-ms=7",
    ])
    .expect("params");
    assert_eq!(p.pressure, PressureSignal::Direct);
    assert_eq!(
        (p.pressure_window_ms, p.page_us, p.request_us),
        (0, 2.5, 0.0)
    );
    assert_eq!(p.sleep_gap_ms, Some(7));
    let p = KhpParams::parse(&["sleep-gap-ms=7", "sleep-gap-ms=auto"]).expect("params");
    assert_eq!(p.sleep_gap_ms, None);
}

#[test]
fn no_scans_is_an_error() {
    let recs = [
        stall(5, false),
        Record::KhugepagedSwapin {
            ts: 1,
            tid: 1,
            mm: 1,
            swapped_in: 3,
            referenced: 9,
            ret: 1,
        },
    ];
    let e = KhpInput::from_records(&recs, &Header::default()).unwrap_err();
    assert_eq!(e, KhpError::NoScans);
    assert!(e.to_string().contains("mm_khugepaged_scan_pmd"));
    assert_eq!(
        KhpInput::from_records(&[], &Header::default()),
        Err(KhpError::NoScans)
    );
}

#[test]
fn bad_header_values_fall_back() {
    let h = Header {
        thp: BTreeMap::from([
            ("khugepaged/max_ptes_swap".to_string(), "lots".to_string()),
            (
                "khugepaged/scan_sleep_millisecs".to_string(),
                "0".to_string(),
            ),
        ]),
        ..Header::default()
    };
    let inp = KhpInput::from_records(&[scan(1, 1, 1, 1), scan(2, 1, 1, 1)], &h).expect("scans");
    assert_eq!(inp.max_ptes_swap, 64);
    assert_eq!(inp.scan_sleep_ms, 0);
    assert_eq!(inp.sleeps.len(), 1);
    assert!(inp.notes.iter().any(|n| n.contains("lots")));
}

#[test]
fn live_side() {
    let s = KhpSynth {
        stall_period_us: 2000,
        ..KhpSynth::default()
    };
    let inp = input(&s);
    let params = KhpParams::default();
    let live = KhpLive::from_input(&inp, &params);
    assert_eq!(live.scans, inp.scans.len() as u64);
    assert_eq!(live.tasks, 1);
    assert!(live.kernel.swapins > 0);
    assert_eq!(live.kernel.swapins, live.kernel.swapin_records);
    assert!(live.pages_under_pressure > 0);
    assert_eq!(live.stalls_memcg, 0);
    assert!(live.stalls_direct > 0);
    assert_eq!(live.sleep_gap_ms, 5000.0);
    assert_eq!(
        live.scans_by_status.values().sum::<u64>(),
        inp.scans.len() as u64
    );
    assert!(live.scans_by_status.contains_key("lack_referenced_page"));
}

fn loaded(records: Vec<Record>, header: Header) -> Loaded {
    Loaded {
        header,
        records,
        footer: None,
        problems: Vec::new(),
        skipped: 0,
        chunks: Vec::new(),
    }
}

#[test]
fn policy_table_parses_and_keeps_the_default_set() {
    for p in POLICIES.iter().filter(|p| !p.name.ends_with(":N")) {
        assert_eq!(
            KhpPolicy::from_name(p.name).map(|x| x.name()),
            Ok(p.name.into())
        );
    }
    // `all`: the four kernel rules and the swap PTE limit alone at 512.
    let mut all: Vec<String> = KhpPolicy::defaults().iter().map(|p| p.name()).collect();
    all.push("max-ptes-swap:512".into());
    assert_eq!(ReplayRequest::default().names(POLICIES), all);
    let e = KhpPolicy::from_name("fifo").unwrap_err().to_string();
    assert!(
        e.contains("referenced-half, max-ptes-swap:512, max-ptes-swap:N)"),
        "{e}"
    );
    let e = KhpParams::parse(&["foo=1"]).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "unknown key (keys: pressure, pressure-window-ms, page-us, request-us, max-ptes-swap, \
             sleep-gap-ms)"
        ),
        "{e}"
    );
}

#[test]
fn run_parses_params_and_policies() {
    let s = KhpSynth::default();
    let t = loaded(synth_khugepaged(&s), s.header());
    let r = super::run(&t, &ReplayRequest::default()).expect("replay");
    let names: Vec<&str> = r.metrics.iter().map(|m| m.policy.as_str()).collect();
    assert_eq!(
        names,
        [
            "always",
            "allocstall-per-pmd",
            "allocstall-at-sleep",
            "referenced-half",
            "max-ptes-swap:512"
        ]
    );
    assert!(r.footprint.is_empty());
    let params = ["pressure=direct".to_string()];
    let req = ReplayRequest {
        policies: Some("max-ptes-swap:0,always"),
        params: &params,
        ..ReplayRequest::default()
    };
    let r = super::run(&t, &req).expect("replay");
    assert_eq!(r.metrics.len(), 2);
    assert_eq!(r.metrics[0].max_ptes_swap, 0);
    assert_eq!(r.live.params.pressure, PressureSignal::Direct);
    let bad = ["pressure=some".to_string()];
    let req = ReplayRequest {
        params: &bad,
        ..ReplayRequest::default()
    };
    assert!(matches!(super::run(&t, &req), Err(KhpError::BadParam(..))));
    assert_eq!(
        super::run(
            &loaded(Vec::new(), Header::default()),
            &ReplayRequest::default()
        ),
        Err(KhpError::NoScans)
    );
}

/// The streamed run holds only what it reads and replays as the whole
/// trace does; past its record limit it refuses, naming the limit.
#[test]
fn run_stream_replays_as_the_whole_trace_and_refuses_past_its_limit() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/khugepaged.swt");
    let whole = crate::trace::read_trace(&path).expect("trace");
    let req = ReplayRequest {
        policies: Some("all"),
        params: &[],
        memory_pages: None,
        device: None,
    };
    let open = || TraceStream::open(&path).expect("trace");
    let (t, r) = run_stream(open(), &req, RECORDS_MAX, |_| {});
    assert!(t.records.len() < whole.records.len());
    assert!(t.records.iter().all(reads));
    assert_eq!(t.footer, whole.footer);
    assert_eq!(
        r.expect("replay"),
        super::run(&whole, &req).expect("replay")
    );
    let n = t.records.len();
    let (t, r) = run_stream(open(), &req, n - 1, |_| {});
    assert!(matches!(r, Err(KhpError::TooManyRecords(m)) if m == n - 1));
    assert!(t.records.is_empty());
    assert_eq!(t.footer, whole.footer);
}

/// Scans that name their PMD: a PMD a policy collapsed where the kernel
/// did not is not scanned again by that policy's khugepaged, and retries
/// of one PMD count once in `swapin_pmds`. Recorded at max_ptes_swap 64.
#[test]
fn a_pmd_collapsed_ahead_of_the_kernel_is_not_scanned_again() {
    const ST_EXCEED_SWAP: i32 = 6;
    let (a, b, d, e) = (0x20_0000, 0x40_0000, 0x60_0000, 0x80_0000);
    let recs = vec![
        // A: 65 swap PTEs seen, refused at the kernel's 64, three times.
        scan_of(a, 10, 400, 65, ST_EXCEED_SWAP),
        swapin(15, 20),
        scan_of(b, 20, 400, 20, ST_SUCCEEDED),
        scan_of(a, 30, 400, 65, ST_EXCEED_SWAP),
        scan_of(a, 40, 400, 65, ST_EXCEED_SWAP),
        // Two refused scans that name no PMD.
        scan_of(0, 50, 400, 65, ST_EXCEED_SWAP),
        scan_of(0, 60, 400, 65, ST_EXCEED_SWAP),
        // D: swapped in, collapse failed (a page locked), retried.
        swapin(65, 10),
        scan_of(d, 70, 400, 10, ST_PAGE_LOCKED),
        swapin(75, 2),
        scan_of(d, 80, 400, 2, ST_SUCCEEDED),
        // E: too few young PTEs for the kernel, later collapsed by it,
        // then (split again) scanned and collapsed with no swap PTE.
        scan_of(e, 90, 100, 10, ST_LACK_REFERENCED),
        swapin(95, 10),
        scan_of(e, 100, 300, 10, ST_SUCCEEDED),
        scan_of(e, 110, 300, 0, ST_SUCCEEDED),
    ];
    let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
    assert_eq!(inp.kernel.swapins, 4);
    // B, D (twice) and E.
    assert_eq!(inp.kernel.swapin_pmds, 3);
    let m = run(
        &inp,
        &["max-ptes-swap:511", "referenced-half", "always"],
        &[],
    );
    // 511 (the limit alone, any young PTE): A once (its two rescans
    // skipped), B, the two unnamed scans, D twice (its first collapse
    // failed as the kernel's did), E at its first scan (the kernel's
    // collapse of E skipped, the scan after it replayed).
    assert_eq!(m[0].rescans_skipped, 3);
    assert_eq!(m[0].swapins, 7);
    assert_eq!(m[0].swapin_pmds, 6);
    assert_eq!(m[0].pages_in, 65 + 20 + 65 + 65 + 10 + 2 + 10);
    assert_eq!(m[0].truncated_swapins, 3);
    assert_eq!(m[0].failed_after_swapin, 1);
    assert_eq!(m[0].collapses, 7);
    assert_eq!(m[0].attempts, inp.scans.len() as u64 - 3);
    // The kernel's rule decides as the kernel did: nothing skipped.
    assert_eq!(m[1].rescans_skipped, 0);
    assert_eq!(m[1].refused_limit, 5);
    assert_eq!(m[1].refused_referenced, 1);
    assert_eq!((m[1].swapins, m[1].swapin_pmds, m[1].collapses), (4, 3, 4));
    // always collapses E at its first scan: the kernel's collapse of E is
    // skipped, and E's scan after that (both huge, then split) replayed.
    assert_eq!(m[2].rescans_skipped, 1);
    assert_eq!(m[2].refused_limit, 5);
    assert_eq!((m[2].swapins, m[2].swapin_pmds), (4, 3));
    assert_eq!(m[2].collapses, 4);
}

/// The swap PTEs of a PMD the kernel stopped counting at its limit come
/// from the trace's swap-outs, faults and zaps.
#[test]
fn swap_ptes_are_followed_through_the_trace() {
    use crate::trace::{OutKind, SwapEntry};
    const ST_EXCEED_SWAP: i32 = 6;
    let (a, b) = (0x20_0000u64, 0x40_0000u64);
    let out = |ts: u64, vaddr: u64, nr: u32| Record::SwapOut {
        ts,
        tid: 9,
        mm: 1,
        vaddr,
        entry: SwapEntry { dev: 0, offset: ts },
        nr,
        how: OutKind::Io,
    };
    // 100 pages of A out; one faulted back, ten zapped.
    let mut recs: Vec<Record> = (0..100).map(|i| out(1 + i, a + i * 4096, 1)).collect();
    recs.push(Record::major_fault(200, 1, a + 3 * 4096));
    recs.push(Record::Zapped {
        ts: 210,
        mm: 1,
        start: a + 10 * 4096,
        end: a + 20 * 4096,
    });
    // B out whole (a huge folio).
    recs.push(out(220, b, 512));
    recs.push(scan_of(a, 300, 400, 65, ST_EXCEED_SWAP));
    recs.push(scan_of(b, 310, 0, 65, ST_EXCEED_SWAP));
    // The kernel swaps A in for a scan: none left after it.
    recs.push(swapin(390, 60));
    recs.push(scan_of(a, 400, 400, 60, ST_PAGE_LOCKED));
    recs.push(scan_of(a, 500, 400, 0, ST_SUCCEEDED));
    let inp = KhpInput::from_records(&recs, &Header::default()).expect("scans");
    let ptes: Vec<Option<u32>> = inp
        .scans
        .iter()
        .map(|s| s.swap_ptes.map(|t| t.swap_ptes))
        .collect();
    assert_eq!(ptes, [Some(89), Some(512), Some(89), Some(0)]);
    // A's first scan stopped at its 65th swapped-out PTE: pages 0..=99
    // less 3 and 10..20, so page 75; B's at its 65th page.
    let stops: Vec<Option<u32>> = inp
        .scans
        .iter()
        .map(|s| s.swap_ptes.and_then(|t| t.stop))
        .collect();
    assert_eq!(&stops[..2], [Some(75), Some(64)]);
    // Young PTEs of A's whole PMD: 400 of the 76 seen less 65 swapped (11
    // present, capped at 11 young: all), so all of the 512 - 76 - 24
    // present past the stop: 400 + 412.
    assert_eq!(inp.scans[0].referenced_whole(), 400 + 412);
    // At 511, A's first scan reads 89 pages, not the 65 the kernel saw,
    // and A's later scans are skipped; B's 512 are over the limit.
    let m = &run(&inp, &["max-ptes-swap:511"], &[])[0];
    assert_eq!((m.refused_limit, m.refused_referenced), (1, 0));
    assert_eq!((m.swapins, m.pages_in, m.rescans_skipped), (1, 89, 2));
    // At 512 B passes the limit, and has no young PTE.
    let m = &run(&inp, &["max-ptes-swap:512"], &[])[0];
    assert_eq!((m.refused_limit, m.refused_referenced), (0, 1));
    // At 32 every scan with swap PTEs is refused, and A's last too: the
    // kernel swapped A in, this policy did not, so A keeps its 60.
    let m = &run(&inp, &["max-ptes-swap:32"], &[])[0];
    assert_eq!((m.refused_limit, m.swapins, m.collapses), (4, 0, 0));
    // The kernel's rule at another limit: A's 89 pass at 100, B's 512 not.
    let m = &run(&inp, &["referenced-half"], &["max-ptes-swap=100"])[0];
    assert_eq!((m.max_ptes_swap, m.refused_limit), (100, 1));
    assert_eq!((m.swapins, m.pages_in, m.rescans_skipped), (1, 89, 2));
}
