use std::collections::{BTreeMap, HashMap};

use super::sim::{mult_frac, Lru, Sim};
use super::*;
use crate::trace::{OutKind, Record, SwapEntry};

pub(super) fn e(offset: u64) -> SwapEntry {
    SwapEntry { dev: 0, offset }
}

pub(super) fn out(ts: u64, offset: u64, how: OutKind) -> Record {
    Record::SwapOut {
        ts,
        tid: 1,
        mm: 1,
        vaddr: offset * 4096,
        entry: e(offset),
        nr: 1,
        how,
    }
}

/// A major read fault on `offset` that loaded its page from zswap.
pub(super) fn fault(ts: u64, offset: u64) -> Record {
    let mut f = read_fault(ts, offset, 0, false);
    if let Record::SwapFault { zswap_loads, .. } = &mut f {
        *zswap_loads = 1;
    }
    f
}

/// Defaults overridden by each `key=value`.
pub(super) fn parse(specs: &[&str]) -> Result<ZswapParams, ZswapError> {
    let mut p = ZswapParams::default();
    for s in specs {
        p.set(s)?;
    }
    Ok(p)
}

pub(super) fn params(specs: &[&str]) -> ZswapParams {
    parse(specs).expect("params")
}

pub(super) fn replay(
    input: &ZswapInput,
    policies: &[ZswapPolicy],
    p: &ZswapParams,
) -> Vec<ZswapMetrics> {
    replay_policies(input, policies, p).expect("replay")
}

fn run(records: &[Record], p: &ZswapParams) -> Vec<ZswapMetrics> {
    let input = ZswapInput::from_records(records, 4096).expect("input");
    replay(&input, &ZswapPolicy::all(), p)
}

#[test]
fn big_pool_no_writeback_all_hits() {
    // No pressure (reclaim records dropped, interval past the trace).
    let recs: Vec<Record> = synth_zswap(500, 300, 4, 64, 1)
        .into_iter()
        .filter(|r| !matches!(r, Record::Reclaim { .. }))
        .collect();
    for m in run(
        &recs,
        &params(&["pool-pages=100000", "shrinker-interval=5000"]),
    ) {
        assert_eq!(m.pressure_episodes, 0);
        assert_eq!(m.writebacks, 0, "{}", m.policy);
        assert_eq!(m.stores_rejected, 0);
        assert_eq!(m.stores_accepted, 500 + 300 * 4);
        assert_eq!(m.zswap_hits, 300 * 4);
        assert_eq!(m.disk_swapins, 0);
        assert_eq!(m.swap_ins, 1200);
        // The cold set stays: 500 pages at ratio 3.
        assert_eq!(m.end_pool_pages, 167);
        assert!(m.peak_pool_pages >= 267 && m.peak_pool_pages <= 268);
        assert_eq!(m.series.len(), 100);
        let (disk, hits) = m.series.iter().fold((0, 0), |(d, h), r| (d + r.2, h + r.3));
        assert_eq!((disk, hits), (0, 1200));
        assert!(m.series.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(m.series.last().map(|r| r.1), Some(167));
    }
}

#[test]
fn tiny_pool_rejects_and_writes_back() {
    // 60 pages stored at ratio 1 in a 20-page pool, then all faulted in.
    let mut recs: Vec<Record> = (1..=60).map(|o| out(o * 10, o, OutKind::Zswap)).collect();
    recs.extend((1..=60).map(|o| fault(1000 + o, o)));
    let m = run(&recs, &params(&["pool-pages=20", "ratio=1"]));
    let ns = &m[0];
    assert_eq!(ns.policy, "no-shrinker");
    assert_eq!(ns.accept_threshold_pages, 18);
    assert!(ns.stores_rejected > 0);
    assert!(ns.writebacks > 0);
    assert_eq!(ns.writebacks, ns.writebacks_limit);
    assert!(ns.peak_pool_pages <= 20);
    assert_eq!(ns.stores_accepted + ns.stores_rejected, 60);
    assert_eq!(ns.zswap_hits + ns.disk_swapins, 60);
    assert_eq!(
        ns.disk_swapins,
        ns.disk_swapins_written_back + ns.disk_swapins_not_stored
    );
    assert_eq!(ns.disk_swapins_written_back, ns.writebacks);
    // Hand-worked: stores 1-20 fill it; from 21 on every third store
    // finds it full, is rejected, and the worker writes back two (to 18).
    assert_eq!(ns.stores_rejected, 14);
    assert_eq!(ns.writebacks, 28);
    assert_eq!(ns.zswap_hits, 18);
    assert_eq!(ns.end_pool_pages, 0);
    // A zero-page pool rejects everything.
    let z = run(&recs, &params(&["pool-pages=0"]));
    assert!(z
        .iter()
        .all(|m| m.stores_accepted == 0 && m.disk_swapins == 60));
}

#[test]
fn second_chance_fewer_disk_swapins_and_cold_written_back() {
    let recs = synth_zswap(4000, 2000, 10, 256, 7);
    // Priority 1: an episode scans the whole count (a harder shrinker).
    let m = run(&recs, &params(&["pool-pages=1000000", "priority=1"]));
    let by = |n: &str| m.iter().find(|m| m.policy == n).expect("policy");
    let (ns, sh, sc, dt) = (
        by("no-shrinker"),
        by("shrinker"),
        by("shrinker-second-chance"),
        by("disk-swapin-tracking"),
    );
    assert_eq!(ns.writebacks, 0);
    assert!(sh.disk_swapins > 0);
    assert!(sc.disk_swapins < sh.disk_swapins, "{sc:?} {sh:?}");
    assert!(dt.disk_swapins <= sc.disk_swapins, "{dt:?} {sc:?}");
    for x in [sh, sc, dt] {
        assert_eq!(x.writebacks, x.writebacks_shrinker);
        assert!(x.pressure_episodes > 0);
        // Writebacks of pages never swapped in again: the cold set.
        let cold_wb = x.writebacks - x.disk_swapins_written_back;
        assert!(cold_wb >= 2000, "{}: {cold_wb}", x.policy);
        assert!(x.mean_pool_pages < ns.mean_pool_pages);
    }
    assert!(sc.rotations > 0 && sh.rotations == 0);
}

#[test]
fn interval_pressure_without_reclaim_records() {
    let recs: Vec<Record> = synth_zswap(3000, 0, 0, 100, 1)
        .into_iter()
        .filter(|r| !matches!(r, Record::Reclaim { .. }))
        .collect();
    let input = ZswapInput::from_records(&recs, 4096).expect("input");
    assert!(!input.has_reclaim);
    let m = replay(
        &input,
        &[ZswapPolicy::Shrinker, ZswapPolicy::NoShrinker],
        &params(&["pool-pages=100000", "shrinker-interval=500", "priority=1"]),
    );
    assert_eq!(m[0].pressure_episodes, 6);
    assert_eq!(m[0].pressure, "every 500 swap-outs");
    assert!(m[0].writebacks > 0);
    assert_eq!(m[1].pressure_episodes, 0);
    assert_eq!(m[1].writebacks, 0);
}

#[test]
fn invalidation_cache_hits_zero_and_untracked() {
    let recs = vec![
        out(1, 1, OutKind::Zswap),
        out(2, 1, OutKind::Io), // slot reused: stale entry dropped
        out(3, 2, OutKind::Zero),
        out(4, 3, OutKind::Zswap),
        Record::SwapFault {
            ts: 5,
            dur_ns: 1,
            tid: 1,
            mm: 1,
            addr: 0,
            entry: Some(e(3)),
            major: false,
            pages_read: 0,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        },
        fault(6, 2),
        fault(7, 9),
        fault(8, 1),
        Record::SwapFault {
            ts: 9,
            dur_ns: 1,
            tid: 1,
            mm: 1,
            addr: 0,
            entry: None,
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        },
    ];
    let input = ZswapInput::from_records(&recs, 0).expect("input");
    assert_eq!(input.page_size, 4096);
    assert_eq!(input.distinct_out_pages, 3);
    assert_eq!(input.live.faults_without_entry, 1);
    assert_eq!(input.live.cache_hits, 1);
    assert_eq!(input.live.disk_swapins, 1);
    for m in replay(&input, &ZswapPolicy::all(), &params(&["pool-pages=100"])) {
        assert_eq!(m.swap_outs, 4);
        assert_eq!(m.invalidated, 1);
        assert_eq!(m.zero_pages, 1);
        assert_eq!(m.stores_accepted, 3);
        assert_eq!(m.cache_hits, 1);
        assert_eq!(m.cache_hit_drops, 1);
        assert_eq!(m.zero_swapins, 1);
        assert_eq!(m.untracked_swapins, 1);
        assert_eq!(m.zswap_hits, 1);
        assert_eq!(m.end_pool_pages, 0);
    }
}

#[test]
fn multi_page_swap_out_is_one_event_per_page() {
    let recs = vec![Record::SwapOut {
        ts: 1,
        tid: 1,
        mm: 1,
        vaddr: 0,
        entry: e(100),
        nr: 4,
        how: OutKind::Zswap,
    }];
    let input = ZswapInput::from_records(&recs, 4096).expect("input");
    assert_eq!(input.events.len(), 4);
    assert_eq!(input.live.zswap_stores, 4);
    assert_eq!(input.memory_figure(), 4);
    // 20% of 4 pages: nothing fits.
    let m = replay(&input, &[ZswapPolicy::NoShrinker], &ZswapParams::default());
    assert_eq!(m[0].pool_limit_pages, 0);
    assert_eq!(m[0].stores_rejected, 4);
}

#[test]
fn shrinker_count_ports() {
    assert_eq!(mult_frac(10, 1, 3), 3);
    assert_eq!(mult_frac(7, 2, 3), 4);
    assert_eq!(mult_frac(5, 5, 0), 0);
    let mut sim = Sim {
        policy: ZswapPolicy::DiskSwapinTracking,
        ratio: 2.0,
        max_pages: 1000,
        thr_pages: 900,
        priority: 1,
        lru: Lru::new(),
        slots: HashMap::new(),
        reached_full: false,
        nr_protected: 0,
        nr_disk_swapins: 30,
        nr_deferred: 0,
        pagein: 0,
        resident: u64::MAX,
        owed: 0,
        limit_paid: 0,
        discount: 0,
        refusals: false,
        exclusive: true,
        reclaim_one: false,
        m: ZswapMetrics::default(),
    };
    assert_eq!(sim.shrinker_count(), 0);
    assert_eq!(sim.nr_disk_swapins, 30);
    for o in 0..100 {
        sim.store(e(o), OutKind::Zswap);
    }
    // (100 - 30) * 50 / 100.
    assert_eq!(sim.shrinker_count(), 35);
    assert_eq!(sim.nr_disk_swapins, 0);
    sim.nr_disk_swapins = 150;
    assert_eq!(sim.shrinker_count(), 0);
    assert_eq!(sim.nr_disk_swapins, 50);
    // Second chance: a walk over fresh entries only rotates: SHRINK_STOP.
    assert_eq!(sim.shrinker_scan(100), None);
    assert_eq!(sim.m.rotations, 100);
    assert_eq!(sim.shrinker_scan(10), Some(10));
    assert_eq!(sim.lru.len, 90);
    // 6.8 protection decays by half past a quarter of the LRU.
    sim.policy = ZswapPolicy::Shrinker;
    sim.nr_protected = 22;
    sim.store(e(500), OutKind::Zswap);
    assert_eq!(sim.nr_protected, 11);
    sim.store(e(501), OutKind::Zswap);
    assert_eq!(sim.nr_protected, 12);
    assert_eq!(sim.shrinker_count(), mult_frac(92 - 12, 46, 92));
    sim.nr_protected = 90;
    assert_eq!(sim.shrinker_scan(10), None);
}

#[test]
fn names_and_params() {
    for p in ZswapPolicy::all() {
        assert_eq!(p.name().parse::<ZswapPolicy>(), Ok(p));
        assert_eq!(p.to_string(), p.name());
    }
    assert_eq!(
        ZswapPolicy::parse_list(&[" shrinker "]),
        Ok(vec![ZswapPolicy::Shrinker])
    );
    assert_eq!(ZswapPolicy::parse_list(&[]).map(|v| v.len()), Ok(4));
    for bad in ["", "lru", "Shrinker", "shrinker-6.8"] {
        assert!(matches!(
            ZswapPolicy::from_name(bad),
            Err(ZswapError::UnknownPolicy(_))
        ));
    }
    let p = params(&[
        "pool-pages=5000",
        "ratio=2.5",
        "accept-threshold=80",
        "shrinker-interval=64",
        "priority=12",
        "buckets=10",
        "max-pool-percent=50",
    ]);
    assert_eq!(p.pool_pages, Some(5000));
    assert_eq!(p.compression_ratio, 2.5);
    assert_eq!(p.accept_threshold_percent, 80);
    assert_eq!(p.shrinker_interval, 64);
    assert_eq!(p.shrinker_priority, 12);
    assert_eq!(p.buckets, 10);
    assert_eq!(p.max_pool_percent, 50);
    assert_eq!(
        params(&["pool-pages=9", "pool-pages=auto"]).pool_pages,
        None
    );
    for bad in [
        "pool-pages",
        "pool-pages=",
        "pool-pages=-1",
        "pool-pages=1e3",
        "pool-pages=99999999999999999999999",
        "ratio=0.5",
        "ratio=nan",
        "ratio=inf",
        "ratio=x",
        "accept-threshold=101",
        "shrinker-interval=0",
        "priority=13",
        "buckets=0",
        "max-pool-percent=0",
        "colour=blue",
        "=3",
    ] {
        assert!(
            matches!(parse(&[bad]), Err(ZswapError::BadParam(..))),
            "{bad}"
        );
    }
}

#[test]
fn empty_traces_are_errors() {
    assert_eq!(
        ZswapInput::from_records(&[], 4096),
        Err(ZswapError::NothingToReplay)
    );
    // Faults alone: nothing entered the pool.
    assert_eq!(
        ZswapInput::from_records(&[fault(1, 1)], 4096),
        Err(ZswapError::NothingToReplay)
    );
    assert!(ZswapError::NothingToReplay
        .to_string()
        .contains("swap-outs"));
}

#[test]
fn determinism() {
    let recs = synth_zswap(1000, 500, 3, 128, 3);
    let input = ZswapInput::from_records(&recs, 4096).expect("input");
    let p = params(&["pool-pages=200", "buckets=20"]);
    let a = replay(&input, &ZswapPolicy::all(), &p);
    let b = replay(&input, &ZswapPolicy::all(), &p);
    assert_eq!(a, b);
    assert!(a.iter().all(|m| m.series.len() == 20));
    assert_eq!(input.live.zswap_stores, 1000 + 1500);
    assert_eq!(input.live.zswap_loads, 1500);
    assert_eq!(input.live.reclaim_episodes, (1000 / 128 + 1) + 3 * 4);
}

#[test]
fn from_loaded_memory_and_vmstat() {
    use crate::trace::{Footer, Header};
    let header = Header {
        page_size: 4096,
        mem_total_kib: 4 * 1024 * 1024,
        memory_limit_bytes: Some(1 << 30),
        vmstat_start: BTreeMap::from([("zswpin".into(), 10), ("pswpin".into(), 5)]),
        ..Header::default()
    };
    let footer = Footer {
        vmstat_end: BTreeMap::from([("zswpin".into(), 110), ("pswpin".into(), 4)]),
        ..Footer::default()
    };
    let t = Loaded {
        header,
        records: synth_zswap(10, 10, 1, 4, 1),
        footer: Some(footer),
        problems: Vec::new(),
        skipped: 0,
        chunks: Vec::new(),
    };
    let input = ZswapInput::from_loaded(&t).expect("input");
    // All 4 GiB of memory (max_pool_percent is of RAM), not the cgroup's 1 GiB.
    assert_eq!(input.memory_pages, Some(1_048_576));
    assert_eq!(
        ZswapParams::default().pool_limit_pages(&input),
        1_048_576 / 5
    );
    assert_eq!(input.live.zswpin, Some(100));
    assert_eq!(input.live.pswpin, Some(0));
    assert_eq!(input.live.zswpwb, None);
}

#[test]
fn a_panicking_policy_is_an_error_naming_it() {
    let r = par_map(&ZswapPolicy::all(), |p| {
        if p == ZswapPolicy::ShrinkerSecondChance {
            panic!("boom");
        }
        p.name()
    });
    assert_eq!(
        r,
        Err(ZswapError::PolicyPanicked(
            "shrinker-second-chance".into(),
            "boom".into()
        ))
    );
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("`shrinker-second-chance`") && e.contains("panicked"),
        "{e}"
    );
    assert_eq!(
        par_map(&ZswapPolicy::all(), |p| p.name()),
        Ok(ZSWAP_NAMES.to_vec())
    );
}

const ZSWAP_NAMES: [&str; 4] = [
    "no-shrinker",
    "shrinker",
    "shrinker-second-chance",
    "disk-swapin-tracking",
];

#[test]
fn policy_table_parses_and_keeps_the_default_set() {
    let names: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
    assert_eq!(names, ZSWAP_NAMES);
    let all: Vec<String> = ZswapPolicy::all().iter().map(|p| p.to_string()).collect();
    assert_eq!(ReplayRequest::default().names(POLICIES), all);
    let e = ZswapPolicy::from_name("lru").unwrap_err().to_string();
    assert!(
        e.ends_with("(known: no-shrinker, shrinker, shrinker-second-chance, disk-swapin-tracking)"),
        "{e}"
    );
    let e = parse(&["colour=blue"]).unwrap_err().to_string();
    assert!(e.ends_with("(keys: pool-pages, max-pool-percent, ratio, accept-threshold, shrinker-interval, priority, buckets, writebacks, refusals, limit-reclaim, loads, resident-pages)"), "{e}");
}

#[test]
fn run_takes_the_trace_settings_then_the_params() {
    use crate::trace::{Footer, Header};
    let t = Loaded {
        header: Header {
            page_size: 4096,
            zswap: BTreeMap::from([("max_pool_percent".into(), "50".into())]),
            ..Header::default()
        },
        records: synth_zswap(100, 50, 2, 16, 1),
        footer: Some(Footer::default()),
        problems: Vec::new(),
        skipped: 0,
        chunks: Vec::new(),
    };
    let r = super::run(&t, &ReplayRequest::default()).expect("replay");
    assert_eq!(r.metrics.len(), 4);
    // 50% of the 200 entries swapped out (no memory size in the header).
    assert_eq!(r.metrics[0].pool_limit_pages, 100);
    assert_eq!(r.live.zswap_stores, 100 + 2 * 50);
    let params = ["pool-pages=10".to_string()];
    let req = ReplayRequest {
        policies: Some("shrinker , no-shrinker"),
        params: &params,
        ..ReplayRequest::default()
    };
    let r = super::run(&t, &req).expect("replay");
    let names: Vec<&str> = r.metrics.iter().map(|m| m.policy.as_str()).collect();
    assert_eq!(names, ["shrinker", "no-shrinker"]);
    assert_eq!(r.metrics[0].pool_limit_pages, 10);
    let bad = ["ratio=0".to_string()];
    let req = ReplayRequest {
        params: &bad,
        ..ReplayRequest::default()
    };
    assert!(matches!(
        super::run(&t, &req),
        Err(ZswapError::BadParam(..))
    ));
}

#[test]
fn impossible_swap_outs_and_entries_are_skipped_not_expanded() {
    // The helpers' addresses are offset * 4096: set the entries afterwards.
    let at = |mut r: Record, offset: u64, pages: u32| {
        match &mut r {
            Record::SwapOut { entry, nr, .. } => {
                (entry.offset, *nr) = (offset, pages);
            }
            Record::SwapFault { entry, .. } => *entry = Some(e(offset)),
            _ => {}
        }
        r
    };
    let recs = [
        at(out(1, 1, OutKind::Zswap), u64::MAX - 5, u32::MAX),
        at(
            out(2, 2, OutKind::Zswap),
            (1 << SwapEntry::OFFSET_BITS) - 1,
            2,
        ),
        out(3, 7, OutKind::Zswap),
        at(fault(4, 4), u64::MAX, 0),
        fault(5, 7),
    ];
    let input = ZswapInput::from_records(&recs, 4096).expect("input");
    assert_eq!(input.bad_records, 3);
    assert_eq!(input.events.len(), 2);
    assert_eq!(input.live.swap_outs, 1);
    assert_eq!(input.distinct_out_pages, 1);
}

/// A major fault on `offset` that read `pages_read` pages from disk.
pub(super) fn read_fault(ts: u64, offset: u64, pages_read: u32, write: bool) -> Record {
    Record::SwapFault {
        ts,
        dur_ns: 1000,
        tid: 1,
        mm: 1,
        addr: offset * 4096,
        entry: Some(e(offset)),
        major: true,
        pages_read,
        zero_reads: 0,
        zswap_loads: 0,
        write,
    }
}

#[test]
fn a_page_read_from_disk_keeps_its_slot_until_a_write_fault() {
    // pool-pages=0: every store is refused, every page is on disk.
    let recs = [
        out(1, 10, OutKind::Io),
        read_fault(2, 10, 1, false),
        // No swap-out between: reclaim dropped it clean, the slot kept it.
        read_fault(3, 10, 1, false),
        read_fault(4, 10, 1, true),
        // The write fault freed the slot: this entry is not the model's.
        read_fault(5, 10, 1, false),
    ];
    for m in run(&recs, &params(&["pool-pages=0"])) {
        assert_eq!(m.disk_swapins, 3, "{}", m.policy);
        assert_eq!(m.disk_swapins_not_stored, 1);
        assert_eq!(m.disk_swapins_reread, 2);
        assert_eq!(m.untracked_swapins, 1);
    }
    // Readahead reads a page kept on disk again only once it was dropped:
    // after `resident-pages` more pages came in.
    let recs = [
        out(1, 20, OutKind::Io),
        out(1, 21, OutKind::Io),
        out(1, 30, OutKind::Io),
        // Window 2: 20 and 21 from disk.
        read_fault(2, 20, 2, true),
        read_fault(3, 30, 1, true),
        // 21 again, as the readahead of a fault on 20 (swapped out anew).
        out(4, 20, OutKind::Io),
        read_fault(5, 20, 2, true),
    ];
    let reads = |resident: &str| {
        let m = &run(&recs, &params(&["pool-pages=0", resident]))[3];
        (m.disk_swapins, m.disk_swapins_reread)
    };
    // 21 read at page-in 2, two pages in since (30, then 20).
    assert_eq!(reads("resident-pages=1"), (5, 1));
    assert_eq!(reads("resident-pages=2"), (4, 0));
}

/// With the kernel's frees recorded, a page read from disk stays in memory
/// until its `out_freed`, whatever the page count: readahead reads it again
/// only after.
#[test]
fn a_page_read_from_disk_is_read_again_only_once_the_kernel_freed_it() {
    let freed = |ts: u64, offset: u64| Record::OutFreed {
        ts,
        entry: e(offset),
        nr: 1,
    };
    let recs = |free_21: bool| {
        let mut v = vec![
            out(1, 20, OutKind::Io),
            out(1, 21, OutKind::Io),
            freed(1, 20),
            freed(1, 21),
            // Window 2: 20 and 21 from disk; 21 kept in memory.
            read_fault(2, 20, 2, true),
            out(4, 20, OutKind::Io),
            freed(4, 20),
        ];
        if free_21 {
            v.push(freed(4, 21));
        }
        // 21 again as readahead, if the kernel freed it.
        v.push(read_fault(5, 20, 2, true));
        v
    };
    let reads = |r: &[Record]| {
        let input = ZswapInput::from_records(r, 4096).expect("input");
        assert_eq!(input.resident_pages, None, "no estimate: the frees tell");
        let m = &run(r, &params(&["pool-pages=0"]))[3];
        (m.disk_swapins, m.disk_swapins_reread)
    };
    assert_eq!(reads(&recs(true)), (4, 1));
    assert_eq!(reads(&recs(false)), (3, 0));
}

#[test]
fn residency_is_the_median_from_a_swap_in_to_the_next_swap_out() {
    let mut recs = vec![out(1, 10, OutKind::Io), read_fault(2, 10, 1, false)];
    for o in 11..14 {
        recs.push(out(3, o, OutKind::Io));
        recs.push(read_fault(4, o, 1, false));
    }
    // Three pages came in after 10's; 11 and 12 follow, 1 page apart.
    recs.push(out(5, 10, OutKind::Io));
    recs.push(out(5, 11, OutKind::Io));
    recs.push(out(5, 12, OutKind::Io));
    let input = ZswapInput::from_records(&recs, 4096).expect("input");
    // Distances 3, 2, 1: the median is 2.
    assert_eq!(input.resident_pages, Some(2));
    let input = ZswapInput::from_records(&recs[..2], 4096).expect("input");
    assert_eq!(input.resident_pages, None);
}

#[test]
fn vma_readahead_reads_the_neighbouring_addresses_not_offsets() {
    let at = |ts: u64, offset: u64, vpage: u64| Record::SwapOut {
        ts,
        tid: 1,
        mm: 1,
        vaddr: vpage * 4096,
        entry: e(offset),
        nr: 1,
        how: OutKind::Io,
    };
    let recs = [
        at(1, 100, 5),
        at(1, 7, 6),
        at(1, 55, 4),
        at(1, 101, 9),
        Record::SwapFault {
            ts: 2,
            dur_ns: 1,
            tid: 1,
            mm: 1,
            addr: 5 * 4096,
            entry: Some(e(100)),
            major: true,
            pages_read: 4,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        },
    ];
    let vma = ZswapInput::read_ahead_by(&recs, 4096, true, false).expect("input");
    // swap_vma_ra_win(): window 4 around page 5 is pages 4..8.
    let ahead: Vec<u64> = vma
        .events
        .iter()
        .filter_map(|ev| match ev {
            ZswapEvent::Ahead { entry, .. } => Some(entry.offset),
            _ => None,
        })
        .collect();
    assert_eq!(ahead, [55, 7]);
    let p = params(&["pool-pages=0"]);
    assert_eq!(
        replay(&vma, &[ZswapPolicy::NoShrinker], &p)[0].disk_swapins,
        3
    );
    // By offset: 100..104 holds only the fault's own page (and 101).
    let cluster = ZswapInput::read_ahead_by(&recs, 4096, false, false).expect("input");
    assert_eq!(
        replay(&cluster, &[ZswapPolicy::NoShrinker], &p)[0].disk_swapins,
        2
    );
}
